#!/bin/sh
# run.sh BUILD_DIR: runs every CPU unit test program (BUILD_DIR/tests/unit/NAME, built by make)
# and sums their `ok ...` / `FAIL ...` lines. A program that dies or exits non-zero without a
# FAIL line counts as one failure. Builds nothing. Last line: `N passed, M failed`.

B=${1:-build}
dir=$B/tests/unit
passed=0 failed=0

# Without a driver the programs cannot start (they link libcuda): use the toolkit's stub, which
# make links as BUILD_DIR/cuda-stub/libcuda.so.1, unless a real libcuda.so.1 is installed.
if ! { ldconfig -p || /sbin/ldconfig -p; } 2>/dev/null | grep -q 'libcuda\.so\.1' &&
   [ -e "$B/cuda-stub/libcuda.so.1" ]; then
	LD_LIBRARY_PATH=$(cd "$B/cuda-stub" && pwd)${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
	export LD_LIBRARY_PATH
fi

out=$(mktemp "${TMPDIR:-/tmp}/tilert-unit.XXXXXX") || exit 2
trap 'rm -f "$out"' EXIT INT TERM

found=0
for prog in "$dir"/*; do
	[ -f "$prog" ] && [ -x "$prog" ] || continue
	case $prog in *.o|*.d) continue ;; esac
	found=1
	name=$(basename "$prog")
	if command -v timeout >/dev/null 2>&1; then
		timeout 60 "$prog" >"$out" 2>&1
	else
		"$prog" >"$out" 2>&1
	fi
	status=$?
	p=$(grep -c '^ok ' "$out")
	f=$(grep -c '^FAIL' "$out")
	grep '^FAIL' "$out" | sed "s/^/$name: /"
	if [ "$status" -ne 0 ] && [ "$f" -eq 0 ]; then
		echo "FAIL $name: exited with status $status after $p checks"
		tail -n 5 "$out" | sed 's/^/    /'
		f=1
	fi
	if [ "$p" -eq 0 ] && [ "$f" -eq 0 ]; then
		p=1   # a program with no check lines that exits 0 is one passing test
	fi
	echo "$name: $p passed, $f failed"
	passed=$((passed + p)) failed=$((failed + f))
done
if [ "$found" -eq 0 ]; then
	echo "FAIL no unit test programs in $dir (build them with make)"
	failed=1
fi
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
