#!/bin/sh
# run.sh BUILD_DIR: how tests/sanitize-run.sh judges one run, with a stand-in for compute-sanitizer
# that prints what the real one would (no GPU needed): clean summaries pass; any error, any
# racecheck hazard (error or warning), a missing summary, the program's own failures, a missing
# result line and a run past SANITIZE_TIMEOUT fail; a program that skipped is a skip. Also that
# the tool gets its options and the program TILEC_TEST_SMALL=1 and its kernel directory.
# Last line: `N passed, M failed`.
cd "$(dirname "$0")/../.." || exit 2
tmp=$(mktemp -d "${TMPDIR:-/tmp}/tilec-sanitize.XXXXXX") || exit 2
trap 'rm -rf "$tmp"' EXIT INT TERM
passed=0 failed=0

# The stand-in: records its arguments and TILEC_TEST_SMALL, prints $FAKE_OUT, exits $FAKE_RC.
cat >"$tmp/fake-sanitizer" <<'FAKE'
#!/bin/sh
echo "$* TILEC_TEST_SMALL=$TILEC_TEST_SMALL" >"$FAKE_ARGS"
[ -n "$FAKE_SLEEP" ] && sleep "$FAKE_SLEEP"
printf '%b' "$FAKE_OUT"
exit "${FAKE_RC:-0}"
FAKE
chmod +x "$tmp/fake-sanitizer"
mkdir -p "$tmp/b/examples/sm_90a"

# case NAME TOOL ARCH WANT(ok|FAIL|skip) WORDS RC OUTPUT
case_() {
	name=$1 tool=$2 arch=$3 want=$4 words=$5
	FAKE_RC=$6 FAKE_OUT=$7 FAKE_ARGS=$tmp/args SANITIZE_B=$tmp/b SANITIZE_CS=$tmp/fake-sanitizer \
		SANITIZE_T=${T:-20} sh tests/sanitize-run.sh --one "$tool" "$arch" "$tmp/prog" >"$tmp/out" 2>&1
	got=$(cat "$tmp/out")
	case $got in
	"$want $tool $arch prog: "*"$words"*) echo "ok $name"; passed=$((passed + 1)) ;;
	*) echo "FAIL $name: got \"$got\", want $want with \"$words\""; failed=$((failed + 1)) ;;
	esac
}

clean='ok case\n3 passed, 0 failed\n'
case_ "memcheck clean" memcheck default ok "3 passed, 0 failed" 0 \
	"========= COMPUTE-SANITIZER\n$clean========= ERROR SUMMARY: 0 errors\n"
case_ "memcheck errors" memcheck default FAIL "ERROR SUMMARY: 2 errors" 86 \
	"========= Invalid __global__ read of size 4 bytes\n$clean========= ERROR SUMMARY: 2 errors\n"
case_ "one initcheck error" initcheck sm_90a FAIL "ERROR SUMMARY: 1 error" 86 \
	"$clean========= ERROR SUMMARY: 1 error\n"
case_ "racecheck clean" racecheck sm_90a ok "3 passed" 0 \
	"$clean========= RACECHECK SUMMARY: 0 hazards displayed (0 errors, 0 warnings)\n"
case_ "racecheck warnings" racecheck default FAIL "2 hazards displayed (0 errors, 2 warnings)" 0 \
	"$clean========= RACECHECK SUMMARY: 2 hazards displayed (0 errors, 2 warnings)\n"
case_ "racecheck one hazard" racecheck default FAIL "1 hazard displayed (1 error, 0 warnings)" 86 \
	"$clean========= RACECHECK SUMMARY: 1 hazard displayed (1 error, 0 warnings)\n"
case_ "no summary (crash)" synccheck default FAIL "no summary line" 139 "ok case\n"
case_ "the program's own failure" synccheck default FAIL "its own checks: 3 passed, 1 failed" 1 \
	"FAIL x\n3 passed, 1 failed\n========= ERROR SUMMARY: 0 errors\n"
case_ "no result line" memcheck default FAIL "no result line" 0 "========= ERROR SUMMARY: 0 errors\n"
case_ "exit status" memcheck default FAIL "exit status 3" 3 "$clean========= ERROR SUMMARY: 0 errors\n"
case_ "skipped" memcheck default skip "1 skipped" 0 \
	"skipped: no CUDA device\n0 passed, 0 failed, 1 skipped\n========= ERROR SUMMARY: 0 errors\n"
case_ "no kernels for the arch" memcheck sm_80 FAIL "no $tmp/b/examples/sm_80" 0 "$clean"
if command -v timeout >/dev/null 2>&1; then
	T=1 FAKE_SLEEP=5 case_ "past the timeout" memcheck default FAIL "stopped after 1 s" 0 "$clean"
fi

# what the tool and the program get
FAKE_ARGS=$tmp/args SANITIZE_B=$tmp/b SANITIZE_CS=$tmp/fake-sanitizer SANITIZE_T=20 FAKE_OUT=$clean \
	sh tests/sanitize-run.sh --one racecheck sm_90a "$tmp/prog" >/dev/null 2>&1
want="--tool racecheck --error-exitcode 86 --racecheck-report hazard $tmp/prog $tmp/b/examples/sm_90a TILEC_TEST_SMALL=1"
if [ "$(cat "$tmp/args")" = "$want" ]; then
	echo "ok racecheck reports every hazard; the program runs small on the arch's kernels"
	passed=$((passed + 1))
else
	echo "FAIL arguments: \"$(cat "$tmp/args")\", want \"$want\""
	failed=$((failed + 1))
fi
if [ -f "$tmp/b/sanitize/sm_90a/racecheck/prog.log" ] && [ -f "$tmp/b/sanitize/sm_90a/racecheck/prog.log.result" ]; then
	echo "ok the log and the verdict of a run lie in BUILD/sanitize/ARCH/TOOL"
	passed=$((passed + 1))
else
	echo "FAIL no log in $tmp/b/sanitize/sm_90a/racecheck"
	failed=$((failed + 1))
fi

echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
