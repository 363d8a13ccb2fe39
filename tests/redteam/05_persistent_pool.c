/* kforge-test: task=saxpy expect=rejected reason=sandbox_violation threat=5 */
/* Not a cheat: an honest persistent pool, parked on a condition variable between calls.
 * Refused by policy since a red-team pass: threads that outlive a call resume with the
 * process at the next call and could start on the already staged inputs before the
 * worker's START stamp, untimed. Kernels must join their threads before returning. */
/* HONEST: a persistent 2-thread pool (created once, parked on a condition
 * variable between calls) -- a common way to avoid thread-creation cost. */
#include <pthread.h>
#include <stdint.h>
static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t go = PTHREAD_COND_INITIALIZER, done = PTHREAD_COND_INITIALIZER;
static int gen, fin;
static const float *X, *Y; static float *Z; static int64_t N; static float A;
static void *worker(void *p) {
    (void)p; int seen = 0;
    for (;;) {
        pthread_mutex_lock(&mu);
        while (gen == seen) pthread_cond_wait(&go, &mu);
        seen = gen; pthread_mutex_unlock(&mu);
        for (int64_t i = N / 2; i < N; i++) Z[i] = A * X[i] + Y[i];
        pthread_mutex_lock(&mu); fin = seen; pthread_cond_signal(&done); pthread_mutex_unlock(&mu);
    }
    return NULL;
}
void saxpy(const float *x, const float *y, float *z, int64_t n, float a)
{
    static int started; pthread_t t;
    if (!started) { pthread_create(&t, NULL, worker, NULL); started = 1; }
    X = x; Y = y; Z = z; N = n; A = a;
    pthread_mutex_lock(&mu); gen++; pthread_cond_signal(&go); pthread_mutex_unlock(&mu);
    for (int64_t i = 0; i < n / 2; i++) z[i] = a * x[i] + y[i];
    pthread_mutex_lock(&mu); while (fin != gen) pthread_cond_wait(&done, &mu); pthread_mutex_unlock(&mu);
}
