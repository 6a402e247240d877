#!/bin/sh
# assume_ab.sh: the examples without their alignment facts, to time against the examples as written
# (an `assume` must never make a kernel slower).
#
#   bench/assume_ab.sh TILEC ARCH OUTDIR [FILE.tile ...]
#
# For every examples/*.tile (or every FILE given) with a fact of the form `NAME % NUMBER == 0` inside an assume, writes
# the file with those facts removed (an assume left empty goes; `N <= BN`, `HW % IW == 0` and other
# facts stay: the kernels need them) to OUTDIR/NAME.tile and its PTX for ARCH to OUTDIR/NAME.ptx.
# Then, on a GPU:
#   build/bench/bench --ptx-dir build/examples/ARCH --only LIST     (as written)
#   build/bench/bench --ptx-dir OUTDIR --only LIST                  (without the facts)
# with LIST the rows of the files it names. Prints the names of the files it wrote.
cd "$(dirname "$0")/.." || exit 2
if [ $# -lt 3 ]; then echo "usage: bench/assume_ab.sh TILEC ARCH OUTDIR [FILE.tile ...]" >&2; exit 2; fi
TILEC=$1 ARCH=$2 OUT=$3
shift 3
[ $# -gt 0 ] || set -- examples/*.tile
mkdir -p "$OUT" || exit 2
fact='[A-Za-z_][A-Za-z_0-9]* % [0-9][0-9]* == 0'
for f in "$@"; do
	grep -q "assume(.*$fact" "$f" || continue
	name=$(basename "$f" .tile)
	sed -e "/assume(/s/ *&& *$fact//g" -e "/assume(/s/$fact *&& *//g" \
	    -e "/^ *assume($fact);/d" "$f" >"$OUT/$name.tile"
	if "$TILEC" --arch="$ARCH" "$OUT/$name.tile" -o "$OUT/$name.ptx" 2>"$OUT/$name.err"; then
		echo "$name"
	else
		echo "assume_ab: $name does not compile without its facts:" >&2
		sed -n '1,3p' "$OUT/$name.err" >&2
	fi
done
