#!/bin/sh
# tests/docs/run.sh: checks on the documentation that can fail. The file map of docs/internals.md
# is what tests/docs/file_map.sh makes from the sources' opening comments, and every source file
# has such a comment.
cd "$(dirname "$0")/../.." || exit 2
pass=0 fail=0
tmp=$(mktemp) || exit 2
trap 'rm -f "$tmp" "$tmp.doc"' EXIT INT TERM

sh tests/docs/file_map.sh >"$tmp"
awk '/^<!-- file map/ { on = 1; next } on { print; if (/^```$/ && ++n == 2) exit }' docs/internals.md >"$tmp.doc"
if cmp -s "$tmp" "$tmp.doc"; then
	pass=$((pass + 1))
else
	echo "FAIL docs/internals.md: the file map is out of date (sh tests/docs/file_map.sh --write):"
	diff "$tmp.doc" "$tmp" | sed -n '1,20s/^/    /p'
	fail=$((fail + 1))
fi
for f in compiler/*.[ch] compiler/*.re compiler/*.y runtime/*.[ch] runtime/host/*.[ch]; do
	name=$(basename "$f")
	if head -n 1 "$f" | grep -q "^/\* $name: [a-zA-Z\`(-]"; then
		pass=$((pass + 1))
	else
		echo "FAIL $f: does not open with '/* $name: what it is for.'"
		fail=$((fail + 1))
	fi
done
echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
