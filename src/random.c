/* random.c: seeded, reproducible random numbers for initializers.
 * Counter-based (element i depends only on the seed and i), so the same seed
 * gives the same weights on every device, in every order. */
#include <math.h>

#include "runtime.h"

static uint64_t splitmix64(uint64_t x)
{
    x += 0x9e3779b97f4a7c15ull;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
    return x ^ (x >> 31);
}

uint64_t fl_mix_seed(uint64_t a, uint64_t b) { return splitmix64(a ^ splitmix64(b)); }

/* A float in [0, 1) from the top 24 bits: exactly representable. */
static float uniform01(uint64_t seed, uint64_t counter)
{
    return (float)(splitmix64(seed ^ splitmix64(counter)) >> 40) * (1.0f / 16777216.0f);
}

void fl_fill_random_uniform(float *out, int64_t n, float minval, float maxval, uint64_t seed)
{
    for (int64_t i = 0; i < n; i++)
        out[i] = minval + (maxval - minval) * uniform01(seed, (uint64_t)i);
}

/* Box-Muller from two uniforms per draw; a draw beyond two standard
 * deviations is redrawn with the next counter, as TensorFlow's truncated
 * normal does. */
void fl_fill_truncated_normal(float *out, int64_t n, float mean, float stddev, uint64_t seed)
{
    uint64_t counter = 0;
    for (int64_t i = 0; i < n; i++) {
        double z;
        do {
            double u1 = 1.0 - uniform01(seed, counter++); /* (0, 1]: log is finite */
            double u2 = uniform01(seed, counter++);
            z = sqrt(-2.0 * log(u1)) * cos(2.0 * M_PI * u2);
        } while (fabs(z) > 2.0);
        out[i] = mean + stddev * (float)z;
    }
}
