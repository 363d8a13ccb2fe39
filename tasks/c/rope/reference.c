/* Reference rotary position embedding (RoPE, the interleaved-pairs form): for every row and
 * head of x (rows x heads x hd), each pair (x[2i], x[2i+1]) is rotated by the angle
 * pos * theta^(-2i/hd); angles, sines and cosines in double. */
#include <math.h>
#include <stdint.h>

void rope(const float *x, float *y, int64_t rows, int64_t heads, int64_t hd, int64_t pos, float theta)
{
    for (int64_t r = 0; r < rows * heads; r++) {
        const float *xr = x + r * hd;
        float *yr = y + r * hd;
        for (int64_t i = 0; i < hd / 2; i++) {
            double a = (double)pos * pow((double)theta, -2.0 * (double)i / (double)hd);
            double c = cos(a), s = sin(a);
            double x0 = xr[2 * i], x1 = xr[2 * i + 1];
            yr[2 * i] = (float)(x0 * c - x1 * s);
            yr[2 * i + 1] = (float)(x0 * s + x1 * c);
        }
    }
}

/* The task's magnitude function (task.json "tolerance": "magnitude"): for each output, the
 * magnitude of the two products it sums, |x0*cos| + |x1*sin| and |x0*sin| + |x1*cos|. A
 * float rotation's error is a few float roundings of that whatever its order of work
 * (FMA or not), and it is not one of |y|: where a spiked or offset pair's products cancel,
 * y is small and its error is not. The reference on |x| would not give it: the sines and
 * cosines are computed here, with their signs. */
void rope_magnitude(const float *x, float *y, int64_t rows, int64_t heads, int64_t hd, int64_t pos,
                    float theta)
{
    for (int64_t r = 0; r < rows * heads; r++) {
        const float *xr = x + r * hd;
        float *yr = y + r * hd;
        for (int64_t i = 0; i < hd / 2; i++) {
            double a = (double)pos * pow((double)theta, -2.0 * (double)i / (double)hd);
            double c = fabs(cos(a)), s = fabs(sin(a));
            double x0 = fabs((double)xr[2 * i]), x1 = fabs((double)xr[2 * i + 1]);
            yr[2 * i] = (float)(x0 * c + x1 * s);
            yr[2 * i + 1] = (float)(x0 * s + x1 * c);
        }
    }
}
