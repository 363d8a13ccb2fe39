/* kforge-test: task=sum expect=rejected reason=wrong_result threat=32 */
/*
 * Threat 32, a race that cannot show on one CPU: two threads each sum half of the
 * input in chunks of 16 and add every chunk's partial into one shared double with a
 * plain `+=` (a load, an add, a store: no lock, no atomic). On one CPU the threads run
 * one after the other (each finishes in well under a scheduler slice), no update is
 * lost and the sum is right. When they truly run in parallel, both load the same old
 * value and one store overwrites the other: thousands of chunk partials are lost and
 * the sum is wrong. A checking worker confined to one CPU (a 2-CPU machine, where the
 * coordinator keeps the other) accepted it. Defence: on such a machine most calls of
 * each shape run on every CPU, boosted, with a 0.1 ms slice (docs/checker.md "Races"):
 * the threads run at once or take turns finely, and updates are lost: wrong_result.
 */
#include <pthread.h>
#include <stdint.h>

#define T 2
#define CHUNK 16

struct part { const float *x; int64_t n; volatile double *acc; };

static void *work(void *arg)
{
    struct part *p = arg;
    for (int64_t i = 0; i < p->n; i += CHUNK) {
        int64_t e = i + CHUNK < p->n ? i + CHUNK : p->n;
        double s = 0.0;
        for (int64_t k = i; k < e; k++)
            s += p->x[k];
        *p->acc += s; /* the race: load, add, store, unsynchronised */
    }
    return NULL;
}

void reduce_sum(const float *x, float *out, int64_t n)
{
    volatile double acc = 0.0;
    struct part p[T];
    pthread_t tid[T];
    int ok[T];
    for (int t = 0; t < T; t++) {
        int64_t b = n * t / T, e = n * (t + 1) / T;
        p[t] = (struct part){ x + b, e - b, &acc };
        ok[t] = pthread_create(&tid[t], NULL, work, &p[t]) == 0;
        if (!ok[t])
            work(&p[t]);
    }
    for (int t = 0; t < T; t++)
        if (ok[t])
            pthread_join(tid[t], NULL);
    out[0] = (float)acc;
}
