#include "kft.h"
void kft_register_check(void) {}
