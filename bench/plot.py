#!/usr/bin/env python3
"""plot.py: an SVG of the speed ratios in bench.c's and peers.py's CSVs, written as plain text
(no plotting package needed).

    plot.py TILEC.csv [PEERS.csv] [-o ratios.svg]

One group of bars per workload, one bar per comparison (C reference, torch, Triton), each the
other's time over tilec's on a log2 axis centred on 1: bars to the right mean tilec is faster.
"""
import argparse
import math
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from merge import load, ratios  # noqa: E402

COLOURS = {"reference": "#4c72b0", "torch": "#dd8452", "triton": "#55a868"}
LABELS = {"reference": "C reference (cuBLAS / copy)", "torch": "torch", "triton": "Triton"}
LEFT, RIGHT, TOP, BAR, GAP, WIDTH = 230, 60, 70, 12, 14, 900


def esc(s):
    return s.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def svg(rows):
    groups = [(f"{r['kernel']} {r['size']}", ratios(r)) for r in rows]
    groups = [(name, rs) for name, rs in groups if rs]
    values = [v for _, rs in groups for _, v in rs if v > 0]
    lo = 2.0 ** math.floor(math.log2(min(values + [0.5])))
    hi = 2.0 ** math.ceil(math.log2(max(values + [2.0])))
    plot_w = WIDTH - LEFT - RIGHT

    def x(v):
        v = min(max(v, lo), hi)
        return LEFT + plot_w * (math.log2(v) - math.log2(lo)) / (math.log2(hi) - math.log2(lo))

    height = TOP + sum(len(rs) * BAR + GAP for _, rs in groups) + 40
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{WIDTH}" height="{height}" '
           f'font-family="sans-serif" font-size="12">',
           f'<rect width="{WIDTH}" height="{height}" fill="white"/>',
           f'<text x="{LEFT}" y="20" font-size="15" font-weight="bold">'
           'Other time / tilec time (log scale; right of 1: tilec faster)</text>']
    lx = LEFT
    for key in ("reference", "torch", "triton"):
        out.append(f'<rect x="{lx}" y="32" width="12" height="12" fill="{COLOURS[key]}"/>')
        out.append(f'<text x="{lx + 16}" y="43">{esc(LABELS[key])}</text>')
        lx += 30 + 7 * len(LABELS[key])
    bottom = height - 30
    e = int(math.log2(lo))
    while 2.0 ** e <= hi:
        v = 2.0 ** e
        tx = x(v)
        colour, w = ("#000", 1.5) if e == 0 else ("#ccc", 1)
        out.append(f'<line x1="{tx:.1f}" y1="{TOP - 8}" x2="{tx:.1f}" y2="{bottom}" '
                   f'stroke="{colour}" stroke-width="{w}"/>')
        label = f"{v:g}" if v >= 1 else f"1/{1 / v:g}"
        out.append(f'<text x="{tx:.1f}" y="{bottom + 16}" text-anchor="middle">{label}</text>')
        e += 1
    y = TOP
    one = x(1.0)
    for name, rs in groups:
        mid = y + len(rs) * BAR / 2 + 4
        out.append(f'<text x="{LEFT - 8}" y="{mid:.1f}" text-anchor="end">{esc(name)}</text>')
        for key, v in rs:
            bx = x(v)
            left, w = min(one, bx), max(abs(bx - one), 1)
            out.append(f'<rect x="{left:.1f}" y="{y}" width="{w:.1f}" height="{BAR - 2}" '
                       f'fill="{COLOURS[key]}"><title>{esc(LABELS[key])}: {v:.2f}</title></rect>')
            tx, anchor = (bx + 4, "start") if v >= 1 else (bx - 4, "end")
            out.append(f'<text x="{tx:.1f}" y="{y + BAR - 3}" font-size="10" '
                       f'text-anchor="{anchor}">{v:.2f}</text>')
            y += BAR
        y += GAP
    out.append("</svg>")
    return "\n".join(out) + "\n"


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("tilec_csv")
    ap.add_argument("peers_csv", nargs="?")
    ap.add_argument("-o", "--output", default="ratios.svg")
    opt = ap.parse_args()
    rows = load(opt.tilec_csv, opt.peers_csv)
    if not any(ratios(r) for r in rows):
        print("plot: no ratios to plot (no tilec timings?)", file=sys.stderr)
        return 1
    with open(opt.output, "w") as f:
        f.write(svg(rows))
    return 0


if __name__ == "__main__":
    sys.exit(main())
