#!/bin/sh
# run.sh: what `make bench` (and, with --all, `make bench-all`) runs.
#
#   bench/run.sh [--all] [BUILD [PTXDIR]]
#
# 1. compile time of every example: build/tilec alone, and ptxas on the PTX it wrote (no GPU
#    needed);
# 2. where a GPU is, build/bench/bench: each example kernel against cuBLAS or a device copy,
#    written to BUILD/bench/tilec.csv;
# 3. with --all, bench/peers.py (torch and Triton on the same workloads) into BUILD/bench/peers.csv,
#    then one merged table (bench/merge.py) and BUILD/bench/ratios.svg (bench/plot.py), and the
#    8-bit products against torch (bench/mm8_torch.py) into BUILD/bench/mm8.txt.
# PTXDIR defaults to BUILD/examples, or BUILD/examples/$ARCH when ARCH is set (as make does).

cd "$(dirname "$0")/.." || exit 2
all=0
if [ "$1" = "--all" ]; then all=1; shift; fi
B=${1:-build}
PTXDIR=${2:-$B/examples${ARCH:+/$ARCH}}
OUT=$B/bench
mkdir -p "$OUT/compile" || exit 2

# The bench programs link libcuda; without a driver they start only with the toolkit's stub
# (which then fails cuInit, so the GPU part says it skipped). Never shadow a real driver.
have_driver() {
	for f in /usr/lib/x86_64-linux-gnu/libcuda.so.1 /usr/lib64/libcuda.so.1 \
	         /usr/lib/libcuda.so.1 /usr/lib/wsl/lib/libcuda.so.1; do
		[ -e "$f" ] && return 0
	done
	{ ldconfig -p || /sbin/ldconfig -p; } 2>/dev/null | grep -q 'libcuda\.so\.1'
}
gpu=1
if ! have_driver; then
	gpu=0
	stub=${CUDA_HOME:-/usr/local/cuda}/lib64/stubs/libcuda.so
	if [ -e "$stub" ]; then
		case $OUT in /*) dir=$OUT/cuda-stub ;; *) dir=$PWD/$OUT/cuda-stub ;; esac
		mkdir -p "$dir" && ln -sf "$stub" "$dir/libcuda.so.1"
		LD_LIBRARY_PATH=$dir${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
		export LD_LIBRARY_PATH
	fi
fi

ptxas=${TILEC_PTXAS:-$(command -v ptxas || echo "${CUDA_HOME:-/usr/local/cuda}/bin/ptxas")}
echo "== compile time"
"$B/bench/compile_speed" --tilec "$B/tilec" --ptxas "$ptxas" --arch "${ARCH:-sm_90a}" \
	--out "$OUT/compile" --csv "$OUT/compile.csv" examples/*.tile || status=1

echo "== kernels ($PTXDIR)"
if [ $gpu = 0 ]; then
	echo "bench: no CUDA driver here: kernel timings skipped (they need a GPU)"
	exit ${status:-0}
fi
rm -f "$OUT/tilec.csv"
"$B/bench/bench" --ptx-dir "$PTXDIR" --csv "$OUT/tilec.csv" || status=1
[ $all = 1 ] || exit ${status:-0}

echo "== torch and Triton"
python3 bench/peers.py --csv "$OUT/peers.csv" || status=1
echo "== 8-bit products against torch._scaled_mm and torch._int_mm"
python3 bench/mm8_torch.py "$PTXDIR" | tee "$OUT/mm8.txt" || status=1
echo "== merged"
python3 bench/merge.py "$OUT/tilec.csv" "$OUT/peers.csv" --compile "$OUT/compile.csv" | tee "$OUT/merged.md"
python3 bench/plot.py "$OUT/tilec.csv" "$OUT/peers.csv" -o "$OUT/ratios.svg" &&
	echo "bench: wrote $OUT/merged.md and $OUT/ratios.svg"
exit ${status:-0}
