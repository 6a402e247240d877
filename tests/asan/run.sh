#!/bin/sh
# tests/asan/run.sh [BUILD_DIR]: tilec built with AddressSanitizer and UndefinedBehaviorSanitizer
# (BUILD_DIR/asan/tilec, tests/asan/asan.mk) over every .tile of the tree.
#
# Every examples/*.tile and tests/**/*.tile, for sm_80 and sm_90a, with the -D/--arch/--max-regs
# of its `// flags:` line, --report (so ptxas runs and its report is read); then the examples
# the way the other suites build them: other tile shapes and stage counts, -fno-addr-split,
# --emit=c for two architectures, --emit=meta, --dump=alloc. Compile errors are fine (tests/diag
# wants them); a sanitizer report, an internal error, a compiler bug the compiler reports (a
# race in its code, IR the verifier refuses: every run verifies the IR between passes), a
# crash or a hang fails. Leak checking stays on: tilec frees what it allocates, at exit too.
# Without the sanitized tilec (configure found no -fsanitize=address,undefined) it skips.
# Last line: `N passed, M failed[, K skipped]`.

cd "$(dirname "$0")/../.." || exit 2
B=${1:-build}
tilec=$PWD/$B/asan/tilec
TIMEOUT=${TIMEOUT:-120}

if [ ! -x "$tilec" ]; then
	echo "asan: $tilec is not built (no -fsanitize=address,undefined here): skipped"
	echo "0 passed, 0 failed, 1 skipped"
	exit 0
fi

# A report ends tilec with status 86, whatever kind it is; halt_on_error makes UBSan's fatal too
# (the build also has -fno-sanitize-recover). Stack traces go with every report.
ASAN_OPTIONS=exitcode=86:detect_leaks=1:abort_on_error=0:symbolize=1
UBSAN_OPTIONS=exitcode=86:halt_on_error=1:print_stacktrace=1
LSAN_OPTIONS=exitcode=86
export ASAN_OPTIONS UBSAN_OPTIONS LSAN_OPTIONS
TILEC_VERIFY_IR=1
export TILEC_VERIFY_IR

tmp=$(mktemp -d "${TMPDIR:-/tmp}/tilec-asan.XXXXXX") || exit 2
trap 'rm -rf "$tmp"' EXIT INT TERM
pass=0 fail=0

run() {
	if command -v timeout >/dev/null 2>&1; then
		timeout "$TIMEOUT" "$tilec" "$@"
	else
		"$tilec" "$@"
	fi
}

# One compilation: exit 0 or 1 with nothing from a sanitizer.
check() {   # label tilec-arguments...
	label=$1
	shift
	( cd "$tmp" && run "$@" ) >"$tmp/out" 2>"$tmp/err"
	rc=$?
	what=
	case $rc in
	0|1) ;;
	86) what="sanitizer report" ;;
	124) what="timed out after ${TIMEOUT}s" ;;
	*) what="exit status $rc" ;;
	esac
	if [ -z "$what" ] && grep -q 'Sanitizer\|runtime error:\|internal error\|compiler bug' "$tmp/err"; then
		what="sanitizer report, internal error or compiler bug"
	fi
	if [ -n "$what" ]; then
		echo "FAIL $label: $what"
		grep -m 8 'ERROR\|SUMMARY\|runtime error:\|internal error\|compiler bug\|^    #[0-3] ' "$tmp/err" | sed 's/^/    /'
		fail=$((fail + 1))
	else
		pass=$((pass + 1))
	fi
}

tiles=$(find examples tests -name '*.tile' | sort)
for f in $tiles; do
	flags=$(sed -n '1s|^// flags: *||p' "$f")
	for arch in sm_80 sm_90a; do
		# shellcheck disable=SC2086  # flags are words
		check "$f $arch" --report $flags --arch=$arch "$PWD/$f" -o "$tmp/out.ptx"
	done
done

# Shapes, stage counts and options of the examples (tests/gpu/mma_shapes.mk, tests/mma,
# tests/pipeline build them with these).
for shape in 64:32:32:2:128 128:256:32:3:256 32:512:16:2:256 256:128:32:3:256 64:64:16:4:64 \
             64:64:128:2:128 128:128:32:4:128; do
	set -- $(echo "$shape" | tr ':' ' ')
	for ex in matmul_f16 matmul_bf16 matmul_tf32; do
		for arch in sm_80 sm_90a; do
			check "$ex $shape $arch" --arch=$arch -D BM=$1 -D BN=$2 -D BK=$3 -D STAGES=$4 \
				-D THREADS=$5 "$PWD/examples/$ex.tile" -o "$tmp/out.ptx"
		done
	done
done
for st in 0 1 2 4; do
	for ex in matmul_f32 matmul_f16 matmul_tf32; do
		check "$ex STAGES=$st sm_90a" --arch=sm_90a -D STAGES=$st "$PWD/examples/$ex.tile" -o "$tmp/out.ptx"
	done
done
check "matmul_f16 BM=8" --arch=sm_90 -D BM=8 "$PWD/examples/matmul_f16.tile" -o "$tmp/out.ptx"
check "matmul_f16 BK=8" --arch=sm_90 -D BK=8 "$PWD/examples/matmul_f16.tile" -o "$tmp/out.ptx"
check "matmul_tf32 BK=4" --arch=sm_90 -D BK=4 "$PWD/examples/matmul_tf32.tile" -o "$tmp/out.ptx"
for f in examples/*.tile; do
	base=$(basename "$f" .tile)
	check "$base -fno-addr-split sm_90a" --arch=sm_90a -fno-addr-split "$PWD/$f" -o "$tmp/out.ptx"
	lo=sm_80
	grep -q 'f8e[45]m[23]' "$f" && lo=sm_89    # fp8 tensors start at sm_89
	check "$base --emit=c" --emit=c --arch=$lo,sm_90a "$PWD/$f" -o "$tmp/$base.c"
	check "$base --emit=meta" --emit=meta --arch=sm_90a "$PWD/$f" -o "$tmp/$base.meta"
	check "$base --dump=alloc" --no-ptxas --dump=alloc "$PWD/$f" -o "$tmp/out.ptx"
done

echo "$pass passed, $fail failed"
[ $fail -eq 0 ]
