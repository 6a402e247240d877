#!/bin/sh
# fuzz.sh [options] BINDIR NAME...: runs the fuzz targets BINDIR/fuzz_NAME (compile, meta, gen)
# and says how many inputs each ran and whether anything was found. Used by `make fuzz`, by
# tests/fuzz/run.sh (make check's smoke runs) and, copied into the bundle `make fuzz-bundle`
# makes, on machines without the tree: it needs only sh, awk and the binaries.
#
#   --seconds S    run each target for S seconds (default 60)
#   --runs N       or for N executions in all (split among the workers)
#   --workers W    W processes per target (default 1), sharing one corpus: libFuzzer reloads
#                  the corpus directory every second, so what one finds the others pick up
#   --seed X       libFuzzer seed of the first worker (X + i for worker i); default: random
#   --work DIR     corpora, findings and logs (default ./work): DIR/corpus/NAME grows from run
#                  to run; DIR/crashes/NAME/ keeps what crashed, leaked, hung (-timeout) or
#                  blew up (-rss_limit_mb); DIR/logs/NAME.I is worker I's output
#   --seeds DIR    seed corpora DIR/NAME/ (default BINDIR/seeds; tests/fuzz/seeds.sh writes them)
#   --dict FILE    libFuzzer dictionary for compile (default BINDIR/tile.dict)
#   --extreme      fuzz_gen draws sizes up to 2^63 (TILEC_FUZZ_EXTREME=1; see harness/fuzz_gen.c)
#
# Prints a line per target, `NAME: E executions in S s (R exec/s), K findings`, each finding's
# file, then `total: E executions, K findings`. Exits 1 when anything was found.

seconds=60 runs= workers=1 seed= work=./work seeds= dict=
usage() { sed -n '2,/^$/s/^# \{0,1\}//p' "$0" >&2; exit 2; }
while [ $# -gt 0 ]; do
	case $1 in
	--seconds) seconds=$2; shift 2 ;;
	--runs) runs=$2; shift 2 ;;
	--workers) workers=$2; shift 2 ;;
	--seed) seed=$2; shift 2 ;;
	--work) work=$2; shift 2 ;;
	--seeds) seeds=$2; shift 2 ;;
	--dict) dict=$2; shift 2 ;;
	--extreme) TILEC_FUZZ_EXTREME=1; export TILEC_FUZZ_EXTREME; shift ;;
	-h|--help) usage ;;
	-*) echo "fuzz.sh: unknown option $1" >&2; usage ;;
	*) break ;;
	esac
done
[ $# -ge 2 ] || usage
bindir=$1
shift
seeds=${seeds:-$bindir/seeds}
dict=${dict:-$bindir/tile.dict}

# Per input: 10 s is a hang (the compiler takes milliseconds on anything legal), 2 GB a blow-up.
# Inputs up to 8 KB: a kernel or two; the generator needs far fewer bytes.
limits="-timeout=10 -rss_limit_mb=2048 -malloc_limit_mb=2048"
# Leaks are findings (the default); ASan's exit code is libFuzzer's business, so leave it.
ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=0}
UBSAN_OPTIONS=${UBSAN_OPTIONS:-halt_on_error=1:print_stacktrace=1}
export ASAN_OPTIONS UBSAN_OPTIONS

total=0 found=0
for name in "$@"; do
	bin=$bindir/fuzz_$name
	if [ ! -x "$bin" ]; then
		echo "fuzz.sh: no $bin" >&2
		exit 2
	fi
	case $name in
	meta) maxlen=4096; d= ;;
	gen) maxlen=1024; d= ;;   # bytes are choices there, not words
	*) maxlen=8192; d=$dict ;;
	esac
	corpus=$work/corpus/$name crashes=$work/crashes/$name logs=$work/logs
	mkdir -p "$corpus" "$crashes" "$logs" || exit 2
	ls "$crashes" >"$logs/$name.before" 2>/dev/null
	start=$(date +%s)
	i=0
	while [ $i -lt "$workers" ]; do
		set -- "$bin" $limits -max_len=$maxlen -print_final_stats=1 \
			-artifact_prefix="$crashes/" "$corpus"
		[ -n "$d" ] && [ -f "$d" ] && set -- "$@" -dict="$d"
		[ -d "$seeds/$name" ] && set -- "$@" "$seeds/$name"
		if [ -n "$runs" ]; then
			per=$(( (runs + workers - 1 - i) / workers ))
			set -- "$@" -runs=$per
		else
			set -- "$@" -max_total_time="$seconds"
		fi
		[ -n "$seed" ] && set -- "$@" -seed=$((seed + i))
		"$@" >"$logs/$name.$i" 2>&1 &
		i=$((i + 1))
	done
	wait
	elapsed=$(( $(date +%s) - start ))
	execs=$(cat "$logs/$name".[0-9]* | awk '/stat::number_of_executed_units:/ { n += $2 } END { print n + 0 }')
	new=$(ls "$crashes" 2>/dev/null | grep -vxF -f "$logs/$name.before")
	k=$(echo "$new" | grep -c .)
	rate=$(( elapsed > 0 ? execs / elapsed : execs ))
	echo "$name: $execs executions in $elapsed s ($rate exec/s), $k findings"
	for f in $new; do
		why=$(grep -h -m 1 'ERROR: \|runtime error:\|internal error\|deadly signal' "$logs/$name".[0-9]* | head -n 1)
		echo "    $crashes/$f${why:+  ($why)}"
	done
	total=$((total + execs)) found=$((found + k))
done
echo "total: $total executions, $found findings"
[ "$found" -eq 0 ]
