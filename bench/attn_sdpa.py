#!/usr/bin/env python3
"""attn_sdpa.py ATTENTION.ptx [--quick]: examples/attention.tile (flash attention forward, the
online softmax as docs/language.md reads; f16 and bf16, head dim 64 and 128, causal and not)
against torch's scaled_dot_product_attention on the same inputs, in one process: median of 30
calls each, CUDA events; FLOPs 4 B H S^2 D, half that when causal. Loads the PTX through the
driver (ctypes), so it needs python3 with torch and nothing from the build but the PTX. Each
configuration is checked once against SDPA (max |difference| printed) before it is timed."""
import ctypes, re, sys
import torch
import torch.nn.functional as F
ptx = open(sys.argv[1], "rb").read()
quick = "--quick" in sys.argv
cu = ctypes.CDLL("libcuda.so.1")
torch.zeros(1, device="cuda")
mod = ctypes.c_void_p()
assert cu.cuModuleLoadData(ctypes.byref(mod), ctypes.c_char_p(ptx + b"\0")) == 0
fns, smem = {}, {}
for name in (b"attention", b"attention_d128", b"attention_bf16", b"attention_bf16_d128"):
    if not re.search(rb"//@kernel " + name + rb" ", ptx):
        continue   # a file with some of them (a variant being tried): the others are skipped
    fn = ctypes.c_void_p()
    assert cu.cuModuleGetFunction(ctypes.byref(fn), mod, name) == 0
    smem[name] = int(re.search(rb"//@kernel " + name + rb" threads \d+ smem (\d+)", ptx).group(1))
    assert cu.cuFuncSetAttribute(fn, 8, smem[name]) == 0   # MAX_DYNAMIC_SHARED_SIZE_BYTES
    fns[name] = fn

def run_tilec(name, q, k, v, o, lse, scale, causal, BH, S, D, BHKV):
    args = [ctypes.c_uint64(t.data_ptr()) for t in (q, k, v, o, lse)] + [
        ctypes.c_float(scale), ctypes.c_int32(causal), ctypes.c_int32(BH), ctypes.c_int32(S),
        ctypes.c_int32(D), ctypes.c_int32(BHKV)]
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
