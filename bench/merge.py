#!/usr/bin/env python3
"""merge.py: one markdown table from bench.c's CSV (tilec and its C-callable reference) and
peers.py's CSV (torch and Triton), for docs/performance.md.

    merge.py TILEC.csv [PEERS.csv] [--compile COMPILE.csv]

Every ratio is other ms / tilec ms: above 1 means tilec is faster. Plain python3, no packages.
"""
import argparse
import csv
import os
import sys


def read_csv(path):
    if not path or not os.path.exists(path):
        return []
    with open(path, newline="") as f:
        return list(csv.DictReader(f))


def load(tilec_path, peers_path):
    """Rows keyed by (kernel, size), in bench.c's order, then rows only peers.py has.
    Each row: kernel, size, unit, tilec (dict or None), torch, triton (dicts or None)."""
    rows, index = [], {}

    def row_for(kernel, size, unit):
        key = (kernel, size)
        if key not in index:
            index[key] = dict(kernel=kernel, size=size, unit=unit, tilec=None, torch=None,
                              triton=None)
            rows.append(index[key])
        return index[key]

    for r in read_csv(tilec_path):
        row_for(r["kernel"], r["size"], r["unit"])["tilec"] = r
    for r in read_csv(peers_path):
        if r["impl"] in ("torch", "triton"):
            row_for(r["kernel"], r["size"], r["unit"])[r["impl"]] = r
    return rows


def ratio(other_ms, tilec):
    if not tilec or not other_ms:
        return None
    t = float(tilec["tilec_ms"])
    return float(other_ms) / t if t > 0 else None


def ratios(row):
    """(label, ratio) for each comparison present in the row."""
    t = row["tilec"]
    out = []
    if t:
        out.append(("reference", ratio(t["ref_ms"], t)))
    for impl in ("torch", "triton"):
        if row[impl]:
            out.append((impl, ratio(row[impl]["ms"], t)))
    return [(k, v) for k, v in out if v is not None]


def fmt_ms(x):
    return "—" if x is None or x == "" else f"{float(x):.3f}"


def fmt_ratio(x):
    return "—" if x is None else f"**{x:.2f}**" if x >= 1 else f"{x:.2f}"


def fmt_perf(value, unit):
    if value is None or value == "":
        return "—"
    v = float(value)
    return f"{v:.1f} {unit}" if unit == "TFLOP/s" else f"{v:.0f} {unit}"


def devices(rows):
    seen = {}
    for row in rows:
        for src in ("tilec", "torch", "triton"):
            if row[src]:
                seen.setdefault(row[src]["device"], set()).add(src)
    return seen


def kernel_table(rows):
    out = ["| kernel | size | tilec ms | tilec | regs (pred/ptxas) | C reference | ref ms "
           "| ref/tilec | torch ms | torch/tilec | Triton ms | Triton/tilec |",
           "|---|---|---:|---:|---:|---|---:|---:|---:|---:|---:|---:|"]
    for row in rows:
        t, to, tr = row["tilec"], row["torch"], row["triton"]
        unit = row["unit"]
        cells = [row["kernel"], row["size"]]
        if t:
            mark = "" if t["check"] == "ok" else " (check FAILED)"
            cells += [fmt_ms(t["tilec_ms"]) + mark, fmt_perf(t["tilec_perf"], unit),
                      f"{t['regs_pred']}/{t['regs_ptxas']}", t["reference"], fmt_ms(t["ref_ms"]),
                      fmt_ratio(ratio(t["ref_ms"], t))]
        else:
            cells += ["—", "—", "—", "—", "—", "—"]
        for p in (to, tr):
            if p:
                mark = "" if p["check"] in ("ok", "reference") else " (check FAILED)"
                cells += [fmt_ms(p["ms"]) + mark, fmt_ratio(ratio(p["ms"], t))]
            else:
                cells += ["—", "—"]
        out.append("| " + " | ".join(cells) + " |")
    return out


def compile_table(path):
    rows = read_csv(path)
    if not rows:
        return []
    out = [f"Compile time (best of {rows[0]['runs']} runs of the whole process, "
           f"--arch={rows[0]['arch']}):", "",
           "| example | tilec ms | ptxas ms | PTX lines |", "|---|---:|---:|---:|"]
    for r in rows:
        out.append(f"| {r['example']} | {fmt_ms(r['tilec_ms'])} | {fmt_ms(r['ptxas_ms'])} "
                   f"| {r['ptx_lines']} |")
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("tilec_csv")
    ap.add_argument("peers_csv", nargs="?")
    ap.add_argument("--compile", help="compile_speed's CSV: adds the compile-time table")
    opt = ap.parse_args()

    rows = load(opt.tilec_csv, opt.peers_csv)
    lines = []
    if rows:
        devs = devices(rows)
        names = ", ".join(f"{d} ({', '.join(sorted(s))})" for d, s in sorted(devs.items()))
        lines.append(f"Device: {names}.")
        if len(devs) > 1:
            lines.append("**Warning: the figures come from different devices; compare only "
                         "within one device.**")
        lines += ["", "Medians; a ratio is the other's time over tilec's: above 1 (bold) tilec "
                  "is faster. GEMM in TFLOP/s (2MNK), the others in GB/s of minimum DRAM traffic "
                  "(bytes read + written); the C reference of a memory-bound kernel is a "
                  "device-to-device copy that moves the same number of bytes.", ""]
        lines += kernel_table(rows)
    else:
        lines.append("No kernel timings (no CSV from bench or peers.py: no GPU?).")
    ct = compile_table(opt.compile)
    if ct:
        lines += [""] + ct
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    sys.exit(main())
