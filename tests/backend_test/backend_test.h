/*
 * backend_test.h - the test backend (backend_test.c), for the generic backend tests.
 */
#ifndef KFT_BACKEND_TEST_H
#define KFT_BACKEND_TEST_H

#include "backend/registry.h"

kf_backend *
kft_backend_test(void); /* "test": C under another name (.tc); tests/test_backend.c registers it */

#endif
