#!/bin/sh
# tests/docs/file_map.sh [--write]: the file map of docs/internals.md, made from the first
# sentence of each source file's opening comment ("/* NAME: what it does. ..."), so that the map
# says what the files say of themselves.
#
# Without arguments prints the map. With --write replaces the block after the
# "<!-- file map -->" line of docs/internals.md with it. tests/docs/run.sh checks that they agree.

cd "$(dirname "$0")/../.." || exit 2

# describe FILE: NAME padded to a column, then the first sentence of its opening comment, wrapped
describe() {
	awk -v name="$(basename "$1")" '
	NR == 1 && !/^\/\*/ { exit }
	{
		line = $0
		sub(/^\/\* ?/, "", line); sub(/^ \* ?/, "", line); sub(/^ \*\/.*/, "", line)
		end = index(line, "*/")
		if (end) line = substr(line, 1, end - 1)
		text = text (text == "" ? "" : " ") line
		if (end || /^ \*\/?$/ || match(text, /[^.]\.( |$)/)) exit
	}
	END {
		sub(/^[^ ]*: /, "", text)
		if (match(text, /[^.]\.( |$)/)) text = substr(text, 1, RSTART + 1)
		sub(/ +$/, "", text)
		head = sprintf("  %-18s ", name)
		if (length(name) > 17) head = "  " name " "
		width = 100 - length(head)
		n = split(text, w, " ")
		out = head; col = 0
		for (i = 1; i <= n; i++) {
			if (col > 0 && col + 1 + length(w[i]) > width) {
				print out; out = sprintf("%21s", ""); col = 0
			}
			out = out (col ? " " : "") w[i]; col += (col ? 1 : 0) + length(w[i])
		}
		print out
	}' "$1"
}

map() {
	echo '```'
	for dir in compiler runtime runtime/host; do
		echo "$dir/"
		for f in $dir/*.h $dir/*.c $dir/*.re $dir/*.y; do
			[ -f "$f" ] && describe "$f"
		done
	done
	echo '```'
}

doc=docs/internals.md
if [ "${1:-}" = --write ]; then
	tmp=$(mktemp) || exit 2
	map >"$tmp.map"
	awk -v mapfile="$tmp.map" '
		skip && /^```$/ && ++fences == 2 { skip = 0; next }
		skip { next }
		{ print }
		/^<!-- file map/ { while ((getline l < mapfile) > 0) print l; skip = 1; fences = 0 }
	' "$doc" >"$tmp" && mv "$tmp" "$doc"
	rm -f "$tmp.map"
else
	map
fi
