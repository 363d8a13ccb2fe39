/* kforge-test: task=tests/tasks/satadd expect=accepted */
/* From a red-team pass: a saturating add legitimately returns INT32_MIN, which once equalled the i32 sentinel and was called unwritten. The task's own reference as a candidate. */
#include <stdint.h>
void satadd(const int32_t *a, const int32_t *b, int32_t *c, int64_t n) {
    for (int64_t i = 0; i < n; i++) {
        int64_t s = (int64_t)a[i] + b[i];
        c[i] = s > INT32_MAX ? INT32_MAX : s < INT32_MIN ? INT32_MIN : (int32_t)s;
    }
}
