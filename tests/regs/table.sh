#!/bin/sh
# table.sh [TILEC]: prints a markdown table of predicted vs ptxas registers (and spill bytes) for
# every kernel of every example on every arch tilec knows. Needs ptxas. Used for docs/internals.md.
TILEC=${1:-build/tilec}
case $TILEC in /*) ;; *) TILEC=$PWD/$TILEC ;; esac
cd "$(dirname "$0")/../.." || exit 2
ARCHS=${ARCHS:-"sm_80 sm_86 sm_89 sm_90 sm_90a"}
echo "| kernel | arch | threads | predicted | cap (.maxnreg) | ptxas | spill bytes |"
echo "|---|---|---:|---:|---:|---:|---:|"
for t in examples/*.tile; do
	for a in $ARCHS; do
		"$TILEC" --report=json --arch="$a" "$t" -o /dev/null 2>/dev/null |
		sed -n 's/.*"kernel": "\([^"]*\)".*"threads": \([0-9]*\).*"predicted_regs": \([0-9]*\).*"reg_cap": \([0-9]*\).*"ptxas_regs": \([0-9]*\), "spill_stores": \([0-9]*\), "spill_loads": \([0-9]*\).*/| \1 | '"$a"' | \2 | \3 | \4 | \5 | \6+\7 |/p'
	done
done
