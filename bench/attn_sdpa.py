#!/usr/bin/env python3
"""attn_sdpa.py FEATURES.ptx: the attention kernel of tests/gpu/kernels/features.tile (`attn` and
`attn_d128`, an online softmax written the way docs/language.md reads, f16, head dim 64 and 128,
non-causal) against
torch's scaled_dot_product_attention on the same inputs, in one process: median of 30 calls each,
CUDA events, FLOPs counted as 4 B H S^2 D. Loads the PTX through the driver (ctypes), so it needs
python3 with torch and nothing from the build but the PTX. Not part of the benchmark proper: the
attention example and its rows there are still to come."""
import ctypes, re, sys
import torch
import torch.nn.functional as F
ptx = open(sys.argv[1], "rb").read()
cu = ctypes.CDLL("libcuda.so.1")
torch.zeros(1, device="cuda")
mod = ctypes.c_void_p()
assert cu.cuModuleLoadData(ctypes.byref(mod), ctypes.c_char_p(ptx + b"\0")) == 0
fns, smem = {}, {}
for name in (b"attn", b"attn_d128"):
    fn = ctypes.c_void_p()
    assert cu.cuModuleGetFunction(ctypes.byref(fn), mod, name) == 0
    smem[name] = int(re.search(rb"//@kernel " + name + rb" threads \d+ smem (\d+)", ptx).group(1))
    assert cu.cuFuncSetAttribute(fn, 8, smem[name]) == 0   # MAX_DYNAMIC_SHARED_SIZE_BYTES
    fns[name] = fn
def run_tilec(q, k, v, o, scale, BH, S, D):
    name = b"attn" if D == 64 else b"attn_d128"
    args = [ctypes.c_uint64(q.data_ptr()), ctypes.c_uint64(k.data_ptr()), ctypes.c_uint64(v.data_ptr()),
            ctypes.c_uint64(o.data_ptr()), ctypes.c_float(scale), ctypes.c_int32(BH), ctypes.c_int32(S), ctypes.c_int32(D)]
    arr = (ctypes.c_void_p * len(args))(*[ctypes.cast(ctypes.byref(a), ctypes.c_void_p) for a in args])
    st = torch.cuda.current_stream().cuda_stream
    r = cu.cuLaunchKernel(fns[name], (S + 127) // 128, BH, 1, 256, 1, 1, smem[name], ctypes.c_void_p(st), arr, None)
    assert r == 0, r
def bench(f, reps=30):
    for _ in range(3): f()
    torch.cuda.synchronize()
    ts = []
    for _ in range(reps):
        a = torch.cuda.Event(enable_timing=True); b = torch.cuda.Event(enable_timing=True)
        a.record(); f(); b.record(); torch.cuda.synchronize(); ts.append(a.elapsed_time(b))
    ts.sort(); return ts[len(ts) // 2]
print("B*H  S     D  tilec ms  sdpa ms  ratio  tilec TFLOP/s  sdpa TFLOP/s  max|diff|")
for (B, H, S, D) in [(16, 16, 1024, 64), (8, 16, 4096, 64), (4, 16, 8192, 64),
                     (16, 16, 1024, 128), (8, 16, 4096, 128), (4, 16, 8192, 128)]:
    BH = B * H
    q = torch.randn(B, H, S, D, device="cuda", dtype=torch.float16)
    k = torch.randn_like(q); v = torch.randn_like(q)
    o = torch.empty(B, H, S, D, device="cuda", dtype=torch.float32)
    scale = D ** -0.5
    t1 = bench(lambda: run_tilec(q, k, v, o, scale, BH, S, D))
    t2 = bench(lambda: F.scaled_dot_product_attention(q, k, v, scale=scale))
    ref = F.scaled_dot_product_attention(q, k, v, scale=scale).float()
    run_tilec(q, k, v, o, scale, BH, S, D); torch.cuda.synchronize()
    fl = 4 * BH * S * S * D
    print(f"{BH:4d} {S:5d} {D:3d} {t1:9.3f} {t2:8.3f} {t2 / t1:6.2f} {fl / t1 / 1e9:13.1f} {fl / t2 / 1e9:13.1f}  {(o - ref).abs().max().item():.3g}")
