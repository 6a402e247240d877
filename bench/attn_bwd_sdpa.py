#!/usr/bin/env python3
"""attn_bwd_sdpa.py DIR [--quick]: examples/attention_bwd.tile (the flash-attention backward: the
row pass, dK and dV, dQ) against the backward of torch's scaled_dot_product_attention on the same
inputs, in one process: median of 30 calls each, CUDA events. DIR holds attention.ptx and
attention_bwd.ptx; tilec's forward kernel makes the O and L the backward reads (not timed).
tilec's time is its three kernels; torch's is torch.autograd.grad of SDPA's output (its backward
kernels). FLOPs 10 B H S^2 D (five products of the forward's two), half when causal. Each
configuration is checked once against torch's gradients (max |difference| of dQ, dK, dV printed)
before it is timed. Needs python3 with torch."""
import sys
import torch
import torch.nn.functional as F
d = sys.argv[1]
quick = "--quick" in sys.argv
from tilert_torch import kernels, launch, bench, F32, I32
fwd = kernels(d + "/attention.ptx", [b"attention", b"attention_d128", b"attention_bf16", b"attention_bf16_d128"])
bwd_names = [b"attention_bwd_" + p + s for s in (b"", b"_d128", b"_bf16", b"_bf16_d128") for p in (b"rowdot", b"dkdv", b"dq")]
bwd = kernels(d + "/attention_bwd.ptx", bwd_names)

print(torch.cuda.get_device_name(), "torch", torch.__version__)
print("type  D causal  B*H     S  tilec ms  sdpa ms  ratio  tilec TFLOP/s  sdpa TFLOP/s  max|diff| dq dk dv")
seqs = [1024, 4096] if quick else [1024, 4096, 8192, 16384]
for dt, tn in ((torch.float16, "f16"), (torch.bfloat16, "bf16")):
    for D in (64, 128):
        suf = (b"" if dt == torch.float16 else b"_bf16") + (b"_d128" if D == 128 else b"")
        for causal in (0, 1):
            for S in seqs:
                B, H = max(1, 16384 // S), 16
                BH = B * H
                q = torch.randn(B, H, S, D, device="cuda", dtype=dt)
                k = torch.randn_like(q); v = torch.randn_like(q); do = torch.randn_like(q)
                o = torch.empty_like(q)
                lse = torch.empty(B, H, S, device="cuda", dtype=torch.float32)
                dl = torch.empty_like(lse)
                dq = torch.empty_like(q); dk = torch.empty_like(q); dv = torch.empty_like(q)
                scale = D ** -0.5
                sz = [(I32, x) for x in (causal, BH, S, D, BH)]
                launch(fwd[b"attention" + suf], "forward", [q, k, v, o, lse, (F32, scale)] + sz)

                def tilec():
                    launch(bwd[b"attention_bwd_rowdot" + suf], "rowdot", [o, do, dl] + [(I32, x) for x in (BH, S, D)])
                    launch(bwd[b"attention_bwd_dkdv" + suf], "dkdv", [q, k, v, do, lse, dl, dk, dv, (F32, scale)] + sz)
                    launch(bwd[b"attention_bwd_dq" + suf], "dq", [q, k, v, do, lse, dl, dq, (F32, scale)] + sz)
                tilec(); torch.cuda.synchronize()
                qr, kr, vr = (x.detach().clone().requires_grad_() for x in (q, k, v))
                out = F.scaled_dot_product_attention(qr, kr, vr, scale=scale, is_causal=bool(causal))
                g = torch.autograd.grad(out, (qr, kr, vr), do, retain_graph=True)
                diffs = [(a.float() - b.float()).abs().max().item() for a, b in zip((dq, dk, dv), g)]
                t1 = bench(tilec)
                t2 = bench(lambda: torch.autograd.grad(out, (qr, kr, vr), do, retain_graph=True))
                fl = 10 * BH * S * S * D / (2 if causal else 1)
                print(f"{tn:5s} {D:3d} {causal:6d} {BH:5d} {S:5d} {t1:9.3f} {t2:8.3f} {t2 / t1:6.2f} "
                      f"{fl / t1 / 1e9:13.1f} {fl / t2 / 1e9:13.1f}  " + " ".join(f"{x:.3g}" for x in diffs))
                del q, k, v, do, o, lse, dl, dq, dk, dv, qr, kr, vr, out, g
                torch.cuda.empty_cache()
