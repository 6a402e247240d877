#!/bin/sh
# run.sh TILEC: the diagnostics tests.
#
# Each NAME.tile here is compiled and its stderr compared, byte for byte, with NAME.err (an empty
# .err, or one with warnings only: the file must compile, exit 0; with errors: exit 1). A first line `// flags: ...` gives extra
# command-line flags. Then the robustness inputs made by robust/gen.sh: tilec must exit 0 or 1
# (1 with at least one error line), never crash, never report an internal error or a compiler
# bug of its own (a race in its code, IR the verifier refuses), never hang.
# Prints one line per failure and ends with `N passed, M failed`.

TILEC=${1:?usage: tests/diag/run.sh path/to/tilec}
case $TILEC in /*) ;; *) TILEC=$PWD/$TILEC ;; esac
cd "$(dirname "$0")/../.." || exit 2
TIMEOUT=${TIMEOUT:-20}

tmp=$(mktemp -d "${TMPDIR:-/tmp}/tilec-diag.XXXXXX") || exit 2
trap 'rm -rf "$tmp"' EXIT INT TERM
pass=0 fail=0

# Runs tilec with a time limit when timeout(1) exists.
run() {
	if command -v timeout >/dev/null 2>&1; then
		timeout "$TIMEOUT" "$TILEC" "$@"
	else
		"$TILEC" "$@"
	fi
}

for t in tests/diag/*.tile; do
	name=${t%.tile}
	flags=$(sed -n '1s|^// flags: *||p' "$t")
	# shellcheck disable=SC2086  # flags are words
	run $flags "$t" -o "$tmp/out.ptx" 2>"$tmp/err" >/dev/null
	rc=$?
	if [ ! -f "$name.err" ]; then
		echo "FAIL $t: no $name.err"
		fail=$((fail + 1))
		continue
	fi
	want_rc=0    # an .err with warnings only: they print, the PTX is still written
	grep -q ': error: ' "$name.err" && want_rc=1
	if [ $rc -ne $want_rc ]; then
		echo "FAIL $t: exit status $rc, expected $want_rc"
		fail=$((fail + 1))
	elif ! cmp -s "$tmp/err" "$name.err"; then
		echo "FAIL $t: diagnostics differ:"
		diff "$name.err" "$tmp/err" | sed -n '1,12s/^/    /p'
		fail=$((fail + 1))
	else
		pass=$((pass + 1))
	fi
done

# Robustness: generated inputs, never committed.
sh tests/diag/robust/gen.sh "$tmp/robust" || { echo "FAIL robust/gen.sh"; fail=$((fail + 1)); }
for f in "$tmp"/robust/*; do
	[ -f "$f" ] || continue
	run "$f" -o "$tmp/out.ptx" 2>"$tmp/err" >/dev/null
	rc=$?
	what=
	case $rc in
	0) ;;
	1) grep -q 'error:' "$tmp/err" || what="exit 1 without an error message" ;;
	124) what="timed out after ${TIMEOUT}s" ;;
	*) what="exit status $rc (crash?)" ;;
	esac
	if [ -z "$what" ] && grep -q 'internal error\|compiler bug' "$tmp/err"; then
		what="internal error: $(grep -m1 'internal error\|compiler bug' "$tmp/err")"
	fi
	if [ -n "$what" ]; then
		keep=$(mktemp "${TMPDIR:-/tmp}/tilec-robust.XXXXXX")
		cp "$f" "$keep"
		echo "FAIL robust/$(basename "$f"): $what (input kept in $keep)"
		fail=$((fail + 1))
	else
		pass=$((pass + 1))
	fi
done

echo "$pass passed, $fail failed"
[ $fail -eq 0 ]
