#!/usr/bin/env python3
"""attn_sdpa.py ATTENTION.ptx [--quick]: examples/attention.tile (flash attention forward, the
online softmax as docs/language.md reads; f16 and bf16, head dim 64 and 128, causal and not)
against torch's scaled_dot_product_attention on the same inputs, in one process: median of 30
calls each, CUDA events; FLOPs 4 B H S^2 D, half that when causal. Loads the PTX and launches it
through libtilert (ctypes; build/libtilert.so, or $TILERT_LIB), which builds the tensor maps the
sm_90a kernels read K and V through; it needs python3 with torch. Each configuration is checked
once against SDPA (max |difference| printed) before it is timed."""
import ctypes, os, re, sys
import torch
import torch.nn.functional as F
path = sys.argv[1]
ptx = open(path, "rb").read()
quick = "--quick" in sys.argv
rt = ctypes.CDLL(os.environ.get("TILERT_LIB", os.path.join(os.path.dirname(__file__), "..", "build", "libtilert.so")))
rt.tilert_last_error.restype = ctypes.c_char_p
torch.zeros(1, device="cuda")

class Arg(ctypes.Structure):   # tilert_arg (runtime/tilert.h)
    class V(ctypes.Union):
        _fields_ = [("ptr", ctypes.c_uint64), ("i32", ctypes.c_int32), ("u32", ctypes.c_uint32),
                    ("i64", ctypes.c_int64), ("f32", ctypes.c_float), ("bits16", ctypes.c_uint16)]
    _fields_ = [("kind", ctypes.c_int), ("v", V)]
PTR, I32, F32 = 0, 1, 4

def check(status, what):
    assert status == 0, "%s: %s" % (what, rt.tilert_last_error().decode())

ctx, mod = ctypes.c_void_p(), ctypes.c_void_p()
check(rt.tilert_init(0, ctypes.byref(ctx)), "tilert_init")   # the primary context, torch's
check(rt.tilert_load_ptx_file(ctx, path.encode(), ctypes.byref(mod)), "load " + path)
fns = {}
for name in (b"attention", b"attention_d128", b"attention_bf16", b"attention_bf16_d128"):
    if not re.search(rb"//@kernel " + name + rb" ", ptx):
        continue   # a file with some of them (a variant being tried): the others are skipped
    fn = ctypes.c_void_p()
    check(rt.tilert_get_kernel(mod, name, ctypes.byref(fn)), name.decode())
    fns[name] = fn

def run_tilec(name, q, k, v, o, lse, scale, causal, BH, S, D, BHKV):
    args = (Arg * 11)()
    for i, t in enumerate((q, k, v, o, lse)):
        args[i].kind, args[i].v.ptr = PTR, t.data_ptr()
    args[5].kind, args[5].v.f32 = F32, scale
    for i, x in enumerate((causal, BH, S, D, BHKV)):
        args[6 + i].kind, args[6 + i].v.i32 = I32, x
    st = ctypes.c_void_p(torch.cuda.current_stream().cuda_stream)
    check(rt.tilert_launch(fns[name], st, args, 11), "launch " + name.decode())

def bench(f, reps=30):
    for _ in range(3): f()
    torch.cuda.synchronize()
    ts = []
    for _ in range(reps):
        a = torch.cuda.Event(enable_timing=True); b = torch.cuda.Event(enable_timing=True)
        a.record(); f(); b.record(); torch.cuda.synchronize(); ts.append(a.elapsed_time(b))
    ts.sort(); return ts[len(ts) // 2]

print(torch.cuda.get_device_name(), "torch", torch.__version__)
print("type  D causal  B*H     S  tilec ms  sdpa ms  ratio  tilec TFLOP/s  sdpa TFLOP/s  max|diff|")
seqs = [1024, 4096] if quick else [1024, 4096, 8192, 16384]
for dt, tn in ((torch.float16, "f16"), (torch.bfloat16, "bf16")):
    for D in (64, 128):
        name = (b"attention" if dt == torch.float16 else b"attention_bf16") + (b"_d128" if D == 128 else b"")
        if name not in fns:
            continue
        for causal in (0, 1):
            for S in seqs:
                B, H = max(1, 16384 // S), 16
                BH = B * H
                q = torch.randn(B, H, S, D, device="cuda", dtype=dt)
                k = torch.randn_like(q); v = torch.randn_like(q)
                o = torch.empty_like(q)
                lse = torch.empty(B, H, S, device="cuda", dtype=torch.float32)
                scale = D ** -0.5
                run_tilec(name, q, k, v, o, lse, scale, causal, BH, S, D, BH); torch.cuda.synchronize()
                ref = F.scaled_dot_product_attention(q, k, v, scale=scale, is_causal=bool(causal))
                diff = (o.float() - ref.float()).abs().max().item()
                t1 = bench(lambda: run_tilec(name, q, k, v, o, lse, scale, causal, BH, S, D, BH))
                t2 = bench(lambda: F.scaled_dot_product_attention(q, k, v, scale=scale, is_causal=bool(causal)))
                fl = 4 * BH * S * S * D / (2 if causal else 1)
                print(f"{tn:5s} {D:3d} {causal:6d} {BH:5d} {S:5d} {t1:9.3f} {t2:8.3f} {t2 / t1:6.2f} "
                      f"{fl / t1 / 1e9:13.1f} {fl / t2 / 1e9:13.1f}  {diff:.3g}")
                del q, k, v, o, lse, ref
                torch.cuda.empty_cache()
