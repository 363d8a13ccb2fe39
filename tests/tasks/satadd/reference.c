#include <stdint.h>
void satadd(const int32_t *a, const int32_t *b, int32_t *c, int64_t n) {
    for (int64_t i = 0; i < n; i++) {
        int64_t s = (int64_t)a[i] + b[i];
        c[i] = s > INT32_MAX ? INT32_MAX : s < INT32_MIN ? INT32_MIN : (int32_t)s;
    }
}
