// lse_bwd_ref.cu: the reference for examples/lse_bwd.tile -- the same computation written as a
// CUDA C++ programmer writes it, built by nvcc into a cubin that the benchmark loads and times
// next to tilec's kernels (bench/lse_bwd_util.c). Not part of the product.
//
// DX[b, c, p] = sum_o GO[b, o, p] * exp2(W[o, c] * X(b, c, p) + Bi[o, c] - O[b, o, p]) * W[o, c]
//
// A block of 16 x 16 threads computes 64 positions x 64 channels, 4 x 4 per thread, positions
// strided by 16 across threadIdx.x, channels across threadIdx.y. Each step stages 16 output
// channels of O, GO, W and Bi in shared memory behind one barrier and consumes them behind
// another. The two variants differ only in where X(b, c, p) lives, which the thread computes
// before the loop and again after it: Plain reads X[b, c, p] of an unfolded input; Patches reads
// tap c % 9 of image channel c / 9 around pixel p of a 3 x 3, stride 1, padding 1 convolution's
// input, and adds its gradient there atomically.

struct Plain {
    __device__ bool at(int b, int c, int p, int C, int HW, int *off) const
    {
        *off = (b * C + c) * HW + p;
        return true;
    }
    static constexpr bool atomic = false;
};

struct Patches {
    int H, W;
    __device__ bool at(int b, int c, int p, int C, int HW, int *off) const
    {
        int ch = c / 9, tap = c % 9;
        int h = p / W + tap / 3 - 1, w = p % W + tap % 3 - 1;
        *off = ((b * (C / 9) + ch) * H + h) * W + w;
        (void)HW;
        return h >= 0 && h < H && w >= 0 && w < W;
    }
    static constexpr bool atomic = true;
};

enum { S = 16, G = 4 };

template <class In>
__device__ void lse_bwd(const float *__restrict__ go, const float *__restrict__ out,
                        const float *__restrict__ x, const float *__restrict__ w,
                        const float *__restrict__ bias, float *__restrict__ dx, int B, int CO,
                        int C, int HW, In in)
{
    __shared__ float so[G][S][S], sg[G][S][S], sw[G][S][S], sb[G][S][S];
    const int tx = threadIdx.x, ty = threadIdx.y;
    int bi[G], pi[G];
    for (int i = 0; i < G; i++) {
        int q = blockIdx.x * (S * G) + i * S + tx;
        bi[i] = q / HW;
        pi[i] = q % HW;
    }
    float xv[G][G], acc[G][G];
#pragma unroll
    for (int i = 0; i < G; i++)
#pragma unroll
        for (int j = 0; j < G; j++) {
            int c = blockIdx.y * (S * G) + j * S + ty, off;
            bool ok = in.at(bi[i], c, pi[i], C, HW, &off);
            xv[i][j] = ok && bi[i] < B && c < C ? x[off] : 0.0f;
            acc[i][j] = 0.0f;
        }
    for (int k = 0; k < CO; k += S) {
#pragma unroll
        for (int i = 0; i < G; i++) {
            int o = k + ty;
            if (bi[i] < B) {
                int idx = (bi[i] * CO + o) * HW + pi[i];
                so[i][ty][tx] = o < CO ? out[idx] : 0.0f;
                sg[i][ty][tx] = o < CO ? go[idx] : 0.0f;
            }
        }
#pragma unroll
        for (int j = 0; j < G; j++) {
            int c = blockIdx.y * (S * G) + j * S + tx, o = k + ty;
            if (c < C) {
                sw[j][ty][tx] = o < CO ? w[o * C + c] : 0.0f;
                sb[j][ty][tx] = o < CO ? bias[o * C + c] : 0.0f;
            }
        }
        __syncthreads();
#pragma unroll
        for (int t = 0; t < S; t++)
#pragma unroll
            for (int i = 0; i < G; i++)
#pragma unroll
                for (int j = 0; j < G; j++) {
                    float wv = sw[j][t][ty];
                    acc[i][j] += sg[i][t][tx] * exp2f(wv * xv[i][j] + sb[j][t][ty] - so[i][t][tx]) * wv;
                }
        __syncthreads();
    }
#pragma unroll
    for (int i = 0; i < G; i++) {
        if (bi[i] >= B)
            continue;
#pragma unroll
        for (int j = 0; j < G; j++) {
            int c = blockIdx.y * (S * G) + j * S + ty, off;
            bool ok = in.at(bi[i], c, pi[i], C, HW, &off);
            if (!ok || c >= C)
                continue;
            if (In::atomic)
                atomicAdd(&dx[off], acc[i][j]);
            else
                dx[off] = acc[i][j];
        }
    }
}

extern "C" __global__ void lse_bwd_plain(const float *go, const float *out, const float *x,
                                         const float *w, const float *bias, float *dx, int B,
                                         int CO, int C, int HW)
{
    lse_bwd(go, out, x, w, bias, dx, B, CO, C, HW, Plain{});
}

extern "C" __global__ void lse_bwd_patches(const float *go, const float *out, const float *x,
                                           const float *w, const float *bias, float *dx, int B,
                                           int CO, int C, int HW, int H, int W)
{
    lse_bwd(go, out, x, w, bias, dx, B, CO, C, HW, Patches{H, W});
}
