#include "kft.h"
void kft_register_corpus(void) {}
