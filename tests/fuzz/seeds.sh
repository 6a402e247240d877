#!/bin/sh
# seeds.sh TILEC OUTDIR: writes the fuzz targets' seed corpora into OUTDIR/NAME/, from the tree
# (run from anywhere inside it; nothing here is committed as a corpus):
#   compile  every examples/*.tile and tests/**/*.tile behind three option bytes: sm_80;
#            sm_90a; sm_90 with --emit=c (the byte's meaning is in harness/fuzz_compile.c)
#   meta     the //@ lines of the PTX TILEC compiles from each example, for sm_80 and sm_90a
#            (--no-ptxas: ptxas adds nothing to the metadata)
#   gen      a few byte strings: the generator reads any bytes as choices
tilec=${1:?usage: seeds.sh TILEC OUTDIR}
out=${2:?usage: seeds.sh TILEC OUTDIR}
case $tilec in /*) ;; *) tilec=$PWD/$tilec ;; esac
case $out in /*) ;; *) out=$PWD/$out ;; esac
cd "$(dirname "$0")/../.." || exit 2
rm -rf "$out/compile" "$out/meta" "$out/gen"
mkdir -p "$out/compile" "$out/meta" "$out/gen" || exit 2

n=0
for f in $(find examples tests -name '*.tile' | sort); do
	n=$((n + 1))
	base=$(echo "$f" | tr '/' '_')
	for b in 000 002 201; do
		{ printf "\\$b"; cat "$f"; } >"$out/compile/$b-$base"
	done
done
# the examples again with a producer warp and clusters (sm_90a), which only a flags line asks for
for f in examples/*.tile; do
	{ printf '\002// flags: --arch=sm_90a -fwarp-specialize -fcluster\n'; cat "$f"; } \
		>"$out/compile/ws-$(basename "$f")"
done

for f in examples/*.tile; do
	base=$(basename "$f" .tile)
	for arch in sm_80 sm_90a; do
		"$tilec" --no-ptxas --arch=$arch "$f" -o - 2>/dev/null | grep '^//@' >"$out/meta/$base-$arch"
		[ -s "$out/meta/$base-$arch" ] || rm -f "$out/meta/$base-$arch"
	done
	"$tilec" --no-ptxas --arch=sm_90a -fwarp-specialize -fcluster "$f" -o - 2>/dev/null |
		grep '^//@' >"$out/meta/$base-cluster"
	grep -q '^//@cluster' "$out/meta/$base-cluster" || rm -f "$out/meta/$base-cluster"
done

LC_ALL=C awk 'BEGIN { for (i = 0; i < 256; i++) printf "%c", i }' >"$out/gen/counting"
LC_ALL=C awk 'BEGIN { for (i = 255; i >= 0; i--) printf "%c", i }' >"$out/gen/falling"
head -c 256 /dev/zero >"$out/gen/zeros"
head -c 256 /dev/zero | tr '\0' '\377' >"$out/gen/ones"
echo "seeds: $(ls "$out/compile" | wc -l) compile, $(ls "$out/meta" | wc -l) meta, 4 gen in $out"
