#!/bin/sh
# tests/ptx/same_ptx.sh OLD_TILEC NEW_TILEC: the PTX two builds of tilec write, compared byte for
# byte, for a change that must not alter code generation (a refactoring, a new check).
#
# Inputs: every examples/*.tile, tests/*/*.tile that compiles and tests/gpu/kernels/*.tile, for
# ARCHS (default sm_80 sm_90 sm_90a), with and without -fno-addr-split, plus the stage counts
# (0 to 4) and tile shapes the pipeline tests use. Not part of `make check` (it needs a second
# build); run it by hand:
#
#   git archive main | tar -x -C /tmp/old && (cd /tmp/old && ./configure && make build/tilec)
#   sh tests/ptx/same_ptx.sh /tmp/old/build/tilec build/tilec
#
# Prints one line per input whose output differs (and the first lines of the diff), then
# `N passed, M failed`. An input both builds reject counts as the same.

old=${1:?usage: same_ptx.sh OLD_TILEC NEW_TILEC}
new=${2:?usage: same_ptx.sh OLD_TILEC NEW_TILEC}
cd "$(dirname "$0")/../.." || exit 2
archs=${ARCHS:-"sm_80 sm_90 sm_90a"}
tmp=$(mktemp -d "${TMPDIR:-/tmp}/tilec-same.XXXXXX") || exit 2
trap 'rm -rf "$tmp"' EXIT INT TERM
pass=0 fail=0

# same NAME FLAGS...: compiles with both and compares the PTX and the exit status.
same() {
	name=$1; shift
	"$old" "$@" -o "$tmp/old.ptx" >/dev/null 2>"$tmp/old.err"; ro=$?
	"$new" "$@" -o "$tmp/new.ptx" >/dev/null 2>"$tmp/new.err"; rn=$?
	if [ $ro -ne $rn ]; then
		echo "FAIL $name: exit status $ro before, $rn after"
		sed -n '1,3s/^/    /p' "$tmp/new.err"
		fail=$((fail + 1))
	elif [ $ro -eq 0 ] && ! cmp -s "$tmp/old.ptx" "$tmp/new.ptx"; then
		echo "FAIL $name: PTX differs"
		diff "$tmp/old.ptx" "$tmp/new.ptx" | sed -n '1,10s/^/    /p'
		fail=$((fail + 1))
	else
		pass=$((pass + 1))
	fi
	rm -f "$tmp/old.ptx" "$tmp/new.ptx"
}

for arch in $archs; do
	for t in examples/*.tile tests/*/*.tile tests/gpu/kernels/*.tile; do
		[ -f "$t" ] || continue
		flags=$(sed -n '1s|^// flags: *||p' "$t")
		# shellcheck disable=SC2086  # flags are words
		same "$t $arch" --arch="$arch" $flags "$t"
		# shellcheck disable=SC2086
		same "$t $arch -fno-addr-split" --arch="$arch" -fno-addr-split $flags "$t"
	done
	for s in 0 1 2 3 4; do
		for ex in matmul_f32 matmul_f16 matmul_bf16 matmul_tf32; do
			same "$ex STAGES=$s $arch" --arch="$arch" -D STAGES=$s "examples/$ex.tile"
			same "$ex STAGES=$s $arch -fno-addr-split" --arch="$arch" -fno-addr-split -D STAGES=$s \
				"examples/$ex.tile"
		done
	done
	same "matmul_tf32 small $arch" --arch="$arch" -D BM=128 -D BN=128 -D BK=32 -D THREADS=128 \
		examples/matmul_tf32.tile
	same "matmul_f16 small $arch" --arch="$arch" -D BM=128 -D BN=128 -D BK=32 -D THREADS=128 \
		examples/matmul_f16.tile
done

echo "$pass passed, $fail failed"
[ $fail -eq 0 ]
