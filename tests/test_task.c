#include "kft.h"
void kft_register_task(void) {}
