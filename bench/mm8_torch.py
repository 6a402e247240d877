#!/usr/bin/env python3
"""mm8_torch.py DIR [--quick]: the 8-bit products of examples/matmul_fp8.tile and
examples/matmul_int8.tile (DIR/matmul_fp8.ptx, DIR/matmul_int8.ptx, built for sm_90a) against
torch in one process: matmul_fp8 (e4m3, per-row and per-column scales, bf16 out) against
torch._scaled_mm with the same row-wise scales (cuBLASLt), matmul_int8 (i8, i32 out) against
torch._int_mm. Both operands K-major, as cuBLASLt's fast path wants them (B passed as the
transpose of an [N, K] tensor). Median of 30 calls each, CUDA events; FLOPs 2 M N K. Each
configuration is checked once against torch (fp8: the largest difference over the largest
value; int8: the largest difference, exact is 0) before it is timed. Launches through libtilert (ctypes; build/libtilert.so, or $TILERT_LIB), which builds the
tensor maps; needs python3 with torch."""
import ctypes, os, sys
import torch
d = sys.argv[1]
quick = "--quick" in sys.argv
rt = ctypes.CDLL(os.environ.get("TILERT_LIB", os.path.join(os.path.dirname(__file__), "..", "build", "libtilert.so")))
rt.tilert_last_error.restype = ctypes.c_char_p
torch.zeros(1, device="cuda")

class Arg(ctypes.Structure):   # tilert_arg (runtime/tilert.h)
    class V(ctypes.Union):
        _fields_ = [("ptr", ctypes.c_uint64), ("i32", ctypes.c_int32), ("u32", ctypes.c_uint32),
                    ("i64", ctypes.c_int64), ("f32", ctypes.c_float), ("bits16", ctypes.c_uint16)]
    _fields_ = [("kind", ctypes.c_int), ("v", V)]
PTR, I32 = 0, 1

def check(status, what):
    assert status == 0, "%s: %s" % (what, rt.tilert_last_error().decode())

ctx = ctypes.c_void_p()
check(rt.tilert_init(0, ctypes.byref(ctx)), "tilert_init")   # the primary context, torch's
fns = {}
for f, name in (("matmul_fp8", b"matmul_fp8"), ("matmul_int8", b"matmul_int8")):
    mod, fn = ctypes.c_void_p(), ctypes.c_void_p()
    path = os.path.join(d, f + ".ptx").encode()
    check(rt.tilert_load_ptx_file(ctx, path, ctypes.byref(mod)), "load " + path.decode())
    check(rt.tilert_get_kernel(mod, name, ctypes.byref(fn)), name.decode())
    fns[name] = fn

def launch(name, ptrs, sizes):
    args = (Arg * (len(ptrs) + len(sizes)))()
    for i, t in enumerate(ptrs):
        args[i].kind, args[i].v.ptr = PTR, t.data_ptr()
    for i, x in enumerate(sizes):
        args[len(ptrs) + i].kind, args[len(ptrs) + i].v.i32 = I32, x
    st = ctypes.c_void_p(torch.cuda.current_stream().cuda_stream)
    check(rt.tilert_launch(fns[name], st, args, len(args)), "launch " + name.decode())

def bench(f, reps=30):
    for _ in range(3): f()
    torch.cuda.synchronize()
    ts = []
    for _ in range(reps):
        a = torch.cuda.Event(enable_timing=True); b = torch.cuda.Event(enable_timing=True)
        a.record(); f(); b.record(); torch.cuda.synchronize(); ts.append(a.elapsed_time(b))
    ts.sort(); return ts[len(ts) // 2]

print(torch.cuda.get_device_name(), "torch", torch.__version__)
print("kind      M     N     K  tilec ms  torch ms  ratio  tilec TFLOP/s  torch TFLOP/s  max diff")
shapes = [(4096, 4096, 4096), (8192, 8192, 8192)] if quick else \
         [(2048, 2048, 2048), (4096, 4096, 4096), (8192, 8192, 8192), (4096, 28672, 8192), (128, 8192, 8192)]
for M, N, K in shapes:
    fl = 2 * M * N * K
    # fp8: values of a few units, scales near 1/16 so that the bf16 results are ordinary numbers
    a = (torch.randn(M, K, device="cuda") * 2).to(torch.float8_e4m3fn)
    b = (torch.randn(N, K, device="cuda") * 2).to(torch.float8_e4m3fn)
    sa = torch.rand(M, 1, device="cuda") / 8 + 0.01
    sb = torch.rand(1, N, device="cuda") / 8 + 0.01
    c = torch.empty(M, N, device="cuda", dtype=torch.bfloat16)
    run = lambda: launch(b"matmul_fp8", (a, b, sa, sb, c), (M, K, N))
    ref = lambda: torch._scaled_mm(a, b.t(), scale_a=sa, scale_b=sb, out_dtype=torch.bfloat16)
    run(); r = ref(); torch.cuda.synchronize()
    diff = ((c.float() - r.float()).abs().max() / r.float().abs().max()).item()
    t1, t2 = bench(run), bench(ref)
    print(f"fp8   {M:5d} {N:5d} {K:5d} {t1:9.3f} {t2:9.3f} {t2 / t1:6.2f} {fl / t1 / 1e9:13.1f} "
          f"{fl / t2 / 1e9:14.1f}  {diff:.3g}")
    del a, b, sa, sb, c, r
    # int8: any values; torch._int_mm's i32 result compared exactly (the difference in units)
    a = torch.randint(-128, 128, (M, K), device="cuda", dtype=torch.int8)
    b = torch.randint(-128, 128, (N, K), device="cuda", dtype=torch.int8)
    c = torch.empty(M, N, device="cuda", dtype=torch.int32)
    run = lambda: launch(b"matmul_int8", (a, b, c), (M, K, N))
    ref = lambda: torch._int_mm(a, b.t())
    run(); r = ref(); torch.cuda.synchronize()
    diff = (c - r).abs().max().item()
    t1, t2 = bench(run), bench(ref)
    print(f"int8  {M:5d} {N:5d} {K:5d} {t1:9.3f} {t2:9.3f} {t2 / t1:6.2f} {fl / t1 / 1e9:13.1f} "
          f"{fl / t2 / 1e9:14.1f}  {diff}")
    del a, b, c, r
    torch.cuda.empty_cache()
