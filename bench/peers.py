#!/usr/bin/env python3
"""peers.py: the benchmark's workloads in torch and in Triton, for comparison with tilec.

Runs on the GPU machine's python3 (torch and triton installed; nothing else needed). Times each
call with triton.testing.do_bench (median, L2 flushed between calls), checks each Triton result
against torch once, and writes one CSV row per (workload, implementation):

    device,kernel,size,impl,what,ms,unit,perf,check

`kernel` and `size` are spelled exactly as bench.c spells them, so bench/merge.py can join the
two tables. Work is counted the same way: 2*M*N*K flops for GEMM, the minimum DRAM bytes read
plus written for the memory-bound kernels.

The Triton kernels follow the style of Triton's tutorials, with one fixed, good configuration each
(no autotuning, so the timing is of one kernel, not of a search).
"""
import argparse
import csv
import sys

AXPY_ALPHA = 0.75
LN_EPS = 1e-5


# ------------------------------------------------------------------ the workloads (as in bench.c)

def gemm(kernel, s, dtype):
    return dict(kernel=kernel, kind="gemm", m=s, n=s, k=s, dtype=dtype, size=f"{s}x{s}x{s}")


WORKLOADS = [
    gemm("matmul_f32", 1024, "f32"),
    gemm("matmul_f32", 4096, "f32"),
    gemm("matmul_f32", 8192, "f32"),
    gemm("matmul_tf32", 4096, "tf32"),
    gemm("matmul_tf32", 8192, "tf32"),
    gemm("matmul_f16", 4096, "f16"),
    gemm("matmul_f16", 8192, "f16"),
    gemm("matmul_bf16", 4096, "bf16"),
    gemm("matmul_bf16", 8192, "bf16"),
    dict(kernel="vecadd", kind="axpy", n=1 << 28, size="2^28 f32"),
    dict(kernel="sum", kind="sum", n=1 << 28, size="2^28 f32"),
    dict(kernel="rowsum", kind="rowsum", m=8192, n=8192, size="8192x8192 f32"),
    dict(kernel="softmax", kind="softmax", m=8192, n=8192, size="8192x8192 f32"),
    dict(kernel="layernorm", kind="layernorm", m=8192, n=8192, size="8192x8192 f32"),
    dict(kernel="rowsum", kind="rowsum", m=32768, n=8192, size="32768x8192 f32"),
    dict(kernel="softmax", kind="softmax", m=32768, n=8192, size="32768x8192 f32"),
    dict(kernel="layernorm", kind="layernorm", m=32768, n=8192, size="32768x8192 f32"),
    dict(kernel="colsum", kind="colsum", m=8192, n=8192, size="8192x8192 f32"),
    dict(kernel="colsum", kind="colsum", m=32768, n=8192, size="32768x8192 f32"),
    dict(kernel="layernorm_stats", kind="layernorm_stats", m=8192, n=8192, size="8192x8192 f32"),
    dict(kernel="layernorm_stats", kind="layernorm_stats", m=32768, n=8192, size="32768x8192 f32"),
    dict(kernel="rmsnorm", kind="rmsnorm", m=8192, n=8192, size="8192x8192 f32", es=4),
    dict(kernel="rmsnorm", kind="rmsnorm", m=32768, n=8192, size="32768x8192 f32", es=4),
    dict(kernel="rmsnorm_f16", kind="rmsnorm", m=32768, n=8192, size="32768x8192 f16", es=2),
    dict(kernel="gemv", kind="gemv", m=8192, n=8192, size="8192x8192 f16", es=2),
    dict(kernel="gemv", kind="gemv", m=28672, n=8192, size="28672x8192 f16", es=2),
    dict(kernel="gemv_bf16", kind="gemv", m=8192, n=8192, size="8192x8192 bf16", es=2),
    # Y = X W^T at a batch of b vectors: size is batch x rows x columns, as bench.c spells it
    *[dict(kernel="gemv_batch", kind="gemv", m=8192, n=8192, batch=b, size=f"{b}x8192x8192 f16", es=2)
      for b in (1, 2, 4, 8)],
    dict(kernel="gemv_batch_bf16", kind="gemv", m=8192, n=8192, batch=8, size="8x8192x8192 bf16", es=2),
]


def work(w):
    """(amount, unit divisor, unit): flops for GEMM, bytes moved otherwise."""
    if w["kind"] == "gemm":
        return 2.0 * w["m"] * w["n"] * w["k"], 1e9, "TFLOP/s"
    m, n = w.get("m", 0), w["n"]
    moved = {
        "axpy": 3 * 4 * n,
        "sum": 4 * n,
        "rowsum": 4 * m * n + 4 * m,
        "softmax": 8 * m * n,
        "colsum": 4 * m * n + 4 * n,
        "layernorm": 8 * m * n + 8 * n,
        "layernorm_stats": 8 * m * n + 8 * n + 8 * m,
        "rmsnorm": w.get("es", 4) * (2 * m * n + n),
        "gemv": w.get("es", 2) * (m * n + w.get("batch", 1) * n) + 4 * w.get("batch", 1) * m,
    }[w["kind"]]
    return float(moved), 1e6, "GB/s"


# ------------------------------------------------------------------ Triton kernels

def define_kernels():
    """Defined only when triton imports: this file must also load (for --help) without it."""
    import triton
    import triton.language as tl

    k = {}

    @triton.jit
    def matmul_kernel(a_ptr, b_ptr, c_ptr, M, N, K,
                      stride_am, stride_ak, stride_bk, stride_bn, stride_cm, stride_cn,
                      BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr,
                      GROUP_M: tl.constexpr, PRECISION: tl.constexpr):
        # Grouped ordering of the output tiles for L2 reuse, as in the matmul tutorial.
        pid = tl.program_id(0)
        num_pid_m = tl.cdiv(M, BLOCK_M)
        num_pid_n = tl.cdiv(N, BLOCK_N)
        num_pid_in_group = GROUP_M * num_pid_n
        group_id = pid // num_pid_in_group
        first_pid_m = group_id * GROUP_M
        group_size_m = min(num_pid_m - first_pid_m, GROUP_M)
        pid_m = first_pid_m + ((pid % num_pid_in_group) % group_size_m)
        pid_n = (pid % num_pid_in_group) // group_size_m

        offs_am = (pid_m * BLOCK_M + tl.arange(0, BLOCK_M)) % M
        offs_bn = (pid_n * BLOCK_N + tl.arange(0, BLOCK_N)) % N
        offs_k = tl.arange(0, BLOCK_K)
        a_ptrs = a_ptr + offs_am[:, None] * stride_am + offs_k[None, :] * stride_ak
        b_ptrs = b_ptr + offs_k[:, None] * stride_bk + offs_bn[None, :] * stride_bn
        acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
        for kk in range(0, tl.cdiv(K, BLOCK_K)):
            a = tl.load(a_ptrs, mask=offs_k[None, :] < K - kk * BLOCK_K, other=0.0)
            b = tl.load(b_ptrs, mask=offs_k[:, None] < K - kk * BLOCK_K, other=0.0)
            acc = tl.dot(a, b, acc, input_precision=PRECISION)
            a_ptrs += BLOCK_K * stride_ak
            b_ptrs += BLOCK_K * stride_bk
        c = acc.to(c_ptr.dtype.element_ty)
        offs_cm = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
        offs_cn = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
        c_ptrs = c_ptr + stride_cm * offs_cm[:, None] + stride_cn * offs_cn[None, :]
        tl.store(c_ptrs, c, mask=(offs_cm[:, None] < M) & (offs_cn[None, :] < N))

    @triton.jit
    def axpy_kernel(x_ptr, y_ptr, z_ptr, alpha, n, BLOCK: tl.constexpr):
        offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
        mask = offs < n
        x = tl.load(x_ptr + offs, mask=mask)
        y = tl.load(y_ptr + offs, mask=mask)
        tl.store(z_ptr + offs, alpha * x + y, mask=mask)

    @triton.jit
    def sum_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr, STEPS: tl.constexpr):
        # The same split as examples/sum.tile: STEPS windows per program, one atomic each.
        base = tl.program_id(0).to(tl.int64) * BLOCK * STEPS
        acc = tl.zeros((BLOCK,), dtype=tl.float32)
        for i in range(STEPS):
            offs = base + i * BLOCK + tl.arange(0, BLOCK)
            acc += tl.load(x_ptr + offs, mask=offs < n, other=0.0)
        tl.atomic_add(out_ptr, tl.sum(acc, axis=0))

    @triton.jit
    def rowsum_kernel(x_ptr, y_ptr, n_cols, stride, BLOCK: tl.constexpr):
        row = tl.program_id(0)
        acc = tl.zeros((BLOCK,), dtype=tl.float32)
        for off in range(0, n_cols, BLOCK):
            cols = off + tl.arange(0, BLOCK)
            acc += tl.load(x_ptr + row * stride + cols, mask=cols < n_cols, other=0.0)
        tl.store(y_ptr + row, tl.sum(acc, axis=0))

    @triton.jit
    def softmax_kernel(x_ptr, y_ptr, n_cols, stride, BLOCK: tl.constexpr):
        # The fused-softmax tutorial's body: the row on chip, one read and one write.
        row = tl.program_id(0)
        cols = tl.arange(0, BLOCK)
        x = tl.load(x_ptr + row * stride + cols, mask=cols < n_cols, other=-float("inf"))
        x = x - tl.max(x, axis=0)
        num = tl.exp(x)
        tl.store(y_ptr + row * stride + cols, num / tl.sum(num, axis=0), mask=cols < n_cols)

    @triton.jit
    def layernorm_kernel(x_ptr, y_ptr, w_ptr, b_ptr, n_cols, stride, eps, BLOCK: tl.constexpr):
        # The layer-norm tutorial's forward pass (without storing mean and rstd).
        row = tl.program_id(0)
        x_ptr += row * stride
        y_ptr += row * stride
        acc = tl.zeros((BLOCK,), dtype=tl.float32)
        for off in range(0, n_cols, BLOCK):
            cols = off + tl.arange(0, BLOCK)
            acc += tl.load(x_ptr + cols, mask=cols < n_cols, other=0.0)
        mean = tl.sum(acc, axis=0) / n_cols
        acc = tl.zeros((BLOCK,), dtype=tl.float32)
        for off in range(0, n_cols, BLOCK):
            cols = off + tl.arange(0, BLOCK)
            x = tl.load(x_ptr + cols, mask=cols < n_cols, other=0.0)
            d = tl.where(cols < n_cols, x - mean, 0.0)
            acc += d * d
        rstd = 1 / tl.sqrt(tl.sum(acc, axis=0) / n_cols + eps)
        for off in range(0, n_cols, BLOCK):
            cols = off + tl.arange(0, BLOCK)
            mask = cols < n_cols
            w = tl.load(w_ptr + cols, mask=mask)
            b = tl.load(b_ptr + cols, mask=mask)
            x = tl.load(x_ptr + cols, mask=mask, other=0.0)
            tl.store(y_ptr + cols, (x - mean) * rstd * w + b, mask=mask)

    k.update(matmul=matmul_kernel, axpy=axpy_kernel, sum=sum_kernel, rowsum=rowsum_kernel,
             softmax=softmax_kernel, layernorm=layernorm_kernel)
    return triton, k


# ------------------------------------------------------------------ per-kind setup: (torch fn, triton fn, output pair)

def set_tf32(torch, allowed):
    m = torch.backends.cuda.matmul
    if hasattr(m, "fp32_precision"):
        m.fp32_precision = "tf32" if allowed else "ieee"
    else:
        m.allow_tf32 = allowed


def rand(torch, shape, gen, lo=-1.0, hi=1.0, dtype=None):
    x = torch.rand(shape, generator=gen, device="cuda", dtype=torch.float32) * (hi - lo) + lo
    return x if dtype is None else x.to(dtype)


def make(w, torch, triton, tk, gen):
    """Returns (torch_fn, torch_what, triton_fn, triton_what, check) for one workload."""
    kind = w["kind"]
    if kind == "gemm":
        dt = {"f32": torch.float32, "tf32": torch.float32, "f16": torch.float16,
              "bf16": torch.bfloat16}[w["dtype"]]
        m, n, k = w["m"], w["n"], w["k"]
        a, b = rand(torch, (m, k), gen, dtype=dt), rand(torch, (k, n), gen, dtype=dt)
        c = torch.empty((m, n), device="cuda", dtype=dt)
        tf32 = w["dtype"] == "tf32"
        set_tf32(torch, tf32)
        if dt == torch.float32:   # FMA (ieee) or tf32 tensor cores: smaller tiles, as fp32 needs
            cfg = dict(BLOCK_M=128, BLOCK_N=128, BLOCK_K=32, GROUP_M=8, num_stages=3, num_warps=8)
        else:                     # the matmul tutorial's first CUDA configuration
            cfg = dict(BLOCK_M=128, BLOCK_N=256, BLOCK_K=64, GROUP_M=8, num_stages=3, num_warps=8)
        # fp32 operands: IEEE FMA or TF32 as asked; 16-bit operands: Triton's default.
        prec = ("tf32" if tf32 else "ieee") if dt == torch.float32 else None
        grid = (triton.cdiv(m, cfg["BLOCK_M"]) * triton.cdiv(n, cfg["BLOCK_N"]),)

        def tri():
            tk["matmul"][grid](a, b, c, m, n, k, a.stride(0), a.stride(1), b.stride(0),
                               b.stride(1), c.stride(0), c.stride(1), PRECISION=prec, **cfg)

        def check():
            ref = torch.matmul(a, b).float()
            tri()
            torch.cuda.synchronize()
            err = (c.float() - ref).abs().max().item()
            tol = {"f32": 1e-5, "tf32": 5e-3, "f16": 5e-3, "bf16": 2e-2}[w["dtype"]]
            lim = tol * (1 + ref.abs().max().item())
            return err <= lim, f"max |triton - torch| = {err:.3g} (limit {lim:.3g})"

        what = "torch.matmul" + (" (tf32)" if tf32 else " (no TF32)" if dt == torch.float32 else "")
        return (lambda: torch.matmul(a, b)), what, tri, "triton matmul", check

    if kind == "axpy":
        n = w["n"]
        x, y = rand(torch, (n,), gen), rand(torch, (n,), gen)
        z = torch.empty_like(x)
        grid = (triton.cdiv(n, 1024),)

        def tri():
            tk["axpy"][grid](x, y, z, AXPY_ALPHA, n, BLOCK=1024)

        def check():
            tri()
            err = (z - (AXPY_ALPHA * x + y)).abs().max().item()
            return err <= 1e-6, f"max abs error {err:.3g}"

        return (lambda: torch.add(y, x, alpha=AXPY_ALPHA, out=z)), "torch.add(alpha=)", tri, \
            "triton axpy", check

    if kind == "sum":
        n = w["n"]
        x = rand(torch, (n,), gen)
        out = torch.zeros(1, device="cuda", dtype=torch.float32)
        BLOCK, STEPS = 4096, 8
        grid = (triton.cdiv(n, BLOCK * STEPS),)

        def tri():   # the accumulator must start at 0: its clearing is inside the timing
            out.zero_()
            tk["sum"][grid](x, out, n, BLOCK=BLOCK, STEPS=STEPS, num_warps=16)

        def check():
            tri()
            want = x.double().sum().item()
            got = out.item()
            lim = 5e-8 * x.abs().double().sum().item() + 1e-3
            return abs(got - want) <= lim, f"sum {got:.7g} vs {want:.7g}"

        return (lambda: torch.sum(x)), "torch.sum", tri, "triton sum + atomic (incl. zeroing)", check

    m, n = w["m"], w["n"]
    if kind in ("gemv", "rmsnorm"):
        # torch only (no Triton tutorial kernel for these): the 16-bit rows as torch takes them
        dt = torch.bfloat16 if "bf16" in w["size"] else torch.float16 if "f16" in w["size"] \
            else torch.float32
        x = rand(torch, (m, n), gen, dtype=dt)
        if kind == "gemv" and "batch" in w:   # a linear layer at batch b: X [b, n] @ W^T
            v = rand(torch, (w["batch"], n), gen, dtype=dt)
            return (lambda: torch.nn.functional.linear(v, x)), "F.linear", None, None, None
        if kind == "gemv":
            v = rand(torch, (n,), gen, dtype=dt)
            return (lambda: torch.mv(x, v)), "torch.mv", None, None, None
        wt = rand(torch, (n,), gen, 0.5, 1.5, dtype=dt)
        return (lambda: torch.nn.functional.rms_norm(x, (n,), wt, LN_EPS)), "F.rms_norm", \
            None, None, None
    x = rand(torch, (m, n), gen)
    if kind == "colsum":
        return (lambda: torch.sum(x, dim=0)), "torch.sum(dim=0)", None, None, None
    if kind == "layernorm_stats":
        # torch only: the output, mean and rstd in one call, as layer_norm's forward for autograd
        wt, bs = rand(torch, (n,), gen, 0.5, 1.5), rand(torch, (n,), gen, -0.5, 0.5)
        return (lambda: torch.native_layer_norm(x, (n,), wt, bs, LN_EPS)), \
            "torch.native_layer_norm", None, None, None
    if kind == "rowsum":
        y = torch.empty(m, device="cuda", dtype=torch.float32)

        def tri():
            tk["rowsum"][(m,)](x, y, n, x.stride(0), BLOCK=2048, num_warps=8)

        def check():
            tri()
            ref = x.double().sum(dim=1)
            err = (y.double() - ref).abs().max().item()
            lim = 1e-6 * x.abs().double().sum(dim=1).max().item() + 1e-5
            return err <= lim, f"max abs error {err:.3g}"

        return (lambda: torch.sum(x, dim=1)), "torch.sum(dim=1)", tri, "triton row sum", check

    y = torch.empty_like(x)
    if kind == "softmax":
        block = triton.next_power_of_2(n)

        def tri():
            tk["softmax"][(m,)](x, y, n, x.stride(0), BLOCK=block, num_warps=16)

        def check():
            tri()
            ref = torch.softmax(x.double(), dim=1)
            err = ((y.double() - ref).abs() / (1e-9 + 1e-4 * ref)).max().item()
            return err <= 1, f"worst error {err:.2f} of its limit"

        return (lambda: torch.softmax(x, dim=1)), "torch.softmax", tri, "triton softmax", check

    wt, bs = rand(torch, (n,), gen, 0.5, 1.5), rand(torch, (n,), gen, -0.5, 0.5)
    block = min(65536 // x.element_size(), triton.next_power_of_2(n))
    warps = min(max(block // 256, 1), 8)

    def tri():
        tk["layernorm"][(m,)](x, y, wt, bs, n, x.stride(0), LN_EPS, BLOCK=block, num_warps=warps)

    def check():
        tri()
        ref = torch.nn.functional.layer_norm(x.double(), (n,), wt.double(), bs.double(), LN_EPS)
        err = ((y.double() - ref).abs() / (1e-4 + 1e-4 * ref.abs())).max().item()
        return err <= 1, f"worst error {err:.2f} of its limit"

    return (lambda: torch.nn.functional.layer_norm(x, (n,), wt, bs, LN_EPS)), "F.layer_norm", \
        tri, "triton layernorm", check


# ------------------------------------------------------------------ main

def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--csv", help="write the results as CSV")
    ap.add_argument("--only", help="comma-separated kernel names (default: all)")
    ap.add_argument("--no-triton", action="store_true", help="time torch only")
    opt = ap.parse_args()

    try:
        import torch
        triton, tk = define_kernels()
    except ImportError as e:
        print(f"peers: {e}: torch and triton are needed; nothing timed", file=sys.stderr)
        return 0
    if not torch.cuda.is_available():
        print("peers: no GPU: nothing timed", file=sys.stderr)
        return 0
    do_bench = triton.testing.do_bench
    device = torch.cuda.get_device_name()
    only = set(opt.only.split(",")) if opt.only else None
    gen = torch.Generator(device="cuda")
    gen.manual_seed(1234)

    rows, failed = [], 0
    print(f"{device}; torch {torch.__version__}, triton {triton.__version__}; "
          "do_bench medians")
    print(f"{'kernel':<15} {'size':<16} {'impl':<7} {'ms':>9} {'perf':>15}  what")
    for w in WORKLOADS:
        if only and w["kernel"] not in only:
            continue
        amount, scale, unit = work(w)
        try:
            tfn, twhat, xfn, xwhat, check = make(w, torch, triton, tk, gen)
        except torch.cuda.OutOfMemoryError as e:
            print(f"peers: {w['kernel']} {w['size']}: {e}: skipped", file=sys.stderr)
            continue
        impls = [("torch", twhat, tfn, None)]
        if not opt.no_triton and xfn is not None:
            try:
                ok, detail = check()
            except Exception as e:  # a Triton compile error must not end the whole table
                ok, detail = False, f"{type(e).__name__}: {e}".splitlines()[0]
            if not ok:
                failed += 1
                print(f"peers: {w['kernel']} {w['size']}: triton check FAILED: {detail}",
                      file=sys.stderr)
            impls.append(("triton", xwhat, xfn, (ok, detail)))
        for impl, what, fn, chk in impls:
            try:
                ms = do_bench(fn, warmup=25, rep=100, return_mode="median")
            except Exception as e:
                print(f"peers: {w['kernel']} {w['size']} {impl}: {type(e).__name__}: "
                      f"{str(e).splitlines()[0] if str(e) else ''}: skipped", file=sys.stderr)
                continue
            perf = amount / (ms * scale)
            status = "reference" if chk is None else ("ok" if chk[0] else "FAIL: " + chk[1])
            print(f"{w['kernel']:<15} {w['size']:<16} {impl:<7} {ms:9.3f} "
                  f"{perf:10.2f} {unit:<7} {what}{'' if status in ('ok', 'reference') else '  ' + status}")
            sys.stdout.flush()
            rows.append(dict(device=device, kernel=w["kernel"], size=w["size"], impl=impl,
                             what=what, ms=f"{ms:.5f}", unit=unit, perf=f"{perf:.3f}",
                             check=status))
        del tfn, xfn, check, impls
        torch.cuda.empty_cache()
    set_tf32(torch, False)

    if opt.csv:
        with open(opt.csv, "w", newline="") as f:
            cw = csv.DictWriter(f, fieldnames=["device", "kernel", "size", "impl", "what", "ms",
                                               "unit", "perf", "check"])
            cw.writeheader()
            cw.writerows(rows)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
