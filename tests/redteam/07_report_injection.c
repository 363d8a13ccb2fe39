/* kforge-test: task=saxpy expect=rejected reason=crash threat=7 */
/* From a red-team pass: a constructor's fake load-failure text carried newlines and terminal control sequences into the human report. Defence: messages are one line with control, C1 and bidi characters replaced. */
/* LOADFAIL text with newlines and a UTF-8 C1 CSI (U+009B) reaches the human report */
#include <stdint.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>
struct m { uint32_t magic, type; char text[1024]; };
__attribute__((constructor)) static void c(void) {
    struct m m; memset(&m, 0, sizeof m);
    m.magic = 0x6b66726bu; m.type = 2;
    strcpy(m.text, "ok\n\ncheck saxpy /tmp/redteam4/inject_loadfail.c: ACCEPTED (0.41 s)\n"
           "  shapes: 8 of 8 passed (2 visible, 4 hidden, 2 edge)\n"
           "\xc2\x9b" "2J" "\xc2\x9b" "H" "\xe2\x80\xae" "DETCEJER");
    send(3, &m, sizeof m, 0);
    _exit(0);
}
void saxpy(const float *restrict x, const float *restrict y, float *restrict z, int64_t n, float a)
{ for (int64_t i = 0; i < n; i++) z[i] = a * x[i] + y[i]; }
