#!/bin/sh
# tests/fuzz/run.sh [BUILD_DIR]: the fuzz targets in make check.
#
#   replay  every reproducer kept in tests/fuzz/regress/NAME/ runs through
#           BUILD_DIR/fuzz/replay/fuzz_NAME (the harness with the sanitizers, no libFuzzer):
#           each must finish without a report (one test a file)
#   smoke   each target BUILD_DIR/fuzz/fuzz_NAME (compile, meta, gen) fuzzes for
#           FUZZ_SMOKE_SECONDS (default 30) from the seeds of the tree (tests/fuzz/seeds.sh),
#           two at a time, with fixed libFuzzer seeds: a finding fails (one test a target;
#           the input is kept in the work directory printed, to move into regress/)
# What configure did not find (clang's libFuzzer, -fsanitize=address,undefined) is skipped.
# Last line: `N passed, M failed[, K skipped]`.

cd "$(dirname "$0")/../.." || exit 2
B=${1:-build}
seconds=${FUZZ_SMOKE_SECONDS:-30}
names="compile meta gen"
pass=0 fail=0 skip=0

ASAN_OPTIONS=exitcode=86:detect_leaks=1
UBSAN_OPTIONS=exitcode=86:halt_on_error=1:print_stacktrace=1
LSAN_OPTIONS=exitcode=86
export ASAN_OPTIONS UBSAN_OPTIONS LSAN_OPTIONS

tmp=$(mktemp -d "${TMPDIR:-/tmp}/tilec-fuzz.XXXXXX") || exit 2
keep=
trap '[ -n "$keep" ] || rm -rf "$tmp"' EXIT INT TERM

run_limited() {
	if command -v timeout >/dev/null 2>&1; then timeout 60 "$@"; else "$@"; fi
}

for name in $names; do
	replay=$B/fuzz/replay/fuzz_$name
	files=$(find "tests/fuzz/regress/$name" -type f 2>/dev/null | sort)
	[ -n "$files" ] || continue
	if [ ! -x "$replay" ]; then
		echo "skip replay $name: $replay is not built (no -fsanitize=address,undefined here)"
		skip=$((skip + 1))
		continue
	fi
	for f in $files; do
		if run_limited "$replay" "$f" >"$tmp/out" 2>&1; then
			pass=$((pass + 1))
		else
			echo "FAIL replay $f"
			grep -m 6 'ERROR\|SUMMARY\|runtime error:\|internal error\|^    #[0-3] ' "$tmp/out" | sed 's/^/    /'
			fail=$((fail + 1))
		fi
	done
done

if [ ! -x "$B/fuzz/fuzz_compile" ]; then
	echo "skip smoke: $B/fuzz/fuzz_NAME are not built (configure found no clang with libFuzzer)"
	skip=$((skip + 1))
else
	sh tests/fuzz/seeds.sh "$B/tilec" "$tmp/seeds" >/dev/null || { echo "FAIL seeds.sh"; fail=$((fail + 1)); }
	# Fixed seeds: a run explores the same inputs each time on the same build, so a failure
	# here reproduces; what another build reaches differs with its code.
	smoke() {
		sh tests/fuzz/fuzz.sh --seconds "$seconds" --seed 1 --work "$tmp/work" --seeds "$tmp/seeds" \
			--dict tests/fuzz/tile.dict "$B/fuzz" "$1" >"$tmp/$1.res" 2>&1
	}
	smoke compile &
	smoke meta &
	wait
	smoke gen
	for name in $names; do
		line=$(grep "^$name: " "$tmp/$name.res")
		echo "smoke $line"
		if grep -q "^total: .*, 0 findings" "$tmp/$name.res"; then
			pass=$((pass + 1))
		else
			echo "FAIL smoke $name:"
			sed -n '/^    /p' "$tmp/$name.res"
			grep -v "^$name: \|^total: \|^    " "$tmp/$name.res" | head -n 5 | sed 's/^/    /'
			echo "    (logs in $tmp/work/logs; the input is the file named above)"
			keep=1
			fail=$((fail + 1))
		fi
	done
fi

echo "$pass passed, $fail failed${skip:+, $skip skipped}" | sed 's/, 0 skipped$//'
[ $fail -eq 0 ]
