#include "kft.h"
void kft_register_unit(void) {}
