#!/bin/sh
# gen.sh DIR: writes the robustness inputs of the diagnostics tests into DIR (made at test time,
# never committed): truncated copies of every example at every 7th byte, random bytes, deep
# nesting, long expression chains and a 10 MB identifier.
dir=${1:?usage: gen.sh DIR}
mkdir -p "$dir" || exit 1
cd "$(dirname "$0")/../../.." || exit 1

# n copies of a string, without a loop per copy.
rep() { printf "%$1s" '' | tr ' ' "$2"; }

for ex in examples/*.tile; do
	base=$(basename "$ex" .tile)
	size=$(wc -c <"$ex")
	i=7
	while [ "$i" -lt "$size" ]; do
		head -c "$i" "$ex" >"$dir/trunc-$base-$i.tile"
		i=$((i + 7))
	done
done

# Random bytes, and random bytes after a valid start (NULs and bytes >= 0x80 included).
for n in 1 2 3 4; do
	head -c 4096 /dev/urandom >"$dir/random-$n.tile"
	{ printf 'kernel f(X: f32[N]) grid(1) {\n    let x = '; head -c 512 /dev/urandom; } >"$dir/random-tail-$n.tile"
done

{ printf 'kernel f() grid(1) {\n    let x = '; rep 100000 '('; printf '1;\n}\n'; } >"$dir/deep-parens.tile"
{ printf 'kernel f() grid(1) '; rep 100000 '{'; } >"$dir/deep-braces.tile"
{ printf 'kernel f() grid(1) {\n    let x = 1'; rep 100000 '+' | sed 's/+/+1/g'; printf ';\n}\n'; } >"$dir/long-chain.tile"
{ printf 'kernel f() grid(1) {\n    let x = '; rep 100000 '-'; printf '1;\n}\n'; } >"$dir/deep-unary.tile"
{ printf 'kernel f() grid(1) {\n'; rep 100000 'i' | sed 's/i/    if true {} else/g'; printf ' {}\n}\n'; } >"$dir/else-if-chain.tile"
{ printf 'const '; rep 10000000 'a'; printf ' = 1;\n'; } >"$dir/huge-ident.tile"
{ printf 'const A = '; rep 100000 '9'; printf ';\n'; } >"$dir/huge-number.tile"
