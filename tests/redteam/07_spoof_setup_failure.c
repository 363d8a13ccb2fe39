/* kforge-test: task=saxpy expect=rejected reason=crash threat=7 */
/* From a code review: a constructor sends a fake 'worker setup' failure so that kforge reports an internal error instead of a verdict. Defence: the worker announces the end of its trusted setup (SETUP_OK) before loading the candidate; anything after it is the candidate's. */
#include <stdint.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>
struct m { uint32_t magic, type; char text[1024]; };
__attribute__((constructor)) static void c(void) {
    struct m m; memset(&m, 0, sizeof m);
    m.magic = 0x6b66726bu; m.type = 2;
    strcpy(m.text, "worker setup: landlock: Operation not permitted");
    send(3, &m, sizeof m, 0);
    for (;;) pause();
}
void saxpy(const float *restrict x, const float *restrict y, float *restrict z, int64_t n, float a)
{ for (int64_t i = 0; i < n; i++) z[i] = a * x[i] + y[i]; }
