#!/bin/sh
# tests/addr/table.sh [TILEC] [ARCH]: the markdown table of docs/internals.md ("Address
# splitting"): per example, with and without -fno-addr-split, the PTX instruction count, the
# address instructions per memory access (count.sh) and ptxas' registers (`--report`; "-" when
# ptxas is not found).
cd "$(dirname "$0")/../.." || exit 2
tilec=${1:-build/tilec}
arch=${2:-sm_90}
tmp=$(mktemp -d "${TMPDIR:-/tmp}/tilec-table.XXXXXX") || exit 2
trap 'rm -rf "$tmp"' EXIT INT TERM
regs() { sed -n 's/^ *ptxas *\([0-9][0-9]*\) registers.*/\1/p' "$1" | paste -sd+ -; }
echo "| example ($arch) | PTX instructions | address instr. / access | ptxas registers |"
echo "|---|---|---|---|"
for t in examples/*.tile; do
	name=$(basename "$t" .tile)
	"$tilec" --arch="$arch" --report "$t" -o "$tmp/w.ptx" >"$tmp/w.rep" 2>&1 || continue
	"$tilec" --arch="$arch" --report -fno-addr-split "$t" -o "$tmp/wo.ptx" >"$tmp/wo.rep" 2>&1 || continue
	set -- $(sh tests/addr/count.sh "$tmp/w.ptx")
	wm=$1 wa=$2 wi=$3
	set -- $(sh tests/addr/count.sh "$tmp/wo.ptx")
	om=$1 oa=$2 oi=$3
	rw=$(regs "$tmp/w.rep"); ro=$(regs "$tmp/wo.rep")
	printf '| %s | %d / %d | %d/%d = %.2f / %d/%d = %.2f | %s / %s |\n' "$name" "$wi" "$oi" \
		"$wa" "$wm" "$(echo "$wa $wm" | awk '{print $1/$2}')" "$oa" "$om" "$(echo "$oa $om" | awk '{print $1/$2}')" \
		"${rw:--}" "${ro:--}"
done
echo
echo "(each cell: with the pass / with -fno-addr-split)"
