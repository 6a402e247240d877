/* tuned.c: dispatch by shape for the launchers of tuned kernels (tilec --emit=c --tune=FILE).
 *
 * tilec-tune times a kernel's const choices at a few shapes (size classes); the fastest choice
 * per class becomes a variant of the module. A launch at any other shape runs the variant of the
 * nearest class. Nearness is measured on log2 of the sizes, because how a tile choice performs
 * depends on ratios (a 512-row product is as far from 256 rows as from 1024), and summed as
 * squares so that one far size outweighs several near ones. The generated code holds only
 * tables; the policy is here, once. */
#include "tilert_internal.h"

/* ln(x) for x >= 1 without libm (generated launchers link -ltilert -lcuda -lpthread only):
 * x = m 2^e with m in [1, 2), ln m = 2 atanh((m - 1) / (m + 1)), whose series in t <= 1/3
 * reaches double precision in under 20 terms. */
static double ln_at_least_1(double x)
{
    int e = 0;
    while (x >= 2.0) {
        x *= 0.5;
        e++;
    }
    double t = (x - 1.0) / (x + 1.0), t2 = t * t, term = t, sum = 0.0;
    for (int k = 1; k < 40; k += 2) {
        sum += term / k;
        term *= t2;
    }
    return 2.0 * sum + e * 0.69314718055994530942;
}

static double log2_size(int32_t s)
{
    return ln_at_least_1(s < 1 ? 1.0 : (double)s) / 0.69314718055994530942;
}

static double distance(const tilert_tuned *t, int cls, const int32_t *sizes)
{
    double d = 0.0;
    for (int i = 0; i < t->nsizes; i++) {
        double x = log2_size(sizes[i]) - log2_size(t->class_sizes[(size_t)cls * (size_t)t->nsizes + (size_t)i]);
        d += x * x;
    }
    return d;
}

static bool valid_variant(const tilert_tuned *t, int v)
{
    return v >= 0 && v < t->nvariants && t->variants[v];
}

/* The class not yet used (used[c] false) nearest to sizes, -1 when none is left. Quadratic over
 * the classes when called repeatedly, which stays small: a table holds at most 256 of them and a
 * launch goes past the first only when an assume refuses it. */
static int nearest_unused(const tilert_tuned *t, const int32_t *sizes, const bool *used)
{
    int best = -1;
    double best_d = 0.0;
    for (int c = 0; c < t->nclasses; c++) {
        if (used[c] || !valid_variant(t, t->class_variant[c]))
            continue;
        double d = distance(t, c, sizes);
        if (best < 0 || d < best_d) {
            best = c;
            best_d = d;
        }
    }
    return best;
}

int tilert_tuned_variant(const tilert_tuned *t, const int32_t *sizes)
{
    enum { MAX_CLASSES = 256 };
    bool used[MAX_CLASSES] = { false };
    if (!t || t->nclasses <= 0 || t->nclasses > MAX_CLASSES || !sizes)
        return 0;
    int c = nearest_unused(t, sizes, used);
    return c < 0 ? 0 : t->class_variant[c];
}

tilert_status tilert_tuned_launch(const tilert_tuned *t, CUstream stream, const tilert_arg *args,
                                  int nargs, const int32_t *sizes)
{
    enum { MAX_CLASSES = 256, MAX_VARIANTS = 257 };
    bool used[MAX_CLASSES] = { false }, tried[MAX_VARIANTS] = { false };
    if (!t || t->nvariants < 1 || t->nvariants > MAX_VARIANTS || !t->variants[0]
        || t->nclasses < 0 || t->nclasses > MAX_CLASSES || (t->nclasses && !sizes))
        return rt_error(TILERT_ERR_BAD_ARGS, "tilert_tuned_launch: malformed dispatch table");
    tilert_status s = TILERT_ERR_ASSUME;
    for (;;) {
        int c = nearest_unused(t, sizes, used);
        if (c < 0)
            break;
        used[c] = true;
        int v = t->class_variant[c];
        if (tried[v])
            continue;
        tried[v] = true;
        s = tilert_embedded_launch(t->variants[v], t->kernel, stream, args, nargs);
        if (s != TILERT_ERR_ASSUME)
            return s;
    }
    if (!tried[0])
        s = tilert_embedded_launch(t->variants[0], t->kernel, stream, args, nargs);
    return s;
}
