#!/usr/bin/env python3
"""mm8_torch.py DIR [--quick | --few]: the 8-bit products of examples/matmul_fp8.tile and
examples/matmul_int8.tile (DIR/matmul_fp8.ptx, DIR/matmul_int8.ptx, built for sm_90a) against
torch in one process: matmul_fp8 (e4m3, per-row and per-column scales, bf16 out) against
torch._scaled_mm with the same row-wise scales (cuBLASLt), matmul_int8 (i8, i32 out) against
torch._int_mm. Both operands K-major, as cuBLASLt's fast path wants them (B passed as the
transpose of an [N, K] tensor). Median of 30 calls each, CUDA events; FLOPs 2 M N K. Each
configuration is checked once against torch (fp8: the largest difference over the largest
value; int8: the largest difference, exact is 0) before it is timed. --few: the few-row shapes
(16, 128, 256 x 8192 x 8192; int8 from 128 rows, torch._int_mm's least). Launches through libtilert
(tilert_torch.py), which builds the tensor maps; needs python3 with torch."""
import os, sys
import torch
d = sys.argv[1]
quick = "--quick" in sys.argv
few = "--few" in sys.argv
from tilert_torch import kernels, launch, bench, I32
fns = {}
for f, name in (("matmul_fp8", b"matmul_fp8"), ("matmul_int8", b"matmul_int8")):
    fns.update(kernels(os.path.join(d, f + ".ptx"), [name]))

def run_tilec(name, tensors, sizes):
    launch(fns[name], name.decode(), list(tensors) + [(I32, x) for x in sizes])

print(torch.cuda.get_device_name(), "torch", torch.__version__)
print("kind      M     N     K  tilec ms  torch ms  ratio  tilec TFLOP/s  torch TFLOP/s  max diff")
shapes = [(16, 8192, 8192), (128, 8192, 8192), (256, 8192, 8192)] if few else \
         [(4096, 4096, 4096), (8192, 8192, 8192)] if quick else \
         [(2048, 2048, 2048), (4096, 4096, 4096), (8192, 8192, 8192), (4096, 28672, 8192), (128, 8192, 8192)]
for M, N, K in shapes:
    fl = 2 * M * N * K
    # fp8: values of a few units, scales near 1/16 so that the bf16 results are ordinary numbers
    a = (torch.randn(M, K, device="cuda") * 2).to(torch.float8_e4m3fn)
    b = (torch.randn(N, K, device="cuda") * 2).to(torch.float8_e4m3fn)
    sa = torch.rand(M, 1, device="cuda") / 8 + 0.01
    sb = torch.rand(1, N, device="cuda") / 8 + 0.01
    c = torch.empty(M, N, device="cuda", dtype=torch.bfloat16)
    run = lambda: run_tilec(b"matmul_fp8", (a, b, sa, sb, c), (M, K, N))
    ref = lambda: torch._scaled_mm(a, b.t(), scale_a=sa, scale_b=sb, out_dtype=torch.bfloat16)
    run(); r = ref(); torch.cuda.synchronize()
    diff = ((c.float() - r.float()).abs().max() / r.float().abs().max()).item()
    t1, t2 = bench(run), bench(ref)
    print(f"fp8   {M:5d} {N:5d} {K:5d} {t1:9.3f} {t2:9.3f} {t2 / t1:6.2f} {fl / t1 / 1e9:13.1f} "
          f"{fl / t2 / 1e9:14.1f}  {diff:.3g}")
    del a, b, sa, sb, c, r
    if M <= 16:
        continue
    # int8: any values; torch._int_mm's i32 result compared exactly (the difference in units)
    a = torch.randint(-128, 128, (M, K), device="cuda", dtype=torch.int8)
    b = torch.randint(-128, 128, (N, K), device="cuda", dtype=torch.int8)
    c = torch.empty(M, N, device="cuda", dtype=torch.int32)
    run = lambda: run_tilec(b"matmul_int8", (a, b, c), (M, K, N))
    ref = lambda: torch._int_mm(a, b.t())
    run(); r = ref(); torch.cuda.synchronize()
    diff = (c - r).abs().max().item()
    t1, t2 = bench(run), bench(ref)
    print(f"int8  {M:5d} {N:5d} {K:5d} {t1:9.3f} {t2:9.3f} {t2 / t1:6.2f} {fl / t1 / 1e9:13.1f} "
          f"{fl / t2 / 1e9:14.1f}  {diff}")
    del a, b, c, r
    torch.cuda.empty_cache()
