#!/bin/sh
# tests/sanitize-run.sh BUILD PROG...: what `make check-sanitize` and `make run-sanitize` run.
# Every GPU test program runs under compute-sanitizer once per tool and per arch, on its small
# cases (TILEC_TEST_SMALL=1: every kernel and code path at small sizes, since the tools slow
# kernels down 10 to 100 times), with BUILD/examples (tilec's default arch) or BUILD/examples/ARCH
# as its kernel directory. A run passes when the tool reports nothing -- memcheck, synccheck and
# initcheck `ERROR SUMMARY: 0 errors`; racecheck, reporting every hazard, `RACECHECK SUMMARY: 0
# hazards displayed (0 errors, 0 warnings)` -- and the program's own checks pass. The last line,
# `N passed, M failed[, K skipped]`, counts runs (program x tool x arch). Without a CUDA driver
# every run is skipped; an sm_90a run needs an sm_90 device.
#
# Environment (lists are space-separated):
#   SANITIZE_TOOLS     tools to run        (memcheck racecheck synccheck initcheck)
#   SANITIZE_ARCHS     archs to run        (default sm_90a; "default" is BUILD/examples)
#   SANITIZE_JOBS      runs at once        (4: the tools cost CPU time more than GPU time)
#   SANITIZE_TIMEOUT   seconds for one run (300)
#   COMPUTE_SANITIZER  the tool            (else compute-sanitizer on PATH, in $CUDA_HOME/bin
#                                           or /usr/local/cuda/bin)
# Logs: BUILD/sanitize/ARCH/TOOL/PROG.log, with the verdict in PROG.log.result.
cd "$(dirname "$0")/.." || exit 2

# The log of one run; its verdict goes beside it.
log_of() {
	echo "$SANITIZE_B/sanitize/$2/$1/$(basename "$3").log"
}

# `--one TOOL ARCH PROG`: one run, its verdict printed and written to LOG.result.
if [ "$1" = --one ]; then
	tool=$2 arch=$3 prog=$4
	log=$(log_of "$tool" "$arch" "$prog")
	dir=$SANITIZE_B/examples
	[ "$arch" = default ] || dir=$dir/$arch
	mkdir -p "$(dirname "$log")" || exit 2
	verdict() {
		printf '%s %s %s %s: %s (%s s)\n' "$1" "$tool" "$arch" "$(basename "$prog")" "$2" "$secs" | tee "$log.result"
		exit 0
	}
	secs=0
	[ -d "$dir" ] || verdict FAIL "no $dir: build it with make check-sanitize (or make all ARCH=$arch)"
	set -- --tool "$tool" --error-exitcode 86
	[ "$tool" = racecheck ] && set -- "$@" --racecheck-report hazard
	limit=
	command -v timeout >/dev/null 2>&1 && limit="timeout -k 10 $SANITIZE_T"
	start=$(date +%s)
	TILEC_TEST_SMALL=1 $limit "$SANITIZE_CS" "$@" "$prog" "$dir" >"$log" 2>&1
	rc=$?
	secs=$(($(date +%s) - start))
	# ERROR SUMMARY: N errors; RACECHECK SUMMARY: N hazards displayed (E errors, W warnings),
	# each noun singular for 1
	errors=$(sed -n 's/.*ERROR SUMMARY: \([0-9][0-9]*\) error.*/\1/p' "$log" | tail -n 1)
	hazards=$(sed -n 's/.*RACECHECK SUMMARY: \([0-9][0-9]*\) hazards\{0,1\} displayed (\([0-9][0-9]*\) errors\{0,1\}, \([0-9][0-9]*\) warnings\{0,1\}).*/\1 \2 \3/p' "$log" | tail -n 1)
	esum=$(grep 'ERROR SUMMARY' "$log" | tail -n 1 | sed 's/^=* *//')
	rsum=$(grep 'RACECHECK SUMMARY' "$log" | tail -n 1 | sed 's/^=* *//')
	own=$(grep -E '^[0-9]+ passed, [0-9]+ failed' "$log" | tail -n 1)
	[ "$rc" -eq 124 ] || [ "$rc" -eq 137 ] && verdict FAIL "stopped after $SANITIZE_T s (SANITIZE_TIMEOUT)"
	if [ "$tool" = racecheck ] && [ -n "$hazards" ]; then
		set -- $hazards
		[ "$1$2$3" = 000 ] || verdict FAIL "$rsum"
	elif [ -z "$errors" ]; then
		verdict FAIL "no summary line from compute-sanitizer (exit status $rc)"
	fi
	[ -z "$errors" ] || [ "$errors" -eq 0 ] || verdict FAIL "$esum"
	[ -n "$own" ] || verdict FAIL "the program printed no result line (exit status $rc)"
	set -- $own
	[ "${3%,}" -eq 0 ] || verdict FAIL "its own checks: $own"
	case $own in *skipped*) verdict skip "$own" ;; esac
	[ "$rc" -eq 0 ] || verdict FAIL "exit status $rc after $own"
	verdict ok "$own"
fi

have_driver() {
	for f in /usr/lib/x86_64-linux-gnu/libcuda.so.1 /usr/lib64/libcuda.so.1 \
	         /usr/lib/libcuda.so.1 /usr/lib/wsl/lib/libcuda.so.1; do
		[ -e "$f" ] && return 0
	done
	{ ldconfig -p || /sbin/ldconfig -p; } 2>/dev/null | grep -q 'libcuda\.so\.1'
}

[ $# -ge 2 ] || { echo "usage: tests/sanitize-run.sh BUILD PROG..." >&2; exit 2; }
SANITIZE_B=$1
shift
tools=${SANITIZE_TOOLS:-memcheck racecheck synccheck initcheck}
archs=${SANITIZE_ARCHS:-default sm_90a}
jobs=${SANITIZE_JOBS:-4}
SANITIZE_T=${SANITIZE_TIMEOUT:-300}
SANITIZE_CS=${COMPUTE_SANITIZER:-$(command -v compute-sanitizer)}
for cs in "${CUDA_HOME:+$CUDA_HOME/bin/compute-sanitizer}" /usr/local/cuda/bin/compute-sanitizer; do
	[ -z "$SANITIZE_CS" ] && [ -n "$cs" ] && [ -x "$cs" ] && SANITIZE_CS=$cs
done
export SANITIZE_B SANITIZE_T SANITIZE_CS

# The runs, program by program in the order given (the Makefile names the longest first, so the
# last runs to start are short ones).
runs=$(for p in "$@"; do for t in $tools; do for a in $archs; do echo "$t $a $p"; done; done; done)
total=$(echo "$runs" | grep -c .)

if ! have_driver; then
	echo "sanitize-run: no CUDA driver here: the $total runs are skipped"
	echo "0 passed, 0 failed, $total skipped"
	exit 0
fi
if [ ! -x "$SANITIZE_CS" ]; then
	echo "sanitize-run: compute-sanitizer not found (set COMPUTE_SANITIZER, or put the CUDA toolkit's bin on PATH)"
	echo "0 passed, $total failed"
	exit 1
fi
# sm_90a kernels load only on an sm_90 device.
cap=$(nvidia-smi --query-gpu=compute_cap --format=csv,noheader 2>/dev/null | head -n 1)
echo "sanitize-run: $("$SANITIZE_CS" --version 2>/dev/null | grep -i version | head -n 1), device compute capability ${cap:-unknown}"
echo "sanitize-run: $total runs, $jobs at a time, tools: $tools; archs: $archs"
todo=$(echo "$runs" | while read -r t a p; do
	rm -f "$(log_of "$t" "$a" "$p").result"
	case $a in sm_90a) [ -n "$cap" ] && [ "$cap" != 9.0 ] && continue ;; esac
	echo "$t $a $p"
done)
self=$(pwd)/tests/sanitize-run.sh
[ -n "$todo" ] && echo "$todo" | xargs -P "$jobs" -L 1 sh "$self" --one

pass=0 fail=0 skip=0
while read -r t a p; do
	log=$(log_of "$t" "$a" "$p")
	if [ ! -f "$log.result" ]; then
		case $a in sm_90a) [ -n "$cap" ] && [ "$cap" != 9.0 ] && { skip=$((skip + 1)); continue; } ;; esac
		echo "FAIL $t $a $(basename "$p"): no verdict (see $log)"
		fail=$((fail + 1))
		continue
	fi
	case $(cat "$log.result") in
	ok*) pass=$((pass + 1)) ;;
	skip*) skip=$((skip + 1)) ;;
	*)
		fail=$((fail + 1))
		echo "== $(cat "$log.result")"
		echo "   log: $log"
		grep -m 1 'TILEC_TEST_SEED=' "$log" | sed 's/^/   /'
		grep '^=========' "$log" | grep -v -e 'COMPUTE-SANITIZER' -e 'SUMMARY' | head -n 20 | sed 's/^/   /'
		grep '^FAIL' "$log" | head -n 5 | sed 's/^/   /'
		;;
	esac
done <<EOF
$runs
EOF
if [ -n "$cap" ] && [ "$cap" != 9.0 ]; then
	case " $archs " in *" sm_90a "*) echo "sanitize-run: the device is not sm_90 (compute capability $cap): sm_90a runs skipped" ;; esac
fi
if [ "$skip" -gt 0 ]; then echo "$pass passed, $fail failed, $skip skipped"; else echo "$pass passed, $fail failed"; fi
[ "$fail" -eq 0 ]
