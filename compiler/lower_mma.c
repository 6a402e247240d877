/* lower_mma.c: tensor-core matmul with mma.sync (sm_80 and later).
 * Not yet enabled: mma_supported() answers false, so every `@` takes the SIMT path. */
#include "tilec.h"

bool mma_supported(Lower *c, ElemType t, bool tf32, int M, int N, int K)
{
    (void)c; (void)t; (void)tf32; (void)M; (void)N; (void)K;
    return false;
}

Layout layout_mma(Shape s, int threads) { return layout_matmul(s, threads); }

int mma_pitch(ElemType t, int cols) { return cols + 16 / type_size(t); }

void lower_mma(Lower *c, Tile *acc, SmemMatrix a, SmemMatrix b)
{
    (void)c; (void)acc; (void)a; (void)b;
    die("lower_mma called while mma_supported() is false");
}
