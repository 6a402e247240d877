#!/usr/bin/env python3
"""attn_sdpa.py ATTENTION.ptx [--quick]: examples/attention.tile (flash attention forward, the
online softmax as docs/language.md reads; f16 and bf16, head dim 64 and 128, causal and not)
against torch's scaled_dot_product_attention on the same inputs, in one process: median of 30
calls each, CUDA events; FLOPs 4 B H S^2 D, half that when causal. Loads the PTX and launches it
through libtilert (tilert_torch.py), which builds the tensor maps the sm_90a kernels read K and V
through; it needs python3 with torch. Each configuration is checked
once against SDPA (max |difference| printed) before it is timed."""
import re, sys
import torch
import torch.nn.functional as F
path = sys.argv[1]
ptx = open(path, "rb").read()
quick = "--quick" in sys.argv
from tilert_torch import kernels, launch, bench, F32, I32
names = [n for n in (b"attention", b"attention_d128", b"attention_bf16", b"attention_bf16_d128")
         if re.search(rb"//@kernel " + n + rb" ", ptx)]   # a file with some of them (a variant being tried)
fns = kernels(path, names)

def run_tilec(name, q, k, v, o, lse, scale, causal, BH, S, D, BHKV):
    launch(fns[name], name.decode(), [q, k, v, o, lse, (F32, scale)] + [(I32, x) for x in (causal, BH, S, D, BHKV)])

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
