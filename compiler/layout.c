/* layout.c: how tiles are spread over a block's threads.
 * Tile dims and thread counts are powers of two (check guarantees it), so every split is exact. */
#include "lower.h"

int layout_slots(const Layout *L) { return L->O[0] * L->V[0] * L->O[1] * L->V[1]; }

bool layout_eq(const Layout *a, const Layout *b)
{
    for (int d = 0; d < 2; d++)
        if (a->S[d] != b->S[d] || a->T[d] != b->T[d] || a->V[d] != b->V[d] || a->O[d] != b->O[d] ||
            a->bcast[d] != b->bcast[d] || a->Tlo[d] != b->Tlo[d])
            return false;
    return a->reps == b->reps && a->lo_t0_low == b->lo_t0_low && layout_wg(a) == layout_wg(b);
}

bool layout_wg(const Layout *L) { return L->wg_rows && !L->bcast[0] && L->S[0] > 1; }

int layout_row(const Layout *L, int o0, int i0)
{
    if (L->bcast[0])
        return o0 * L->V[0] + i0;
    if (layout_wg(L))
        return o0 / 2 * 2 * L->T[0] + o0 % 2 * 8;
    return o0 * L->T[0] * L->V[0] + i0;
}

/* wg_rows: 16 (t0 / 8) + t0 % 8, i.e. t0 with its bits above the low three doubled */
int layout_row_origin(const Layout *L, int t0)
{
    if (L->bcast[0])
        return 0;
    return layout_wg(L) ? t0 + (t0 & ~7) : t0 * L->V[0];
}

Layout layout_scalar(int threads)
{
    Layout L = { 0, { 1, 1 }, { 1, 1 }, { 1, 1 }, { 1, 1 }, { false, false }, threads, { 1, 1 }, false, false };
    return L;
}

/* When T1 == Tlo1 the outer grid has one column and the formula is t0 * T1 + t1 whatever Tlo0
 * (a column-major inner grid only when one of its sides is 1). */
bool layout_tid_plain(const Layout *L)
{
    return L->T[1] == L->Tlo[1] && (!L->lo_t0_low || L->Tlo[0] == 1 || L->Tlo[1] == 1);
}

static int imin(int a, int b) { return a < b ? a : b; }

static void normalise(Shape s, int S[2])
{
    S[0] = s.rank == 2 ? (int)s.dim[0] : 1;
    S[1] = s.rank >= 1 ? (int)s.dim[s.rank - 1] : 1;
}

Layout layout_rowmajor(Shape s, int threads, int vec)
{
    Layout L;
    L.rank = s.rank;
    normalise(s, L.S);
    L.bcast[0] = L.bcast[1] = false;
    L.V[1] = imin(vec, L.S[1]);
    L.T[1] = imin(threads, L.S[1] / L.V[1]);
    L.O[1] = L.S[1] / (L.V[1] * L.T[1]);
    L.T[0] = imin(threads / L.T[1], L.S[0]);
    L.V[0] = 1;
    L.O[0] = L.S[0] / L.T[0];
    L.reps = threads / (L.T[0] * L.T[1]);
    L.Tlo[0] = L.T[0];
    L.Tlo[1] = L.T[1];
    L.lo_t0_low = false;
    L.wg_rows = false;
    return L;
}

/* Each thread owns TM x TN outputs. The thread grid T0 x T1 is chosen so that TM and TN are as
 * close to each other as possible (fewest shared-memory fragment loads per FMA), at least 4 each
 * where the tile allows, so fragment reads are 16-byte vectors. */
Layout layout_matmul(Shape s, int threads)
{
    Layout L;
    L.rank = 2;
    normalise(s, L.S);
    L.bcast[0] = L.bcast[1] = false;
    int best_t0 = -1;
    long best_score = 0;
    for (int t0 = 1; t0 <= threads; t0 *= 2) {
        int t1 = threads / t0;
        if (t0 > L.S[0] || t1 > L.S[1])
            continue;
        int tm = L.S[0] / t0, tn = L.S[1] / t1;
        long score = (long)(tm > tn ? tm - tn : tn - tm) * 4 + (tm < 4) * 100 + (tn < 4) * 100;
        if (best_t0 < 0 || score < best_score) {
            best_t0 = t0;
            best_score = score;
        }
    }
    if (best_t0 < 0)   /* fewer elements than threads: spread rows, replicate the rest */
        return layout_rowmajor(s, threads, 4);
    L.T[0] = best_t0;
    L.T[1] = threads / best_t0;
    for (int d = 0; d < 2; d++) {
        int per = L.S[d] / L.T[d];
        L.V[d] = imin(4, per);
        L.O[d] = per / L.V[d];
    }
    L.reps = 1;
    L.Tlo[0] = L.T[0];
    L.Tlo[1] = L.T[1];
    L.lo_t0_low = false;
    L.wg_rows = false;
    return L;
}

/* The same spread of elements over threads with rows and columns exchanged: element (i, j) of L
 * is element (j, i) of the result, in the same slot and the same thread. Only for a layout with no
 * outer thread grid (Tlo == T) and rows in order, whose thread id is then t0 T1 + t1 or, inner grid column-major,
 * t1 T0 + t0: the exchange flips which of the two it is. */
bool layout_transpose(const Layout *L, Layout *out)
{
    if (L->rank != 2 || L->Tlo[0] != L->T[0] || L->Tlo[1] != L->T[1] || layout_wg(L))
        return false;
    Layout X = *L;
    for (int d = 0; d < 2; d++) {
        X.S[d] = L->S[1 - d];
        X.T[d] = L->T[1 - d];
        X.V[d] = L->V[1 - d];
        X.O[d] = L->O[1 - d];
        X.bcast[d] = L->bcast[1 - d];
        X.Tlo[d] = L->Tlo[1 - d];
    }
    X.lo_t0_low = !L->lo_t0_low;
    X.wg_rows = false;    /* L's rows were one or broadcast: so are X's columns */
    *out = X;
    return true;
}
