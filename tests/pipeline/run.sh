#!/bin/sh
# Pipelined loops: every example with pipeline(S) must compile, on every arch, to PTX with no
# .local array and to a 0-byte stack frame per ptxas; with -fno-const-reg-elim the same kernel
# must hold its stage array in .local (the pass, not luck, removes it). Also every stage count
# 1..4 of matmul_f32, and a 16-bit operand whose rows may be 2-byte aligned (ptxas accepts the
# PTX: no 2-byte cp.async), and the unrolled copies of a pipelined loop sharing one copy's shared
# memory. Usage: tests/pipeline/run.sh build/tilec
TILEC=${1:-build/tilec}
[ -d "$TILEC" ] && TILEC=$TILEC/tilec
PTXAS=${TILEC_PTXAS:-$(command -v ptxas || echo /usr/local/cuda/bin/ptxas)}
tmp=$(mktemp -d) || exit 2
trap 'rm -rf "$tmp"' EXIT
pass=0 fail=0
ok() { pass=$((pass + 1)); }
bad() { fail=$((fail + 1)); echo "FAIL $*"; }

check_clean() {   # name, ptx
	if grep -q '\.local' "$2"; then bad "$1: .local in the PTX"; return; fi
	"$PTXAS" -arch="$arch" -v "$2" -o "$tmp/out.cubin" >"$tmp/log" 2>&1 || { bad "$1: ptxas failed"; sed 's/^/    /' "$tmp/log"; return; }
	if grep -q 'bytes stack frame' "$tmp/log" && ! grep 'bytes stack frame' "$tmp/log" | grep -q '^ *0 bytes stack frame'; then
		bad "$1: $(grep 'bytes stack frame' "$tmp/log" | head -1)"
		return
	fi
	ok
}

for arch in sm_80 sm_86 sm_89 sm_90 sm_90a; do
	for f in $(grep -l 'pipeline(' examples/*.tile); do
		name=$(basename "$f" .tile)
		# fp8 tensors start at sm_89
		case $arch in sm_80|sm_86) grep -q 'f8e[45]m[23]' "$f" && continue ;; esac
		if ! "$TILEC" --arch=$arch "$f" -o "$tmp/$name.ptx" 2>"$tmp/err"; then
			bad "$name $arch: tilec failed"; cat "$tmp/err"; continue
		fi
		check_clean "$name $arch" "$tmp/$name.ptx"
		"$TILEC" --arch=$arch -fno-const-reg-elim "$f" -o "$tmp/$name.local.ptx" 2>/dev/null
		if grep -q '^\s*\.local .* tilec_arr' "$tmp/$name.local.ptx"; then ok; else bad "$name $arch -fno-const-reg-elim: no .local stage array"; fi
	done
	# f16 rows not known to be 4-byte aligned: that operand stays out (cp.async has no 2-byte form)
	if "$TILEC" --arch=$arch tests/diag/pipeline_unaligned.tile -o "$tmp/unaligned.ptx" 2>/dev/null; then
		check_clean "pipeline_unaligned $arch" "$tmp/unaligned.ptx"
	else
		bad "pipeline_unaligned $arch: tilec failed"
	fi
	# unrolled copies of a pipelined loop reuse its stage buffers: 9 copies need one copy's memory
	smem_of() { "$TILEC" --arch=$arch --report -D TAPS=$1 tests/pipeline/conv_taps.tile -o "$tmp/taps$1.ptx" 2>/dev/null |
		sed -n 's/^  shared memory *\([0-9]*\) bytes/\1/p'; }
	one=$(smem_of 1) nine=$(smem_of 3)
	if [ -n "$one" ] && [ "$one" = "$nine" ]; then
		check_clean "conv_taps $arch" "$tmp/taps3.ptx"
	else
		bad "conv_taps $arch: shared memory ${one:-?} bytes for one tap, ${nine:-?} for nine"
	fi
	for s in 1 2 3 4; do
		"$TILEC" --arch=$arch -D STAGES=$s examples/matmul_f32.tile -o "$tmp/s$s.ptx" || { bad "STAGES=$s $arch: tilec failed"; continue; }
		grep -q 'cp.async.wait_group' "$tmp/s$s.ptx" && ok || bad "STAGES=$s $arch: no cp.async pipeline"
		check_clean "matmul_f32 STAGES=$s $arch" "$tmp/s$s.ptx"
	done
done
echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
