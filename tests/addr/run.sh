#!/bin/sh
# tests/addr/run.sh [BUILD]: base + offset addressing (compiler/addrsplit.c).
#   unit       BUILD/tests/addr/test_addrsplit: the pass on hand-built code (wrap, redefinition,
#              guards, large and negative offsets, one base, hoisting, sharing)
#   bound      for every example and arch (ARCHS): address instructions per memory access, counted
#              in the PTX by count.sh, at most 1.2 (1 where no share or hoist is refused for the
#              occupancy it would cost; docs/internals.md, "Address splitting", says why), and fewer than with
#              -fno-addr-split; the cases of known-gaps.txt that go over 1.2 print KNOWN and count
#              as skipped
#   one base   tests/addr/smem16.tile: its 16+ unrolled shared accesses each way use one base
#              (one for the stores, one for the loads: one base for both would live through the
#              peak, where the 64 stored values are), with -fno-addr-split they do not
#   peak       for every example and GPU test kernel on sm_80, sm_90 and sm_90a: the register
#              demand tilec predicts (--report=json's peak_demand) costs no block per
#              multiprocessor with the pass that it does not cost without (the pass weighs each
#              longer life against the room the occupancy leaves)
#   ptxas      the addr/*.tile kernels assemble (when ptxas is found)
# Prints one line per check, then `N passed, M failed`.
cd "$(dirname "$0")/../.." || exit 2
B=${1:-build}
tilec=$B/tilec
archs=${ARCHS:-"sm_80 sm_86 sm_89 sm_90 sm_90a"}
passed=0 failed=0 skipped=0
ok() { echo "ok $1"; passed=$((passed + 1)); }
bad() { echo "FAIL $1: $2"; failed=$((failed + 1)); }

tmp=$(mktemp -d "${TMPDIR:-/tmp}/tilec-addr.XXXXXX") || exit 2
trap 'rm -rf "$tmp"' EXIT INT TERM

# unit (links libcuda through libtilert: the stub lets it start without a driver)
if [ -e "$B/cuda-stub/libcuda.so.1" ] && ! { ldconfig -p || /sbin/ldconfig -p; } 2>/dev/null | grep -q 'libcuda\.so\.1'; then
	LD_LIBRARY_PATH=$(cd "$B/cuda-stub" && pwd)${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
	export LD_LIBRARY_PATH
fi
if [ -x "$B/tests/addr/test_addrsplit" ]; then
	"$B/tests/addr/test_addrsplit" >"$tmp/unit" 2>&1
	rc=$?
	cat "$tmp/unit"
	passed=$((passed + $(grep -c '^ok ' "$tmp/unit")))
	failed=$((failed + $(grep -c '^FAIL ' "$tmp/unit")))
	[ $rc -ne 0 ] && ! grep -q '^FAIL ' "$tmp/unit" && bad "test_addrsplit" "exit status $rc"
else
	bad "test_addrsplit" "$B/tests/addr/test_addrsplit is not built"
fi

# bound
known() {   # known FILE ARCH: listed in known-gaps.txt
	grep -v '^#' tests/addr/known-gaps.txt | grep -q -x -e "$1 $2" -e "$1 \\*"
}
for arch in $archs; do
	for t in examples/*.tile; do
		name=$(basename "$t" .tile)
		# fp8 tensors start at sm_89
		case $arch in sm_80|sm_86) grep -q 'f8e[45]m[23]' "$t" && continue ;; esac
		if ! "$tilec" --arch="$arch" "$t" -o "$tmp/w.ptx" 2>"$tmp/err" ||
		   ! "$tilec" --arch="$arch" -fno-addr-split "$t" -o "$tmp/wo.ptx" 2>>"$tmp/err"; then
			bad "bound $name $arch" "tilec failed: $(head -n 3 "$tmp/err")"
			continue
		fi
		set -- $(sh tests/addr/count.sh "$tmp/w.ptx")
		mem=$1 addr=$2
		set -- $(sh tests/addr/count.sh "$tmp/wo.ptx")
		naive=$2
		if [ "$mem" -eq 0 ]; then
			bad "bound $name $arch" "no memory access found"
		elif [ $((5 * addr)) -gt $((6 * mem)) ] && known "$t" "$arch"; then
			echo "KNOWN bound $name $arch: $addr address instructions for $mem accesses (tests/addr/known-gaps.txt)"
			skipped=$((skipped + 1))
		elif [ $((5 * addr)) -gt $((6 * mem)) ]; then
			bad "bound $name $arch" "$addr address instructions for $mem accesses (bound: 1.2 each)"
		elif [ "$addr" -ge "$naive" ]; then
			bad "bound $name $arch" "$addr address instructions, no fewer than $naive with -fno-addr-split"
		elif known "$t" "$arch"; then
			ok "bound $name $arch (FIXED: remove it from tests/addr/known-gaps.txt)"
		else
			ok "bound $name $arch ($addr address instructions for $mem accesses; $naive without the pass)"
		fi
	done
done

# peak
demand() { sed -n 's/.*"kernel": "\([^"]*\)", "arch": "[^"]*", "threads": \([0-9]*\).*"peak_demand": \([0-9]*\).*/\1 \3 \2/p'; }
for arch in sm_80 sm_90 sm_90a; do
	for t in examples/*.tile tests/gpu/kernels/*.tile tests/addr/*.tile; do
		name=$(basename "$t" .tile)
		"$tilec" --arch="$arch" --no-ptxas --report=json "$t" -o "$tmp/p.ptx" >"$tmp/jw" 2>/dev/null &&
		"$tilec" --arch="$arch" --no-ptxas --report=json -fno-addr-split "$t" -o "$tmp/p.ptx" >"$tmp/jo" 2>/dev/null ||
			continue        # an arch the file's types need more than (fp8 before sm_89)
		demand <"$tmp/jw" >"$tmp/pw"
		demand <"$tmp/jo" >"$tmp/po"
		if [ ! -s "$tmp/pw" ]; then
			bad "peak $name $arch" "no kernel in --report=json"
			continue
		fi
		# blocks of T threads per multiprocessor at R registers: 64K registers, 2048 threads, 32 blocks
		raised=$(paste "$tmp/pw" "$tmp/po" | awk '
			function blocks(r, t,   b) { r = int((r + 7) / 8) * 8; b = int(65536 / (t * r));
				if (b > int(2048 / t)) b = int(2048 / t); return b > 32 ? 32 : b }
			blocks($2, $3) < blocks($5, $6) { printf "%s %d registers (%d without the pass) ", $1, $2, $5 }')
		[ -z "$raised" ] && ok "peak $name $arch ($(wc -l <"$tmp/pw") kernels)" ||
			bad "peak $name $arch" "the pass costs a block per multiprocessor: $raised"
	done
done

# one base
"$tilec" --arch=sm_90 tests/addr/smem16.tile -o "$tmp/s.ptx" 2>"$tmp/err" &&
"$tilec" --arch=sm_90 -fno-addr-split tests/addr/smem16.tile -o "$tmp/s0.ptx" 2>>"$tmp/err" ||
	bad "one base" "tilec failed: $(head -n 3 "$tmp/err")"
bases() { grep -E '^[[:space:]]*(@!?%p[0-9]+ )?(ld|st)\.shared' "$1" | sed 's/.*\[\(%r[0-9]*\).*/\1/' | sort -u | wc -l; }
accesses() { grep -cE '^[[:space:]]*(@!?%p[0-9]+ )?(ld|st)\.shared' "$1"; }
for kind in st ld; do
	n=$(grep -cE "^[[:space:]]*$kind\.shared" "$tmp/s.ptx")
	[ "$n" -ge 16 ] && ok "one base: smem16 makes $n unrolled $kind.shared accesses" ||
		bad "one base" "smem16 makes only $n $kind.shared accesses (want 16 or more)"
done
for kind in st ld; do
	nb=$(grep -E "^[[:space:]]*(@!?%p[0-9]+ )?$kind\.shared" "$tmp/s.ptx" | sed 's/.*\[\(%r[0-9]*\).*/\1/' | sort -u | wc -l)
	[ "$nb" -eq 1 ] && ok "one base: smem16's $kind.shared accesses use 1 base register" ||
		bad "one base" "smem16's $kind.shared accesses use $nb base registers"
done
nb0=$(bases "$tmp/s0.ptx")
[ "$nb0" -gt 1 ] && ok "one base: without the pass they use $nb0" ||
	bad "one base" "without the pass they use $nb0 base registers: the test shows nothing"

# ptxas on the test kernels
PTXAS=${PTXAS:-$(sed -n 's/^PTXAS = //p' config.mk 2>/dev/null)}
[ -x "$PTXAS" ] || PTXAS=$(command -v ptxas 2>/dev/null)
for t in tests/addr/*.tile; do
	name=$(basename "$t" .tile)
	for flag in "" -fno-addr-split; do
		if ! "$tilec" --arch=sm_90 $flag "$t" -o "$tmp/t.ptx" 2>"$tmp/err"; then
			bad "compile $name $flag" "$(head -n 3 "$tmp/err")"
		elif [ -z "$PTXAS" ]; then
			echo "skip ptxas $name: no ptxas"
		elif "$PTXAS" -arch=sm_90 "$tmp/t.ptx" -o "$tmp/t.cubin" 2>"$tmp/err"; then
			ok "ptxas $name $flag"
		else
			bad "ptxas $name $flag" "$(head -n 3 "$tmp/err")"
		fi
	done
done

if [ "$skipped" -gt 0 ]; then echo "$passed passed, $failed failed, $skipped skipped"
else echo "$passed passed, $failed failed"; fi
[ "$failed" -eq 0 ]
