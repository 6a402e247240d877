#!/bin/sh
# tests/gpu-run.sh EXDIR PROG...: what `make check-gpu` and `make run-gpu` run. Each GPU test
# program gets the directory of compiled kernels and ends with `N passed, M failed[, K skipped]`;
# this sums them into one last line. Without a CUDA driver the programs start on the toolkit's
# stub library (build/cuda-stub), fail cuInit and skip, saying so.
cd "$(dirname "$0")/.." || exit 2
exdir=$1
shift
have_driver() {
	for f in /usr/lib/x86_64-linux-gnu/libcuda.so.1 /usr/lib64/libcuda.so.1 \
	         /usr/lib/libcuda.so.1 /usr/lib/wsl/lib/libcuda.so.1; do
		[ -e "$f" ] && return 0
	done
	{ ldconfig -p || /sbin/ldconfig -p; } 2>/dev/null | grep -q 'libcuda\.so\.1'
}
if ! have_driver && [ -e build/cuda-stub/libcuda.so.1 ]; then
	LD_LIBRARY_PATH=$PWD/build/cuda-stub${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
	export LD_LIBRARY_PATH
	echo "gpu-run: no CUDA driver here: the GPU tests will skip"
fi
pass=0 fail=0 skip=0
tmp=$(mktemp "${TMPDIR:-/tmp}/tilec-gpu.XXXXXX") || exit 2
trap 'rm -f "$tmp"' EXIT INT TERM
for p in "$@"; do
	echo "== $p $exdir"
	"$p" "$exdir" >"$tmp" 2>&1
	rc=$?
	cat "$tmp"
	line=$(grep -E '^[0-9]+ passed, [0-9]+ failed' "$tmp" | tail -n 1)
	if [ -z "$line" ]; then
		echo "FAIL $p: no result line (exit status $rc)"
		fail=$((fail + 1))
		continue
	fi
	set -- $line
	pass=$((pass + $1)); fail=$((fail + ${3%,}))
	case $line in *skipped*) skip=$((skip + $5)) ;; esac
	[ "$rc" -ne 0 ] && [ "${3%,}" -eq 0 ] && { echo "FAIL $p: exit status $rc"; fail=$((fail + 1)); }
done
if [ "$skip" -gt 0 ]; then echo "$pass passed, $fail failed, $skip skipped"; else echo "$pass passed, $fail failed"; fi
[ "$fail" -eq 0 ]
