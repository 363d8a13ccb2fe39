#include "kft.h"
void kft_register_cli(void) {}
