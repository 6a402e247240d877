#!/usr/bin/env python3
"""assume_sweep.py: every kernel whose file states alignment facts, timed with and without them.

    python3 bench/assume_sweep.py [--arch ARCH] [--size N] [FILE.tile ...]
    python3 bench/assume_sweep.py --files DIR [--arch ARCH] [FILE.tile ...]

For each kernel of the files (default: examples/*.tile and tests/gpu/kernels/*.tile) that holds
a fact of the form `NAME % NUMBER == 0` in an assume, writes the kernel alone twice (the file's
constants kept): as written, and with those facts removed (`A % 8 == 0` goes from a conjunction,
an assume left empty goes; `N <= BN`, `HW % IW == 0` stay: the kernels need them). Then
build/tilec-tune times each, one after the other so that no two share the GPU (random inputs,
every size N (default 4096), or N * N, N / 16, N / 64 where the kernel's largest tensor has rank
1, 3 or 4; scalars 1; median of 20 launches), and the script prints one line per kernel, `with / without` (below 1: the facts made it faster), and the largest ratio. A kernel that
does not compile or run at those sizes either way is listed as such; one that compiles only with
its facts counts as made faster by them. Needs a GPU and ptxas.

With --files DIR: each whole file (default: examples/*.tile) that states such a fact is written
to DIR without its facts and compiled to DIR/NAME.ptx, and nothing is timed; then
`build/bench/bench --ptx-dir DIR` against `--ptx-dir build/examples/ARCH` compares the benchmark
rows of the examples without and with them."""
import os
import re
import subprocess
import sys
import tempfile

FACT = r"[A-Za-z_][A-Za-z_0-9]* % [0-9][0-9]* == 0"


def strip_facts(text):
    out = []
    for line in text.split("\n"):
        if "assume(" in line:
            line = re.sub(r" *&& *" + FACT, "", line)
            line = re.sub(FACT + r" *&& *", "", line)
            if re.match(r"^ *assume\(" + FACT + r"\);", line):
                continue
        out.append(line)
    return "\n".join(out)


def kernels_of(text):
    """(name, text) of each kernel: from its `kernel` line to the `}` that ends it, with the
    file's lines outside any kernel (constants, flags) in front."""
    lines = text.split("\n")
    outside, kernels, cur = [], [], None
    for line in lines:
        m = re.match(r"^kernel\s+([A-Za-z_][A-Za-z_0-9]*)", line)
        if m and cur is None:
            cur = [m.group(1), [line]]
            continue
        if cur is not None:
            cur[1].append(line)
            if line == "}":
                kernels.append((cur[0], "\n".join(cur[1])))
                cur = None
        else:
            outside.append(line)
    head = "\n".join(l for l in outside if l.startswith("const ") or l.startswith("// flags:"))
    return [(n, head + "\n" + k + "\n") for n, k in kernels]


def sizes_of(ktext, consts, n):
    sig = ktext[ktext.index("kernel"):]
    sig = sig[:sig.index("{")]
    names, rank = [], 1
    for dims in re.findall(r"\[([^\]]*)\]", sig):
        ds = [d.strip() for d in dims.split(",")]
        rank = max(rank, len(ds))
        for d in ds:
            if re.fullmatch(r"[A-Za-z_][A-Za-z_0-9]*", d) and d not in consts and d not in names:
                names.append(d)
    v = {1: n * n, 2: n, 3: n // 16}.get(rank, n // 64)
    return ",".join("%s=%d" % (n, v) for n in names)


def time_one(tune, tilec, arch, path, kernel, sizes):
    if not sizes:
        return None, "no sizes"
    cmd = [tune, "--kernel", kernel, "--sizes", sizes, "--arch=" + arch, "--tilec", tilec,
           "--reps", "20", "--no-progress", path]
    try:
        r = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
    except subprocess.TimeoutExpired:
        return None, "timed out"
    m = re.search(r"\(defaults\)\s+\d+\s+[\d.]+\s+([\d.]+) ms", r.stdout)
    if m:
        return float(m.group(1)), ""
    why = (r.stdout + r.stderr).strip().split("\n")
    return None, next((l for l in why if "error" in l), why[-1] if why else "?")[:100]


def write_files(tilec, arch, out, files):
    """Each file with a fact, without its facts, as OUT/NAME.tile and OUT/NAME.ptx."""
    os.makedirs(out, exist_ok=True)
    for f in files:
        text = open(f).read()
        if not re.search(r"assume\(.*" + FACT, text):
            continue
        name = os.path.basename(f)[:-5]
        path = os.path.join(out, name + ".tile")
        open(path, "w").write(strip_facts(text))
        r = subprocess.run([tilec, "--arch=" + arch, path, "-o", os.path.join(out, name + ".ptx")],
                           capture_output=True, text=True)
        if r.returncode == 0:
            print(name)
        else:
            print("assume_sweep: %s does not compile without its facts: %s" % (name, r.stderr.strip().split("\n")[0]),
                  file=sys.stderr)


def main():
    args = sys.argv[1:]
    arch, size, files_dir = "sm_90a", 4096, None
    while args and args[0].startswith("--"):
        if args[0] == "--arch":
            arch = args[1]
        elif args[0] == "--size":
            size = int(args[1])
        elif args[0] == "--files":
            files_dir = os.path.abspath(args[1])
        else:
            sys.exit("usage: assume_sweep.py [--arch ARCH] [--size N | --files DIR] [FILE.tile ...]")
        args = args[2:]
    os.chdir(os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
    files = args or sorted(
        [os.path.join("examples", f) for f in os.listdir("examples") if f.endswith(".tile")] +
        [os.path.join("tests/gpu/kernels", f) for f in os.listdir("tests/gpu/kernels") if f.endswith(".tile")])
    tune, tilec = os.path.abspath("build/tilec-tune"), os.path.abspath("build/tilec")
    if files_dir:
        write_files(tilec, arch, files_dir, args or sorted(
            os.path.join("examples", f) for f in os.listdir("examples") if f.endswith(".tile")))
        return
    tmp = tempfile.mkdtemp(prefix="assume-sweep.")
    work = []
    for f in files:
        text = open(f).read()
        consts = set(re.findall(r"^const\s+([A-Za-z_][A-Za-z_0-9]*)", text, re.M))
        for name, ktext in kernels_of(text):
            if not re.search(r"assume\(.*" + FACT, ktext):
                continue
            base = os.path.join(tmp, os.path.basename(f)[:-5] + "." + name)
            open(base + ".with.tile", "w").write(ktext)
            open(base + ".without.tile", "w").write(strip_facts(ktext))
            work.append((f, name, base, sizes_of(ktext, consts, size)))
    worst, timed, faster_only_with, neither = 0.0, 0, 0, 0
    print("%-44s %-26s %10s %10s %8s" % ("kernel", "sizes", "with ms", "without ms", "ratio"), flush=True)
    for f, name, base, sizes in work:
        w, why_w = time_one(tune, tilec, arch, base + ".with.tile", name, sizes)
        wo, why_wo = time_one(tune, tilec, arch, base + ".without.tile", name, sizes)
        label = os.path.basename(f)[:-5] + ":" + name
        if w is not None and wo is not None:
            timed += 1
            worst = max(worst, w / wo)
            print("%-44s %-26s %10.4f %10.4f %8.3f" % (label, sizes[:26], w, wo, w / wo), flush=True)
        elif w is not None:
            faster_only_with += 1
            print("%-44s %-26s %10.4f %10s %8s  (without: %s)" % (label, sizes[:26], w, "-", "-", why_wo), flush=True)
        else:
            neither += 1
            print("%-44s %-26s %10s %10s %8s  (%s)" % (label, sizes[:26], "-", "-", "-", why_w), flush=True)
    print("%d kernels timed both ways, largest with/without %.3f; %d run only with their facts; "
          "%d not run at these sizes" % (timed, worst, faster_only_with, neither))


if __name__ == "__main__":
    main()
