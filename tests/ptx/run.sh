#!/bin/sh
# tests/ptx/run.sh [TILEC]: properties of the PTX tilec writes, and ptxas' verdict on it.
#
# For every examples/*.tile and tests/gpu/kernels/*.tile, and every arch (ARCHS, default sm_80
# sm_86 sm_89 sm_90 sm_90a):
#   compile    tilec --arch=ARCH FILE -o X.ptx succeeds and X.ptx says `.target ARCH`
#   maxntid    every kernel's .maxntid equals the threads of its `//@kernel NAME threads T` line
#   no-local   no .local memory anywhere in the code (tests/gpu/kernels/print.tile, whose kernels
#              print, has checks of its own, below)
#   ptxas      ptxas -arch=ARCH -v --warn-on-spills accepts it, no C7508/C7510-C7515/C7517/C7602 warning
#              (C751x: a wgmma fast path lost, e.g. serialized for want of registers, or a wait ptxas
#              had to inject before an accumulator's use), and every
#              kernel reports 0 bytes stack frame, spill stores and spill loads
# Then the command line: exit status 0/1/2, no output file after a failed compilation,
# --version, --help, -o - (stdout).
# ptxas: $PTXAS, else the one configure found (config.mk), else on PATH; missing: those skip.
# Prints one line per failure and per skip, then `N passed, M failed[, K skipped]`.

cd "$(dirname "$0")/../.." || exit 2
tilec=${1:-build/tilec}
case $tilec in /*) ;; *) tilec=$PWD/$tilec ;; esac
archs=${ARCHS:-"sm_80 sm_86 sm_89 sm_90 sm_90a"}
jobs=${JOBS:-$(getconf _NPROCESSORS_ONLN 2>/dev/null || echo 2)}

if [ ! -x "$tilec" ]; then
	echo "ptx: $tilec is not built"
	echo "0 passed, 1 failed"
	exit 1
fi

if [ -z "$PTXAS" ] && [ -f config.mk ]; then
	PTXAS=$(sed -n 's/^PTXAS = //p' config.mk)
fi
if [ -z "$PTXAS" ] || [ ! -x "$PTXAS" ]; then
	PTXAS=$(command -v ptxas 2>/dev/null)
fi

tmp=$(mktemp -d "${TMPDIR:-/tmp}/tilec-ptx.XXXXXX") || exit 2
trap 'rm -rf "$tmp"' EXIT INT TERM

# Results: each job writes its own file of `PASS|FAIL|SKIP name: why` lines (no interleaving).
res=$tmp/cli.res
pass() { echo "PASS $1" >>"$res"; }
fail() { echo "FAIL $1: $2" >>"$res"; }
skip() { echo "SKIP $1: $2" >>"$res"; }

# Kernel name -> threads, from the metadata comments.
kernels_of() { sed -n 's|^//@kernel \([A-Za-z_][A-Za-z_0-9]*\) .*|\1|p' "$1"; }
# The body of kernel $2 in PTX file $1, from its .entry line to its closing brace.
entry_body() { awk "/^\\.visible \\.entry $2\\(/{k=1} k" "$1" | awk '/^}/{print; exit} {print}'; }

# Prints one line per kernel whose .maxntid (x*y*z) differs from its metadata threads.
maxntid_mismatches() {
	awk '
	/^\/\/@kernel / {
		for (i = 3; i < NF; i++) if ($i == "threads") want[$2] = $(i + 1)
		nmeta++
	}
	/\.entry[ \t]/ {
		l = $0; sub(/.*\.entry[ \t]+/, "", l); sub(/[ \t(].*/, "", l); cur = l
	}
	/^[ \t]*\.maxntid[ \t]/ {
		l = $0; sub(/.*\.maxntid[ \t]+/, "", l); n = split(l, d, /[ \t,]+/)
		t = 1; for (i = 1; i <= n; i++) if (d[i] != "") t *= d[i]
		got[cur] = t
	}
	END {
		if (!nmeta) print "no //@kernel metadata"
		for (k in want)
			if (!(k in got)) print k ": no .maxntid (metadata threads " want[k] ")"
			else if (got[k] != want[k]) print k ": .maxntid " got[k] ", metadata threads " want[k]
	}' "$1"
}

# Prints one line per kernel whose ptxas report is missing or shows stack or spills.
spill_problems() {
	log=$1; shift
	awk -v kernels="$*" '
	/Function properties for / { l = $0; sub(/.*Function properties for /, "", l); cur = l }
	/bytes stack frame/ { l = $0; sub(/^[ \t]+/, "", l); frame[cur] = l }
	END {
		n = split(kernels, ks, " ")
		for (i = 1; i <= n; i++) {
			k = ks[i]
			if (!(k in frame)) print k ": no stack/spill line in the ptxas report"
			else if (frame[k] !~ /^0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads/)
				print k ": " frame[k]
		}
	}' "$log"
}

check_one() {
	file=$1 arch=$2
	base=$(basename "$file" .tile)
	name="$base $arch"
	res=$tmp/$base.$arch.res
	out=$tmp/$base.$arch.ptx
	: >"$res"
	if ! "$tilec" --arch="$arch" "$file" -o "$out" >"$tmp/$base.$arch.err" 2>&1; then
		fail "$name compile" "$(head -n 1 "$tmp/$base.$arch.err")"
		return
	fi
	if ! grep -q "^[[:space:]]*\.target[[:space:]][[:space:]]*$arch\([[:space:],]\|$\)" "$out"; then
		fail "$name compile" "no .target $arch line"
	else
		pass "$name compile"
	fi

	bad=$(maxntid_mismatches "$out")
	if [ -n "$bad" ]; then fail "$name maxntid" "$(echo "$bad" | head -n 3 | tr '\n' ';' | sed 's/;$//')"
	else pass "$name maxntid"; fi

	# Comments may mention .local (and metadata is comments): look at code only.
	bad=$(sed 's|//.*||' "$out" | grep -n '\.local' | head -n 1)
	if [ -n "$bad" ]; then fail "$name no-local" "$bad"
	else pass "$name no-local"; fi

	if [ -z "$PTXAS" ]; then
		skip "$name ptxas" "no ptxas"
		return
	fi
	log=$tmp/$base.$arch.ptxas
	if ! "$PTXAS" -arch="$arch" -v --warn-on-spills "$out" -o "$tmp/$base.$arch.cubin" >"$log" 2>&1; then
		fail "$name ptxas" "$(grep -i -m 1 error "$log" || head -n 1 "$log")"
		return
	fi
	bad=$(grep -E 'C7508|C751[0-5]|C7517|C7602' "$log" | head -n 1)
	if [ -z "$bad" ]; then
		bad=$(spill_problems "$log" $(kernels_of "$out") | head -n 3 | tr '\n' ';' | sed 's/;$//')
	fi
	if [ -n "$bad" ]; then fail "$name ptxas" "$bad"
	else pass "$name ptxas"; fi
}

# Compile/ptxas jobs, $jobs at a time: the examples and the GPU tests' own kernels (those an
# arch lacks a feature for are compiled only where the GPU tests load them).
running=0
for file in examples/*.tile tests/gpu/kernels/*.tile; do
	[ -f "$file" ] || continue
	for arch in $archs; do
		case "$(basename "$file" .tile):$arch" in
		types8:sm_80|types8:sm_86|reductions_sm90:sm_8*) continue ;;
		print:*) continue ;;   # a stack frame by design: below
		esac
		# fp8 tensors start at sm_89
		case $arch in sm_80|sm_86) grep -q 'f8e[45]m[23]' "$file" && continue ;; esac
		check_one "$file" "$arch" &
		running=$((running + 1))
		if [ "$running" -ge "$jobs" ]; then wait; running=0; fi
	done
done
wait

# ---- print(): tests/gpu/kernels/print.tile, as it is and with --print-all-blocks
# A kernel that prints calls vprintf, declared once in the module, with its arguments in a .local
# buffer: a stack frame (no spills); the file's kernel without a print has neither .local memory
# nor a stack frame, as every kernel above.
check_print() {
	arch=$1 flag=$2
	name="print $arch${flag:+ $flag}"
	res=$tmp/print.$arch$flag.res
	out=$tmp/print.$arch$flag.ptx
	: >"$res"
	if ! "$tilec" --arch="$arch" $flag tests/gpu/kernels/print.tile -o "$out" >"$out.err" 2>&1; then
		fail "$name compile" "$(head -n 1 "$out.err")"
		return
	fi
	pass "$name compile"
	decls=$(grep -c '^\.extern \.func (\.param \.b32 func_retval0) vprintf$' "$out")
	calls=$(grep -c 'call (retval0), vprintf, (param0, param1);' "$out")
	if [ "$decls" -eq 1 ] && [ "$calls" -gt 0 ]; then pass "$name vprintf"
	else fail "$name vprintf" "$decls declarations, $calls calls"; fi
	# per kernel: .local memory exactly where vprintf is called
	bad=$(sed 's|//.*||' "$out" | awk '
		/^\.visible \.entry / { k = $3; sub(/\(.*/, "", k); loc[k] = 0; call[k] = 0 }
		/^}/ { k = "" }
		k != "" && /\.local/ { loc[k] = 1 }
		k != "" && /call \(retval0\), vprintf/ { call[k] = 1 }
		END {
			if (!("no_print" in loc)) print "no kernel no_print"
			for (x in loc) if (loc[x] != call[x]) print x ": .local " loc[x] ", vprintf " call[x]
		}')
	if [ -z "$bad" ]; then pass "$name local"
	else fail "$name local" "$(echo "$bad" | head -n 3 | tr '\n' ';')"; fi
	if [ -z "$PTXAS" ]; then
		skip "$name ptxas" "no ptxas"
		return
	fi
	log=$out.ptxas
	if ! "$PTXAS" -arch="$arch" -v --warn-on-spills "$out" -o "$out.cubin" >"$log" 2>&1; then
		fail "$name ptxas" "$(grep -i -m 1 error "$log" || head -n 1 "$log")"
		return
	fi
	bad=$(grep -E 'C7508|C751[0-5]|C7517|C7602' "$log" | head -n 1)
	[ -z "$bad" ] && bad=$(awk '
		/Function properties for / { l = $0; sub(/.*Function properties for /, "", l); cur = l }
		/bytes stack frame/ {
			l = $0; sub(/^[ \t]+/, "", l)
			if (l !~ /0 bytes spill stores, 0 bytes spill loads/) print cur ": " l
			else if (cur == "no_print" && l !~ /^0 bytes stack frame/) print cur ": " l
			seen[cur] = 1
		}
		END { if (!("no_print" in seen) || !("print_values" in seen)) print "a kernel missing in the report" }' "$log" |
		head -n 3 | tr '\n' ';')
	if [ -n "$bad" ]; then fail "$name ptxas" "$bad"
	else pass "$name ptxas"; fi
}
for arch in sm_80 sm_90a; do
	check_print "$arch" ""
	check_print "$arch" --print-all-blocks
done

# ---- architecture lists
# `--emit=c --arch=sm_80,sm_90a` compiles one checked program once per architecture: each must
# come out as it does alone (no plan or shared-memory offset of the first leaking into the
# second), so the embedded sm_90a cubin equals the one `--arch=sm_90a` embeds.
cubin_block() { awk -v a="$2" '$0 == "/* cubin for " a " */" {p=1; getline; next} p && /^};/ {exit} p' "$1"; }
check_list() {
	file=$1
	base=$(basename "$file" .tile)
	name="$base arch list"
	res=$tmp/$base.list.res
	d=$tmp/list.$base
	mkdir -p "$d/list" "$d/one"
	if [ -z "$PTXAS" ]; then
		skip "$name" "no ptxas"
		return
	fi
	# fp8 tensors start at sm_89
	lo=sm_80
	grep -q 'f8e[45]m[23]' "$file" && lo=sm_89
	if ! "$tilec" --emit=c --arch=$lo,sm_90a "$file" -o "$d/list/$base.c" >"$d/log" 2>&1; then
		fail "$name" "--arch=$lo,sm_90a: $(grep -m 1 error "$d/log" || head -n 1 "$d/log")"
		return
	fi
	if ! "$tilec" --emit=c --arch=sm_90a "$file" -o "$d/one/$base.c" >"$d/log" 2>&1; then
		fail "$name" "--arch=sm_90a: $(head -n 1 "$d/log")"
		return
	fi
	cubin_block "$d/list/$base.c" sm_90a >"$d/list.cubin"
	cubin_block "$d/one/$base.c" sm_90a >"$d/one.cubin"
	if [ -s "$d/one.cubin" ] && cmp -s "$d/list.cubin" "$d/one.cubin"; then pass "$name"
	else fail "$name" "the sm_90a cubin of the list differs from --arch=sm_90a's"; fi
}
running=0
for file in examples/*.tile; do
	[ -f "$file" ] || continue
	check_list "$file" &
	running=$((running + 1))
	if [ "$running" -ge "$jobs" ]; then wait; running=0; fi
done
wait

# ---- the command line

res=$tmp/cli.res
ex=examples/vecadd.tile
[ -f "$ex" ] || ex=$(ls examples/*.tile | head -n 1)

broken=$tmp/broken.tile
printf 'kernel broken(X: f32[N]) grid(1) {\n    let = ;\n}\n' >"$broken"
rm -f "$tmp/broken.ptx"
"$tilec" "$broken" -o "$tmp/broken.ptx" >/dev/null 2>&1
st=$?
if [ "$st" -eq 1 ]; then pass "cli: compile error exits 1"
else fail "cli: compile error exits 1" "exit status $st"; fi
if [ -e "$tmp/broken.ptx" ]; then fail "cli: no output after an error" "broken.ptx was written"
else pass "cli: no output after an error"; fi

# fp8 tensors raise the default arch to sm_89, and --emit=c's default list to sm_89,sm_90a; an
# explicit sm_80 stays an error
printf 'kernel f8(E: f8e4m3[N], Y: f32[N]) grid(1) threads(128) {\n    Y[0 +: 128] = f32(E[0 +: 128]);\n}\n' >"$tmp/f8.tile"
if "$tilec" -w "$tmp/f8.tile" -o "$tmp/f8.ptx" >/dev/null 2>&1 && grep -q '^\.target sm_89$' "$tmp/f8.ptx"; then
	pass "cli: fp8 tensors raise the default arch to sm_89"
else fail "cli: fp8 tensors raise the default arch to sm_89" "$(grep -m 1 '^\.target' "$tmp/f8.ptx" 2>/dev/null)"; fi
if [ -z "$PTXAS" ]; then skip "cli: fp8 tensors: --emit=c builds sm_89,sm_90a" "no ptxas"
elif "$tilec" -w --emit=c "$tmp/f8.tile" -o "$tmp/f8.c" >/dev/null 2>&1 && grep -q 'sm_89' "$tmp/f8.c" &&
     grep -q 'sm_90a' "$tmp/f8.c"; then pass "cli: fp8 tensors: --emit=c builds sm_89,sm_90a"
else fail "cli: fp8 tensors: --emit=c builds sm_89,sm_90a" "no sm_89 and sm_90a code in the launcher"; fi
"$tilec" --arch=sm_80 "$tmp/f8.tile" -o "$tmp/f8x.ptx" >/dev/null 2>&1
st=$?
if [ "$st" -eq 1 ]; then pass "cli: fp8 tensors with --arch=sm_80 exit 1"
else fail "cli: fp8 tensors with --arch=sm_80 exit 1" "exit status $st"; fi

"$tilec" --no-such-option "$ex" -o "$tmp/x.ptx" >/dev/null 2>&1
st=$?
if [ "$st" -eq 2 ]; then pass "cli: bad option exits 2"
else fail "cli: bad option exits 2" "exit status $st"; fi

"$tilec" >/dev/null 2>&1
st=$?
if [ "$st" -eq 2 ]; then pass "cli: no input file exits 2"
else fail "cli: no input file exits 2" "exit status $st"; fi

"$tilec" "$ex" -o "$tmp/ok.ptx" >/dev/null 2>&1
st=$?
if [ "$st" -eq 0 ] && [ -s "$tmp/ok.ptx" ]; then pass "cli: success exits 0"
else fail "cli: success exits 0" "exit status $st"; fi

version=$(sed -n 's/^#define TILEC_VERSION "\(.*\)"/\1/p' compiler/tilec.h)
out=$("$tilec" --version 2>&1)
st=$?
if [ "$st" -eq 0 ] && echo "$out" | grep -q "tilec.*$version"; then pass "cli: --version"
else fail "cli: --version" "status $st, printed: $(echo "$out" | head -n 1)"; fi

out=$("$tilec" --help 2>&1)
st=$?
if [ "$st" -eq 0 ] && echo "$out" | grep -qi 'usage' && echo "$out" | grep -q -- '--arch'; then
	pass "cli: --help"
else
	fail "cli: --help" "status $st, no usage line or no --arch"
fi

"$tilec" "$ex" -o - >"$tmp/stdout.ptx" 2>/dev/null
st=$?
if [ "$st" -eq 0 ] && grep -q '^//@tilec' "$tmp/stdout.ptx" && grep -q '\.entry' "$tmp/stdout.ptx" &&
   [ ! -e ./- ]; then
	pass "cli: -o - writes to stdout"
else
	fail "cli: -o - writes to stdout" "status $st"
fi

# --arch=native: this machine's GPU, or with no driver or GPU a note and sm_80; --emit=c without
# --arch embeds sm_80 PTX and an sm_90a cubin
"$tilec" --arch=native "$ex" -o "$tmp/native.ptx" 2>"$tmp/native.err"
st=$?
target=$(sed -n 's/^\.target //p' "$tmp/native.ptx" 2>/dev/null)
if [ "$st" -eq 0 ] && { { grep -q '^tilec: note: --arch=native: .*; compiling for sm_80$' "$tmp/native.err" &&
	[ "$target" = sm_80 ]; } || { [ ! -s "$tmp/native.err" ] && echo "$target" | grep -q '^sm_[89]'; }; }; then
	pass "cli: --arch=native ($target)"
else
	fail "cli: --arch=native" "status $st, target '$target', said: $(head -n 1 "$tmp/native.err")"
fi
if [ -n "$PTXAS" ] && "$tilec" --emit=c "$ex" -o "$tmp/emitc.c" >/dev/null 2>&1 &&
   grep -q 'sm_80' "$tmp/emitc.c" && grep -q 'sm_90a' "$tmp/emitc.c"; then
	pass "cli: --emit=c embeds sm_80 and sm_90a by default"
elif [ -z "$PTXAS" ]; then
	skip "cli: --emit=c default archs" "no ptxas"
else
	fail "cli: --emit=c embeds sm_80 and sm_90a by default" "not both named in the launcher"
fi

# ---- the layout plan and vector loads, on the seed kernel (examples/lse_bwd.tile)
# Its loop over output channels loads W's and Bi's columns (`.T` of a row, contiguous down the
# column) and O's and GO's rows as 16-byte vectors -- the rows' alignment comes from one assume
# of the form `a && b` -- and moves nothing through shared memory.
"$tilec" --no-ptxas --arch=sm_90a examples/lse_bwd.tile -o "$tmp/lse.ptx" 2>/dev/null
loop=$(awk '/^\.visible \.entry lse_bwd\(/{k=1} k && /^\$L0:/{p=1} p && /bra.uni \$L0/{exit} p' "$tmp/lse.ptx")
v4=$(echo "$loop" | grep -c 'ld.global.v4.f32')
if [ "$v4" -eq 4 ] && ! grep -q 'bar.sync\|ld.shared\|st.shared' "$tmp/lse.ptx"; then
	pass "layout plan: lse_bwd loads 4 vectors a step, no shared memory"
else
	fail "layout plan: lse_bwd loads 4 vectors a step, no shared memory" \
		"$v4 ld.global.v4.f32 in the loop; shared accesses: $(grep -c 'bar.sync\|ld.shared\|st.shared' "$tmp/lse.ptx")"
fi

# ---- sums deferred past their loop (compiler/lower_defer.c)
# rowsum's `s += sum(window)` over a run-time loop and sum's over a constant one: no barrier in
# the loop, the cross-thread reduction once after it.
"$tilec" --no-ptxas --arch=sm_90a examples/rowsum.tile -o "$tmp/rowsum.ptx" 2>/dev/null
inloop=$(awk '/^\$L0:/{p=1} p && /bra.uni \$L0/{exit} p' "$tmp/rowsum.ptx" | grep -c 'bar.sync')
"$tilec" --no-ptxas --arch=sm_90a examples/sum.tile -o "$tmp/sum.ptx" 2>/dev/null
bars=$(grep -c 'bar.sync' "$tmp/sum.ptx")
if [ "$inloop" -eq 0 ] && [ "$bars" -eq 1 ] && grep -q '^\$L0:' "$tmp/rowsum.ptx"; then
	pass "deferred sums: no barrier in rowsum's loop, one in sum"
else
	fail "deferred sums: no barrier in rowsum's loop, one in sum" \
		"$inloop bar.sync in rowsum's loop, $bars in sum"
fi

# ---- a widening copy takes the store's vector width (lower_mem.c, store_stream_layout)
# types8.tile's widen8_wide stores 8-bit rows as f32 under assume(N % 16 == 0): 4-byte loads and
# 16-byte stores, every warp access one contiguous run -- not 16-byte loads that leave each thread
# sixteen f32 to store as four pieces 64 bytes apart (2.2x slower than without the assume). The
# transposed operand of an `@` outside a pipeline is read along its stored rows (mm_f16_nt_plain:
# 16-byte loads only).
"$tilec" --no-ptxas --arch=sm_90a tests/gpu/kernels/types8.tile -o "$tmp/types8.ptx" 2>/dev/null
wide=$(entry_body "$tmp/types8.ptx" widen8_wide)
n4=$(echo "$wide" | grep -c 'ld.global.v4.[su]8')
n16=$(echo "$wide" | grep -c 'ld.global.v4.b32')
nst=$(echo "$wide" | grep -c 'st.global.v4.f32')
if [ "$n4" -eq 16 ] && [ "$n16" -eq 0 ] && [ "$nst" -eq 16 ]; then
	pass "stream layout: widen8_wide loads 4 bytes and stores 16 a piece"
else
	fail "stream layout: widen8_wide loads 4 bytes and stores 16 a piece" \
		"$n4 4-byte loads, $n16 16-byte loads, $nst 16-byte stores"
fi
"$tilec" -w --no-ptxas --arch=sm_90a tests/gpu/kernels/layouts.tile -o "$tmp/layouts.ptx" 2>/dev/null
plain=$(entry_body "$tmp/layouts.ptx" mm_f16_nt_plain)
if [ "$(echo "$plain" | grep -c 'ld.global.v4.b32')" -eq 4 ] && ! echo "$plain" | grep -q 'ld.global.b16'; then
	pass "transposed operand: mm_f16_nt_plain reads W along its rows"
else
	fail "transposed operand: mm_f16_nt_plain reads W along its rows" \
		"$(echo "$plain" | grep -c 'ld.global.b16') 2-byte loads"
fi

# f32 FFMA operands stored with K along their rows (A as stored, B^T) are turned around by their
# pipelined copies (SWZ_TURN): 4-byte cp.async pieces (.ca), each to its own row of the stage; an
# operand stored K-major (A^T, B) moves in 16-byte pieces as before; every fragment load is a
# 16-byte vector (a thread's rows of one k consecutive). Pieces a copy: A 64 x 16 and B^T 64 x 16
# over 128 threads, 8 each, B 16 x 64, 2; two copies (before the loop and in it).
for k in mm_f32_nn:16:4 mm_f32_nt:32:0 mm_f32_tn:0:8 mm_f32_tt:16:4; do
	name=${k%%:*} rest=${k#*:} w4=${rest%%:*} w16=${rest##*:}
	e=$(entry_body "$tmp/layouts.ptx" "$name")
	n4=$(echo "$e" | grep -c 'cp\.async\.ca\.shared\.global.*, 4, ')
	n16=$(echo "$e" | grep -c 'cp\.async\.cg\.shared\.global.*, 16, ')
	nv=$(echo "$e" | grep -c 'ld\.shared\.v4\.f32')
	ns=$(echo "$e" | grep -c 'ld\.shared\.f32')
	if [ "$n4" -eq "$w4" ] && [ "$n16" -eq "$w16" ] && [ "$nv" -gt 0 ] && [ "$ns" -eq 0 ]; then
		pass "FFMA operands turned K-major: $name"
	else
		fail "FFMA operands turned K-major: $name" "$n4 4-byte pieces (want $w4), $n16 16-byte (want $w16), $nv vector and $ns scalar fragment loads"
	fi
done

# 16-bit A^T on sm_90a: wgmma reads it M-major from its slab (imm-trans-a), brought by TMA as it
# lies (a //@tmap of BK-row boxes for A), no A fragments in registers, no ldmatrix, no mma.sync;
# B^T (tt) K-major beside it.
for k in mm_f16_tn:1 mm_f16_tt:0 mm_bf16_tn:1 mm_bf16_tt:0; do
	name=${k%%:*} tb=${k##*:}
	e=$(entry_body "$tmp/layouts.ptx" "$name")
	m=$(awk "/^\/\/@kernel $name /{k=1; print; next} k && /^\/\/@kernel/{exit} k" "$tmp/layouts.ptx")
	gw=$(echo "$e" | grep -c "wgmma\.mma_async.*}, %rd[0-9]*, %rd[0-9]*, 1, 1, 1, 1, $tb;")
	ga=$(echo "$e" | grep -c 'wgmma\.mma_async.*{%r')
	gl=$(echo "$e" | grep -c 'ldmatrix\|mma\.sync')
	ta=$(echo "$m" | grep -c '^//@tmap a0 b*f16 128 64 64 ')
	if [ "$gw" -ge 4 ] && [ "$ga" -eq 0 ] && [ "$gl" -eq 0 ] && [ "$ta" -eq 1 ]; then
		pass "A^T in wgmma's slab: $name"
	else
		fail "A^T in wgmma's slab: $name" "$gw M-major wgmma, $ga register-A wgmma, $gl ldmatrix/mma.sync, $ta A maps of 64-row boxes (box rows BK, 64 columns)"
	fi
done

# One stage, refilled as soon as it is read (lower_pipeline.c): attention at head dim 128 keeps
# one buffer of K and of V, and inside the loop the first copy goes out after the first product
# (K's, once the scores are in), not at the top of the iteration; 48 KiB a block, so three fit.
for a in sm_80 sm_90a; do
	"$tilec" -w --no-ptxas --arch=$a examples/attention.tile -o "$tmp/attn_refill_$a.ptx" 2>/dev/null
	e=$(entry_body "$tmp/attn_refill_$a.ptx" attention_d128)
	pc=$(echo "$e" | awk '/^\$L0:/{l=1} l && !p && /wgmma\.mma_async|mma\.sync/{p=NR}
		l && !c && /cp\.async\.(cg|ca)\.shared|cp\.async\.bulk\.tensor.*complete_tx/{c=NR} END{print p + 0, c + 0}')
	smem=$(sed -n 's|^//@kernel attention_d128 threads [0-9]* smem \([0-9]*\) .*|\1|p' "$tmp/attn_refill_$a.ptx")
	p=${pc% *} c=${pc#* }
	if [ "$p" -gt 0 ] && [ "$c" -gt "$p" ] && [ "${smem:-999999}" -le 76000 ]; then
		pass "one stage refilled after its reader: attention_d128 ($a)"
	else
		fail "one stage refilled after its reader: attention_d128 ($a)" "first product at line $p, first copy at $c of the loop; $smem bytes of shared memory"
	fi
done

# A k step of 32 16-bit values on sm_90a's wgmma: the K-major A's rows are 64 bytes, in slabs of
# the 64-byte swizzle (descriptor swizzle 2, stride 512 bytes: the constant below), B's N-major
# rows 128; no mma.sync left in either version of the loop.
"$tilec" -w --no-ptxas --arch=sm_90a tests/gpu/kernels/matmul_f16_anyk.tile -o "$tmp/anyk.ptx" 2>/dev/null
e=$(entry_body "$tmp/anyk.ptx" matmul_f16)
gw=$(echo "$e" | grep -c 'wgmma\.mma_async')
gl=$(echo "$e" | grep -c 'mma\.sync')
g64=$(echo "$e" | grep -c 'or\.b64 %rd[0-9]*, %rd[0-9]*, -9223371899415756800;')
if [ "$gw" -ge 2 ] && [ "$gl" -eq 0 ] && [ "$g64" -ge 1 ]; then
	pass "64-byte slabs: a k step of 32 on wgmma"
else
	fail "64-byte slabs: a k step of 32 on wgmma" "$gw wgmma, $gl mma.sync, $g64 descriptors of the 64-byte swizzle"
fi

# Narrow products on sm_90a's wgmma: a slab needs only the stored rows that run along it, so the
# attention backward's 64 x 32 score blocks (B^T of 32 query rows: N = 32, K-major) and its
# products over 32-row steps (K = 32 down an N-major B, A from the scores' registers) all run
# there, with no ldmatrix or mma.sync left, and the forward with 32-key blocks too.
"$tilec" -w --no-ptxas --arch=sm_90a -D BQ_D128=32 -D BK=32 examples/attention_bwd.tile -o "$tmp/attn_bwd.ptx" 2>/dev/null
"$tilec" -w --no-ptxas --arch=sm_90a -D BN_D128=32 examples/attention.tile -o "$tmp/attn_bn32.ptx" 2>/dev/null
for k in attn_bwd:attention_bwd_dkdv_bf16_d128:16:4 attn_bwd:attention_bwd_dq_bf16:8:2 attn_bwd:attention_bwd_dkdv_d128:16:4 \
         attn_bn32:attention_d128:8:2; do
	file=${k%%:*} rest=${k#*:} name=${rest%%:*} rest=${rest#*:} n32=${rest%%:*} nra=${rest##*:}
	e=$(entry_body "$tmp/$file.ptx" "$name")
	g32=$(echo "$e" | grep -c 'wgmma\.mma_async.*m64n32k16')
	gra=$(echo "$e" | grep -c 'wgmma\.mma_async.*{%r')
	gl=$(echo "$e" | grep -c 'ldmatrix\|mma\.sync')
	if [ "$g32" -eq "$n32" ] && [ "$gra" -eq "$nra" ] && [ "$gl" -eq 0 ]; then
		pass "narrow wgmma: $name"
	else
		fail "narrow wgmma: $name" "$g32 m64n32k16 (want $n32), $gra register-A (want $nra), $gl ldmatrix/mma.sync"
	fi
done

# A broadcast moved into another layout through shared memory reads each word once: a mask of
# a row index against a column index, both held as [64, 64] in the product's layout, reads the
# distinct values (12 words on sm_80, 18 on sm_90a), not one a slot (64 each). The lets are
# made before the loop that reads them, so they are made once, in a layout of their own.
# Read once in their own block instead (bmask1), they are made where they are read, in the
# product's layout: no shared memory at all.
cat >"$tmp/bmask.tile" <<'EOF'
kernel bmask(A: f16[M, K], B: f16[N, K], C: f32[M, N])
    grid(1) threads(128)
{
    assume(K % 8 == 0);
    let r = expand_dims(arange(64), 1);
    let c = arange(64);
    for i in 0 .. 1 {
        let s = A[0 +: 64, 0 +: 64] @ B[0 +: 64, 0 +: 64].T;
        C[0 +: 64, 0 +: 64] = where(r <= c, s, 0.0);
    }
}
EOF
cat >"$tmp/bmask1.tile" <<'EOF'
kernel bmask1(A: f16[M, K], B: f16[N, K], C: f32[M, N])
    grid(1) threads(128)
{
    assume(K % 8 == 0);
    let r = expand_dims(arange(64), 1);
    let s = A[0 +: 64, 0 +: 64] @ B[0 +: 64, 0 +: 64].T;
    let c = arange(64);
    C[0 +: 64, 0 +: 64] = where(r <= c, s, 0.0);
}
EOF
for k in bmask:sm_80:12 bmask:sm_90a:18 bmask1:sm_80:0 bmask1:sm_90a:0; do
	t=${k%%:*} k=${k#*:}
	arch=${k%%:*} want=${k#*:}
	"$tilec" --no-ptxas --arch=$arch "$tmp/$t.tile" -o "$tmp/$t.ptx" 2>/dev/null
	got=$(grep -c 'ld\.shared' "$tmp/$t.ptx")
	if [ "$got" -eq "$want" ]; then
		pass "broadcast read once a word: $t $arch"
	else
		fail "broadcast read once a word: $t $arch" "$got ld.shared, want $want"
	fi
done

# Transposes pushed to the leaves (transpose_push.c): attention's dK/dV written as the FA2 paper
# writes it, P and dS as [queries, keys] and `f16(p).T @ dO`, is computed transposed, K Q^T:
# every product on wgmma, none on mma.sync, and no transpose through shared memory (the
# hand-transposed form reads 0-2 words there: a mask's index column).
cat >"$tmp/fa2t.tile" <<'EOF'
kernel fa2t(Q: f16[BH, S, D], K: f16[BH, S, D], V: f16[BH, S, D], dO: f16[BH, S, D],
            L: f32[BH, S], Dl: f32[BH, S], dK: f16[BH, S, D], dV: f16[BH, S, D], scale: f32)
    grid(cdiv(S, 64), BH) threads(128)
{
    assume(D == 64);
    let n0 = block.x * 64;
    var dk: f32[64, 64] = 0;
    var dv: f32[64, 64] = 0;
    for m in 0 .. S step 64 pipeline(2) {
        let s = Q[block.y, m +: 64, 0 +: 64] @ K[block.y, n0 +: 64, 0 +: 64].T;
        let rows = m + expand_dims(arange(64), 1);
        let p = where(rows < S, exp(s * scale - expand_dims(L[block.y, m +: 64], 1)), 0.0);
        dv += f16(p).T @ dO[block.y, m +: 64, 0 +: 64];
        let dp = dO[block.y, m +: 64, 0 +: 64] @ V[block.y, n0 +: 64, 0 +: 64].T;
        let ds = p * (dp - expand_dims(Dl[block.y, m +: 64], 1));
        dk += f16(ds).T @ Q[block.y, m +: 64, 0 +: 64];
    }
    dK[block.y, n0 +: 64, 0 +: 64] = f16(dk * scale);
    dV[block.y, n0 +: 64, 0 +: 64] = f16(dv);
}
EOF
if "$tilec" --no-ptxas --arch=sm_90a "$tmp/fa2t.tile" -o "$tmp/fa2t.ptx" 2>"$tmp/fa2t.err"; then
	wg=$(grep -c 'wgmma\.mma_async' "$tmp/fa2t.ptx")
	ms=$(grep -c 'mma\.sync' "$tmp/fa2t.ptx")
	ls=$(grep -c 'ld\.shared' "$tmp/fa2t.ptx")
	if [ "$wg" -eq 16 ] && [ "$ms" -eq 0 ] && [ "$ls" -le 2 ]; then
		pass "transposes pushed: FA2 dK/dV as written"
	else
		fail "transposes pushed: FA2 dK/dV as written" "$wg wgmma (want 16), $ms mma.sync (want 0), $ls ld.shared (want <= 2)"
	fi
else
	fail "transposes pushed: FA2 dK/dV as written" "$(head -c 300 "$tmp/fa2t.err")"
fi

# ... and compiles to the code the transposes written out give: scores, a causal mask of a
# query column and a key row, and P stored transposed, as written (kt) and by hand (kh).
for k in kt kh; do
	if [ $k = kt ]; then
		body='let s = Q[m +: 64, 0 +: 64] @ K[n0 +: 64, 0 +: 64].T;
        let qs = m + expand_dims(arange(64), 1);
        let keys = n0 + arange(64);
        let p = where(qs < S && (causal == 0 || keys <= qs), exp(s), 0.0);
        P[n0 +: 64, m +: 64] = p.T;'
	else
		body='let st = K[n0 +: 64, 0 +: 64] @ Q[m +: 64, 0 +: 64].T;
        let qs = m + arange(64);
        let keys = n0 + expand_dims(arange(64), 1);
        let pt = where(qs < S && (causal == 0 || keys <= qs), exp(st), 0.0);
        P[n0 +: 64, m +: 64] = pt;'
	fi
	cat >"$tmp/$k.tile" <<EOF
kernel k(Q: f16[S, D], K: f16[S, D], P: f32[S, S], causal: i32)
    grid(cdiv(S, 64)) threads(128)
{
    assume(D == 64);
    let n0 = block.x * 64;
    for m in 0 .. S step 64 {
        $body
    }
}
EOF
	"$tilec" --no-ptxas --arch=sm_90a "$tmp/$k.tile" -o "$tmp/$k.ptx" 2>/dev/null
	grep -v '^//' "$tmp/$k.ptx" >"$tmp/$k.code"
done
if [ -s "$tmp/kt.code" ] && cmp -s "$tmp/kt.code" "$tmp/kh.code"; then
	pass "transposes pushed: the same code as written out"
else
	fail "transposes pushed: the same code as written out" "$(diff "$tmp/kt.code" "$tmp/kh.code" | head -5)"
fi

# A where() whose mask compares index tiles (a causal mask with the row's end) is tested once
# a block (lower_mask.c): one more branch, past the mask, than with -fno-mask-split, and the
# same selects, made on the masked side only.
cat >"$tmp/cmask.tile" <<'EOF'
kernel cmask(Q: f16[S, D], K: f16[S, D], P: f32[S, S])
    grid(cdiv(S, 64)) threads(128)
{
    assume(D == 64);
    let m0 = block.x * 64;
    let rows = m0 + expand_dims(arange(64), 1);
    for n in 0 .. S step 64 pipeline(2) {
        let s = Q[m0 +: 64, 0 +: 64] @ K[n +: 64, 0 +: 64].T;
        let cols = n + arange(64);
        P[m0 +: 64, n +: 64] = where(cols < S && cols <= rows, s, 0.0);
    }
}
EOF
for arch in sm_80 sm_90a; do
	"$tilec" --no-ptxas --arch=$arch "$tmp/cmask.tile" -o "$tmp/cm1.ptx" 2>/dev/null
	"$tilec" --no-ptxas --arch=$arch -fno-mask-split "$tmp/cmask.tile" -o "$tmp/cm0.ptx" 2>/dev/null
	b1=$(grep -c 'bra' "$tmp/cm1.ptx") b0=$(grep -c 'bra' "$tmp/cm0.ptx")
	s1=$(grep -c 'selp' "$tmp/cm1.ptx") s0=$(grep -c 'selp' "$tmp/cm0.ptx")
	if [ "$b1" -eq $((b0 + 1)) ] && [ "$s1" -eq "$s0" ] && [ "$s1" -gt 0 ]; then
		pass "mask tested once a block: $arch"
	else
		fail "mask tested once a block: $arch" "$b1 bra, $s1 selp; with -fno-mask-split $b0 bra, $s0 selp"
	fi
done

# tf32 A^T @ B on sm_90a: wgmma (A from registers), B turned K-major in shared memory by each
# thread's 4 x 4 blocks -- 4 vector reads back and 4 vector writes a block, no mma.sync. The
# unaligned kernel's loop is versioned on alignment (lower_version.c): both versions do so.
for k in mm_tf32_tn:4:4 mm_tf32_tn_wg:8:16 mm_tf32_tn_unaligned:8:8; do
	name=${k%%:*} nw=${k#*:} nw=${nw%%:*} nst=${k##*:}
	e=$(entry_body "$tmp/layouts.ptx" "$name")
	gw=$(echo "$e" | grep -c 'wgmma.mma_async.*tf32')
	gs=$(echo "$e" | grep -c 'st.shared.v4.b32')
	gm=$(echo "$e" | grep -c 'mma.sync')
	if [ "$gw" -eq "$nw" ] && [ "$gs" -eq "$nst" ] && [ "$gm" -eq 0 ]; then
		pass "transposing copy: $name on tf32 wgmma, B turned in $nst vector stores"
	else
		fail "transposing copy: $name on tf32 wgmma, B turned in $nst vector stores" \
			"$gw wgmma, $gs 16-byte shared stores, $gm mma.sync"
	fi
done

# A pipelined loop over f16 windows whose row lengths no assume covers is lowered twice
# (lower_version.c): 16-byte copies of both operands in one version (on sm_90a's wgmma, TMA
# boxes: its k step of 32 in the 64-byte swizzle), both operands loaded in each iteration (rows
# of odd length possible) in the other.
e=$(entry_body "$tmp/layouts.ptx" mm_f16_nt_unaligned)
c16=$(echo "$e" | grep -c 'cp\.async\.cg\.shared\.global.*, 16\|cp\.async\.bulk\.tensor.*complete_tx')
l16=$(echo "$e" | grep -c 'ld\.global[.a-z]*\.[bu]16 ')
if [ "$c16" -ge 2 ] && [ "$l16" -ge 1 ]; then
	pass "versioned loop: mm_f16_nt_unaligned copies 16-byte pieces where its sizes allow"
else
	fail "versioned loop: mm_f16_nt_unaligned copies 16-byte pieces where its sizes allow" \
		"$c16 16-byte copies or TMA boxes, $l16 2-byte loads"
fi
# A wgmma product whose loop is versioned brings its operands by TMA in the aligned version only
# (lower_version.c): its maps marked if-aligned (the launcher builds them only where that version
# runs), their mbarriers invalidated on that path before the join. A window of a batched tensor
# with strides of its own copies by cp.async there instead (its map would need outer strides the
# test does not cover): what cp.async writes the tensor cores read through the async proxy, so a
# fence.proxy.async comes before each barrier that publishes a stage.
cat >"$tmp/wg_cpasync.tile" <<'TILE'
kernel wg_cp(A: f16[M, K], B: f16[K, N], C: f32[M, N]) grid(cdiv(M, 128), cdiv(N, 256)) threads(256)
{
    var acc: f32[128, 256] = 0;
    for k in 0 .. K step 64 pipeline(3) {
        acc += A[block.x * 128 +: 128, k +: 64] @ B[k +: 64, block.y * 256 +: 256];
    }
    C[block.x * 128 +: 128, block.y * 256 +: 256] = acc;
}
kernel wg_strided(A: f16[M, K], B: f16[Bt, K, N] strides(SB, LDB, 1), C: f32[M, N]) grid(cdiv(M, 128), cdiv(N, 128), Bt) threads(256)
{
    assume(SB % 8 == 0);
    assume(K % 8 == 0);
    var acc: f32[128, 128] = 0;
    for k in 0 .. K step 64 pipeline(3) {
        acc += A[block.x * 128 +: 128, k +: 64] @ B[block.z, k +: 64, block.y * 128 +: 128];
    }
    C[block.x * 128 +: 128, block.y * 128 +: 128] = acc;
}
TILE
"$tilec" -w --no-ptxas --arch=sm_90a "$tmp/wg_cpasync.tile" -o "$tmp/wg_cp.ptx" 2>/dev/null
e=$(entry_body "$tmp/wg_cp.ptx" wg_cp)
wg=$(echo "$e" | grep -c 'wgmma\.mma_async')
tm=$(echo "$e" | grep -c 'cp\.async\.bulk\.tensor')
iv=$(echo "$e" | grep -c 'mbarrier\.inval')
ia=$(awk '/^\/\/@kernel wg_cp /,/^\/\/@end/' "$tmp/wg_cp.ptx" | grep -c '^//@tmap .* if-aligned ')
na=$(awk '/^\/\/@kernel wg_cp /,/^\/\/@end/' "$tmp/wg_cp.ptx" | grep -c '^//@tmap ')
if [ "$wg" -ge 4 ] && [ "$tm" -ge 2 ] && [ "$iv" -ge 2 ] && [ "$ia" -eq 2 ] && [ "$na" -eq 2 ]; then
	pass "versioned wgmma loop: TMA in the aligned version, if-aligned maps, mbarriers invalidated"
else
	fail "versioned wgmma loop: TMA in the aligned version, if-aligned maps, mbarriers invalidated" \
		"$wg wgmma, $tm TMA copies, $iv invalidations, $ia of $na maps if-aligned"
fi
e=$(entry_body "$tmp/wg_cp.ptx" wg_strided)
wg=$(echo "$e" | grep -c 'wgmma\.mma_async')
fp=$(echo "$e" | grep -c 'fence\.proxy\.async')
cp=$(echo "$e" | grep -c 'cp\.async\.cg\.shared\.global.*, 16')
nb=$(awk '/^\/\/@kernel wg_strided /,/^\/\/@end/' "$tmp/wg_cp.ptx" | grep -c '^//@tmap a1 ')
if [ "$wg" -ge 4 ] && [ "$fp" -ge 1 ] && [ "$cp" -ge 1 ] && [ "$nb" -eq 0 ]; then
	pass "versioned wgmma loop: cp.async stages get a proxy fence"
else
	fail "versioned wgmma loop: cp.async stages get a proxy fence" "$wg wgmma, $fp proxy fences, $cp 16-byte copies, $nb maps of B"
fi
# ... and the launcher is asked for nothing the kernel did not state: no assume, the pointers'
# own alignment (the version test covers the rest)
m=$(awk '/^\/\/@kernel mm_f16_nt_unaligned /{k=1; print; next} k && /^\/\/@kernel/{exit} k' "$tmp/layouts.ptx")
ma=$(echo "$m" | grep -c '^//@assume')
mp=$(echo "$m" | grep -c '^//@arg [AB] ptr f16 2$')
if [ "$ma" -eq 0 ] && [ "$mp" -eq 2 ]; then
	pass "versioned loop: the metadata keeps the kernel's own facts"
else
	fail "versioned loop: the metadata keeps the kernel's own facts" "$ma assume lines, $mp pointers at 2 bytes"
fi

# Block order: a 2-D grid of product tiles is renumbered 8 row blocks at a time (reads %nsmid to
# tell a large grid); attention's 2-D grid (query blocks by heads) and the examples' own 1-D
# numbering are left alone.
nsm_mm=$(entry_body "$tmp/layouts.ptx" mm_f16_nn | grep -c '%nsmid')
"$tilec" -w --no-ptxas --arch=sm_90a examples/attention.tile -o "$tmp/attn.ptx" 2>/dev/null
"$tilec" -w --no-ptxas --arch=sm_90a examples/matmul_f16.tile -o "$tmp/mf16g.ptx" 2>/dev/null
nsm_other=$(cat "$tmp/attn.ptx" "$tmp/mf16g.ptx" | grep -c '%nsmid')
if [ "$nsm_mm" -eq 1 ] && [ "$nsm_other" -eq 0 ]; then
	pass "block order: grouped for a 2-D grid of product tiles only"
else
	fail "block order: grouped for a 2-D grid of product tiles only" \
		"mm_f16_nn reads %nsmid $nsm_mm times, attention and matmul_f16 $nsm_other"
fi

# An epilogue whose row length no assume states tests the launch's values once and stores in
# vectors where they allow (linear: pairs of f16, 4-byte stores), element by element where not;
# with the fact (matmul_f16) there is nothing to test.
for arch in sm_80 sm_90a; do
	"$tilec" --no-ptxas --arch=$arch examples/linear.tile -o "$tmp/linear.ptx" 2>/dev/null
	lin=$(entry_body "$tmp/linear.ptx" linear)
	nv=$(echo "$lin" | grep -c 'st.global.v2.b16')
	ns=$(echo "$lin" | grep -c 'st.global.b16')
	if [ "$nv" -eq 64 ] && [ "$ns" -eq 128 ] && echo "$lin" | grep -q 'and.b64.*, 3;'; then
		pass "versioned stores: linear ($arch) has 64 pair stores and 128 element stores"
	else
		fail "versioned stores: linear ($arch) has 64 pair stores and 128 element stores" \
			"$nv pair stores, $ns element stores"
	fi
done
"$tilec" --no-ptxas --arch=sm_80 examples/matmul_f16.tile -o "$tmp/mf16.ptx" 2>/dev/null
mf=$(entry_body "$tmp/mf16.ptx" matmul_f16)
if ! echo "$mf" | grep -q 'st.global.b16' && echo "$mf" | grep -q 'st.global.v2.b16'; then
	pass "versioned stores: none where the facts prove the pairs aligned (matmul_f16)"
else
	fail "versioned stores: none where the facts prove the pairs aligned (matmul_f16)" \
		"$(echo "$mf" | grep -c 'st.global.b16') element stores"
fi

# f16(acc) and bf16(acc) stored (into the TMA store's staged tile on sm_90a): the cast's rounding
# is the store's narrowing, one conversion a value (lower_mem.c, widened_from), none back to f32
# and again. (Without the split K loop's sum, whose shifts of slice numbers read as packing.)
for k in matmul_f16:f16 matmul_bf16:bf16; do
	name=${k%%:*} ty=${k##*:}
	"$tilec" --no-ptxas --arch=sm_90a -fno-split-k examples/$name.tile -o "$tmp/cv.$name.ptx" 2>/dev/null
	e=$(entry_body "$tmp/cv.$name.ptx" "$name")
	nn=$(echo "$e" | grep -c "cvt\.rn\.$ty\.f32")
	nb=$(echo "$e" | grep -c "cvt\.f32\.$ty\|cvt\.u32\.u16\|shl\.b32")
	np=$(echo "$e" | grep -c 'st\.\(global\|shared\)\.v2\.b16')
	if [ "$np" -gt 0 ] && [ "$nn" -eq $((2 * np)) ] && [ "$nb" -eq 0 ]; then
		pass "one conversion a stored value: $name"
	else
		fail "one conversion a stored value: $name" "$nn narrowing conversions, $nb widening, $np pair stores"
	fi
done

# -fwarp-specialize (lower_warpspec.c): a product loop whose copies are all TMA gets a producer
# warp -- 32 threads more than threads() says, in the metadata and .maxntid alike; the consumers'
# barriers after the split count only them; each consumer warp hands a stage back with one
# mbarrier.arrive; the stage buffers and both barrier rings stay base + stage * stride (no
# .local, ptxas: no stack, no spill, no lost wgmma path). Without the option, or where the
# kernel's registers would not fit beside the extra warp (linear), or where code before the loop
# spreads over the threads (attention), the PTX is the plain one.
"$tilec" --arch=sm_90a -fwarp-specialize examples/matmul_f16.tile -o "$tmp/ws.ptx" 2>/dev/null
"$tilec" --arch=sm_90a examples/matmul_f16.tile -o "$tmp/ws0.ptx" 2>/dev/null
if grep -q '^//@kernel matmul_f16 threads 288 ' "$tmp/ws.ptx" && grep -q '^\.maxntid 288, 1, 1' "$tmp/ws.ptx" &&
   [ "$(grep -c 'bar\.sync 0, 256;' "$tmp/ws.ptx")" -ge 1 ] && [ "$(grep -c 'mbarrier\.arrive\.shared::cta\.b64 _' "$tmp/ws.ptx")" -eq 1 ] &&
   [ "$(grep -c 'setp\.ge\.u32.*, 256;' "$tmp/ws.ptx")" -ge 1 ] && [ "$(grep -c '^[[:space:]]*ret;' "$tmp/ws.ptx")" -eq 2 ] &&
   ! grep -q '\.local' "$tmp/ws.ptx" && grep -q '^//@kernel matmul_f16 threads 256 ' "$tmp/ws0.ptx" &&
   ! grep -q 'bar\.sync 0, \|mbarrier\.arrive\.shared' "$tmp/ws0.ptx"; then
	pass "warp specialization: matmul_f16 with a producer warp, and without the option as before"
else
	fail "warp specialization: matmul_f16 with a producer warp, and without the option as before" \
		"$(grep '^//@kernel\|maxntid' "$tmp/ws.ptx" | tr '\n' ' ')"
fi
# ptxas_clean NAME PTX KERNEL...: sm_90a ptxas takes PTX with no stack, spill or lost wgmma path
ptxas_clean() {
	name=$1 ptx=$2; shift 2
	if [ -z "$PTXAS" ] || [ ! -x "$PTXAS" ]; then
		skip "$name" "no ptxas"
		return
	fi
	"$PTXAS" -arch=sm_90a -v --warn-on-spills "$ptx" -o "$ptx.cubin" >"$ptx.log" 2>&1
	probs=$(spill_problems "$ptx.log" "$@")
	if [ $? -eq 0 ] && [ -z "$probs" ] && ! grep -q 'C75[01][0-9]\|C7602' "$ptx.log"; then
		pass "$name"
	else
		fail "$name" "$probs $(grep -m1 warning "$ptx.log")"
	fi
}
ptxas_clean "warp specialization: ptxas, no stack, spill or lost wgmma path" "$tmp/ws.ptx" matmul_f16
# The swapped tf32 product's consumers need more registers than a ninth warp leaves them (168):
# its producer is a warpgroup that gives them its own (setmaxnreg: 40 for it, 232 for them, the
# launch's 168 at entry in .maxnreg); the example's loop is versioned on K % 8, and its other
# version sends the producer's threads away and hands over the registers the same way. ptxas
# then keeps the wgmma path (a ninth warp alone had it serialized, C7512).
"$tilec" --arch=sm_90a -fwarp-specialize examples/matmul_tf32.tile -o "$tmp/wsg.ptx" 2>"$tmp/wsg.err"
"$tilec" --arch=sm_90a -fwarp-specialize --report examples/matmul_tf32.tile -o /dev/null >"$tmp/wsg.rep" 2>&1
if grep -q '^//@kernel matmul_tf32 threads 384 ' "$tmp/wsg.ptx" && grep -q '^\.maxntid 384, 1, 1' "$tmp/wsg.ptx" &&
   grep -q '^\.maxnreg 168$' "$tmp/wsg.ptx" && [ "$(grep -c 'setmaxnreg\.dec\.sync\.aligned\.u32 40;' "$tmp/wsg.ptx")" -eq 2 ] &&
   [ "$(grep -c 'setmaxnreg\.inc\.sync\.aligned\.u32 232;' "$tmp/wsg.ptx")" -eq 2 ] && ! grep -q 'bar\.sync 0, 288' "$tmp/wsg.ptx" &&
   grep -q 'producer warpgroup that issues the copies and gives the others its registers: 232 a thread from 168' "$tmp/wsg.rep" &&
   grep -q 'A by TMA; B by TMA; pipeline(3), a producer warpgroup' "$tmp/wsg.rep" && ! grep -q 'serializes' "$tmp/wsg.err"; then
	pass "warp specialization: matmul_tf32's producer warpgroup gives its registers to the consumers"
else
	fail "warp specialization: matmul_tf32's producer warpgroup gives its registers to the consumers" \
		"$(grep '^//@kernel\|maxntid\|maxnreg\|setmaxnreg' "$tmp/wsg.ptx" | tr '\n' ' ') $(cat "$tmp/wsg.err")"
fi
ptxas_clean "warp specialization: matmul_tf32 through ptxas, no stack, spill or lost wgmma path" "$tmp/wsg.ptx" matmul_tf32
# ... which is the default for that product (not for the others: the 16-bit example stays 256
# threads), and split over K as before: the producer's threads leave through a tail after the
# kernel's return that meets the slices' two cluster barriers where the launch is split;
# -fno-warp-specialize takes it away.
"$tilec" --arch=sm_90a examples/matmul_tf32.tile -o "$tmp/wsd.ptx" 2>/dev/null
"$tilec" --arch=sm_90a -fno-warp-specialize examples/matmul_tf32.tile -o "$tmp/wsn.ptx" 2>/dev/null
tail_syncs=$(awk '/^\tret;$/ { last = n; n = 0; next } /barrier\.cluster\.arrive/ { n++ } END { print last }' "$tmp/wsd.ptx")
if grep -q '^//@kernel matmul_tf32 threads 384 ' "$tmp/wsd.ptx" && grep -q '^//@split ' "$tmp/wsd.ptx" &&
   [ "$(grep -c 'setmaxnreg' "$tmp/wsd.ptx")" -eq 4 ] && [ "$tail_syncs" -eq 2 ] &&
   grep -q '^//@kernel matmul_tf32 threads 256 ' "$tmp/wsn.ptx" && ! grep -q 'setmaxnreg' "$tmp/wsn.ptx" &&
   grep -q '^//@kernel matmul_f16 threads 256 ' "$tmp/ws0.ptx"; then
	pass "warp specialization: the tf32 product's producer warpgroup by default, split over K still"
else
	fail "warp specialization: the tf32 product's producer warpgroup by default, split over K still" \
		"$(grep '^//@kernel\|^//@split' "$tmp/wsd.ptx" "$tmp/wsn.ptx" | tr '\n' ' ') tail barriers $tail_syncs"
fi
# fp8: the partial sums stay in flight with the group (lower_pipeline.c, keep_group), added
# after the next iteration's wait, and ptxas keeps them without a spill
"$tilec" --arch=sm_90a -fwarp-specialize examples/matmul_fp8.tile -o "$tmp/ws8.ptx" 2>/dev/null
e=$(entry_body "$tmp/ws8.ptx" matmul_fp8)
if grep -q '^//@kernel matmul_fp8 threads 288 ' "$tmp/ws8.ptx" && [ "$(echo "$e" | grep -c 'mbarrier\.arrive\.shared')" -eq 1 ] &&
   [ "$(echo "$e" | grep -c 'wgmma\.wait_group\.sync\.aligned 0')" -eq 2 ]; then
	pass "warp specialization: matmul_fp8's partial sums across the producer's stages"
else
	fail "warp specialization: matmul_fp8's partial sums across the producer's stages" "$(grep '^//@kernel' "$tmp/ws8.ptx" | tr '\n' ' ')"
fi
ptxas_clean "warp specialization: matmul_fp8 through ptxas, no stack or spill" "$tmp/ws8.ptx" matmul_fp8 matmul_fp8_block
# Kernels written the way a user would: a product whose block walks the tiles with a 2-D grid
# (producer warp), the same with a row sum before the loop (spread over the threads: plain),
# and one at 1024 threads (its 128 rows too few for 8 warpgroups: mma.sync, no TMA, plain).
# --report names the extra warp.
# user_product NAME THREADS [EXTRA_PARAMS] [STATEMENT]: C = A @ B over a 2-D grid of 128 x 128
# tiles, STATEMENT before the loop
user_product() {
	printf 'kernel %s(A: f16[M, K], B: f16[K, N], C: f32[M, N]%s) grid(cdiv(M, 128), cdiv(N, 128)) threads(%s)\n' "$1" "$3" "$2"
	printf '{\n    assume(K %% 8 == 0);\n    assume(N %% 8 == 0);\n%s\n    var acc: f32[128, 128] = 0;\n' "$4"
	printf '    for k in 0 .. K step 64 pipeline(3) {\n'
	printf '        acc += A[block.x * 128 +: 128, k +: 64] @ B[k +: 64, block.y * 128 +: 128];\n    }\n'
	printf '    C[block.x * 128 +: 128, block.y * 128 +: 128] = acc;\n}\n'
}
{
	user_product grid2 256
	user_product rowsum_first 256 ', S: f32[M]' \
		'    S[block.x * 128 +: 128] = sum(f32(A[block.x * 128 +: 128, 0 +: 64]), axis=1);'
	user_product wide 1024
} >"$tmp/wsu.tile"
"$tilec" --arch=sm_90a -fwarp-specialize "$tmp/wsu.tile" -o "$tmp/wsu.ptx" 2>"$tmp/wsu.err"
want="grid2 288,rowsum_first 256,wide 1024"
got=$(sed -n 's|^//@kernel \([a-z_0-9]*\) threads \([0-9]*\) .*|\1 \2|p' "$tmp/wsu.ptx" | paste -sd, -)
if [ "$got" = "$want" ] && [ -z "$(maxntid_mismatches "$tmp/wsu.ptx")" ]; then
	pass "warp specialization: a user's 2-D grid product, and where it stays plain"
else
	fail "warp specialization: a user's 2-D grid product, and where it stays plain" "threads: $got $(head -c 300 "$tmp/wsu.err")"
fi
"$tilec" --arch=sm_90a -fwarp-specialize --no-ptxas --report "$tmp/wsu.tile" 2>/dev/null >"$tmp/wsu.rep"
if grep -q 'threads            288 (256 and a producer warp that issues the copies)' "$tmp/wsu.rep"; then
	pass "warp specialization: --report names the producer warp"
else
	fail "warp specialization: --report names the producer warp" "$(grep threads "$tmp/wsu.rep" | head -3 | tr '\n' ' ')"
fi
for k in linear attention; do
	"$tilec" --arch=sm_90a -fwarp-specialize examples/$k.tile -o "$tmp/ws.$k.ptx" 2>/dev/null
	"$tilec" --arch=sm_90a examples/$k.tile -o "$tmp/ws0.$k.ptx" 2>/dev/null
	if [ -s "$tmp/ws.$k.ptx" ] && cmp -s "$tmp/ws.$k.ptx" "$tmp/ws0.$k.ptx"; then
		pass "warp specialization: $k keeps its plain loop"
	else
		fail "warp specialization: $k keeps its plain loop" "the PTX differs with -fwarp-specialize"
	fi
done

# A user's split-K product (few rows: the K loop cut into slices on grid y, run-time bounds,
# partial sums added with atomic_add): the same fast path as the examples' loop -- wgmma with
# both operands by TMA on sm_90a, mma.sync with cp.async on sm_80 -- and the sums leave as
# reductions (red.global.add.f32), no local memory, ptxas clean.
cat >"$tmp/splitk.tile" <<'TILE'
kernel splitk(A: f16[M, K], B: f16[K, N], C: f32[M, N]) grid(cdiv(M, 64) * cdiv(N, 128), 4) threads(128)
{
    assume(K % 8 == 0);
    assume(N % 8 == 0);
    let m0 = block.x % cdiv(M, 64) * 64;
    let n0 = block.x / cdiv(M, 64) * 128;
    let slice = cdiv(cdiv(K, 4), 64) * 64;
    let k0 = block.y * slice;
    var acc: f32[64, 128] = 0;
    for k in k0 .. min(K, k0 + slice) step 64 pipeline(4) {
        acc += A[m0 +: 64, k +: 64] @ B[k +: 64, n0 +: 128];
    }
    atomic_add(C[m0 +: 64, n0 +: 128], acc);
}
TILE
"$tilec" --arch=sm_90a "$tmp/splitk.tile" -o "$tmp/splitk90.ptx" 2>"$tmp/splitk.err"
"$tilec" --arch=sm_80 "$tmp/splitk.tile" -o "$tmp/splitk80.ptx" 2>>"$tmp/splitk.err"
if grep -q 'wgmma\.mma_async' "$tmp/splitk90.ptx" && grep -q 'cp\.async\.bulk\.tensor' "$tmp/splitk90.ptx" &&
   [ "$(grep -c 'red\.global\.add\.f32' "$tmp/splitk90.ptx")" -ge 1 ] && grep -q 'mma\.sync' "$tmp/splitk80.ptx" &&
   grep -q 'cp\.async\.cg' "$tmp/splitk80.ptx" && ! grep -q '\.local' "$tmp/splitk90.ptx" "$tmp/splitk80.ptx" &&
   ! grep -q 'atom\.global' "$tmp/splitk90.ptx"; then
	pass "a user's split-K product: the tensor-core loop, sums added by red.global"
else
	fail "a user's split-K product: the tensor-core loop, sums added by red.global" "$(head -c 300 "$tmp/splitk.err")"
fi
ptxas_clean "a user's split-K product: ptxas, no stack, spill or lost wgmma path" "$tmp/splitk90.ptx" splitk

# Two-block clusters (lower_warpspec.c, ws_exchange): with a producer warp, a loop whose TMA
# operand has two or more boxes a stage asks for clusters of two (//@cluster 2); the blocks
# compare their windows between two cluster barriers, each issues every other box of a shared
# one as a multicast copy with a register cta mask, consumer warps also arrive on the other
# block's empty barriers (16 arrivals a phase for 8 warps) and say when they have all their
# bytes; wgmma descriptors take the address mod 2^18 (a clustered block's shared addresses carry
# its rank above; remote arrivals without .release.cluster, whose fence cost a third of the speed).
# Only with -fcluster: without it, and for a kernel whose windows are one box a stage, none of it
# (the cluster barriers of a split over K aside: a producer's threads meet them on their way out).
"$tilec" --arch=sm_90a -fwarp-specialize -fcluster examples/matmul_f16.tile -o "$tmp/wsc.ptx" 2>/dev/null
if grep -q '^//@cluster 2$' "$tmp/wsc.ptx" && [ "$(grep -c 'barrier\.cluster\.arrive' "$tmp/wsc.ptx")" -eq 2 ] &&
   [ "$(grep -c 'multicast::cluster \[.*\], %h[0-9]*;' "$tmp/wsc.ptx")" -eq 4 ] &&
   [ "$(grep -c 'mbarrier\.init\.shared::cta\.b64 \[%r[0-9]*\], 16;' "$tmp/wsc.ptx")" -eq 4 ] &&
   [ "$(grep -c 'mbarrier\.arrive\.shared::cluster\.b64 _' "$tmp/wsc.ptx")" -eq 2 ] &&
   ! grep -q 'release\.cluster\.shared::cluster' "$tmp/wsc.ptx" &&
   grep -q 'and\.b32 %r[0-9]*, %r[0-9]*, 262143;' "$tmp/wsc.ptx" &&
   ! grep -q '@cluster\|multicast' "$tmp/ws.ptx" &&
   [ "$(grep -c 'mbarrier\.init\.shared::cta\.b64 \[%r[0-9]*\], 8;' "$tmp/ws.ptx")" -eq 4 ]; then
	pass "clusters: with -fcluster matmul_f16 shares B's boxes in pairs of blocks, and not without"
else
	fail "clusters: with -fcluster matmul_f16 shares B's boxes in pairs of blocks, and not without" \
		"$(grep -c multicast "$tmp/wsc.ptx") multicast, $(grep -c 'barrier\.cluster' "$tmp/wsc.ptx") cluster barriers"
fi
ptxas_clean "clusters: ptxas, no stack, spill or lost wgmma path" "$tmp/wsc.ptx" matmul_f16
# B^T's window is one box (128 rows x 64 columns): nothing to split, no clusters
sed 's/B: f16\[K, N\]/B: f16[N, K]/; s/B\[k +: 64, block\.y \* 128 +: 128\]/B[block.y * 128 +: 128, k +: 64].T/; s/assume(N % 8 == 0);//' \
	"$tmp/wsu.tile" | awk '/^kernel grid2/{k=1} k; /^}/{if(k) exit}' >"$tmp/wsnt.tile"
"$tilec" --arch=sm_90a -fwarp-specialize -fcluster "$tmp/wsnt.tile" -o "$tmp/wsnt.ptx" 2>"$tmp/wsnt.err"
if grep -q '^//@kernel grid2 threads 288 ' "$tmp/wsnt.ptx" && ! grep -q '@cluster\|multicast' "$tmp/wsnt.ptx"; then
	pass "clusters: a one-box window (B^T) keeps the producer warp without clusters"
else
	fail "clusters: a one-box window (B^T) keeps the producer warp without clusters" \
		"$(grep '^//@kernel\|^//@cluster' "$tmp/wsnt.ptx" | tr '\n' ' ') $(head -c 300 "$tmp/wsnt.err")"
fi

# exp(x - max(x)) (lower_expr.c, lower_exp_difference): each element one fma with log2 e and an
# ex2, no subtraction and no multiply of its own; the maximum's product by -log2 e once. The
# attention example's exp(t * scale - m): one fma by scale * log2 e (a register, taken once a
# kernel: 4 multiplies by log2 e) an element.
"$tilec" --arch=sm_90a examples/softmax.tile -o "$tmp/expd.ptx" 2>/dev/null
"$tilec" --arch=sm_80 examples/attention.tile -o "$tmp/expda.ptx" 2>/dev/null
nex=$(grep -c 'ex2\.approx' "$tmp/expd.ptx")
nfma=$(grep -c 'fma\.rn\.f32 %f[0-9]*, %f[0-9]*, 0f3FB8AA3B, %f[0-9]*;' "$tmp/expd.ptx")
if [ "$nex" -ge 8 ] && [ "$nfma" -eq "$nex" ] && [ "$(grep -c '0fBFB8AA3B' "$tmp/expd.ptx")" -eq 1 ] &&
   ! grep -q 'sub\.f32' "$tmp/expd.ptx" &&
   [ "$(grep -cE 'fma\.rn\.f32 %f[0-9]+, %f[0-9]+, %f[0-9]+, %f[0-9]+;' "$tmp/expda.ptx")" -ge 128 ] &&
   [ "$(grep -c 'mul\.f32 %f[0-9]*, %f[0-9]*, 0f3FB8AA3B;' "$tmp/expda.ptx")" -eq 4 ]; then
	pass "exp(x - max): one fma and an ex2 an element"
else
	fail "exp(x - max): one fma and an ex2 an element" "$nex ex2, $nfma fma with log2 e"
fi

# Products in flight (compiler/wgmma_wait.c): in attn_next (tests/gpu/kernels/features.tile) the
# next block's scores are waited for past the softmax, inside the edge block's masking (on the
# side of its uniform test that makes the mask, before the shared stores; lower_mask.c) and, as
# one of two groups in flight, before `s = s_next`; the PV product's wait comes at the loop's
# end. With -fno-wgmma-wait each wait follows its commit, no branch between.
for opt in "" -fno-wgmma-wait; do
	"$tilec" -w --no-ptxas --arch=sm_90a $opt tests/gpu/kernels/features.tile -o "$tmp/next$opt.ptx" 2>/dev/null
done
next_seq() {
	awk '/^\.visible \.entry attn_next\(/{k=1} k' "$1" | awk '/^}/{exit} /^\$L0:/{l=1} l' |
		grep -oE 'wgmma\.commit_group|wgmma\.wait_group\.sync\.aligned [0-9]|bra\.uni \$L[0-9]+|bar\.sync' |
		sed 's/wgmma\.wait_group\.sync\.aligned /wait/; s/wgmma\.commit_group/commit/; s/bra\.uni //; s/bar\.sync/bar/' | tr '\n' ' '
}
moved=$(next_seq "$tmp/next.ptx"); kept=$(next_seq "$tmp/next-fno-wgmma-wait.ptx")
if echo "$moved" | grep -q '^$L1 $L2 $L3 bar commit $L4 $L6 wait0 bar bar bar $L5 commit wait1 wait0 $L0' &&
   echo "$kept" | grep -q '^$L1 $L2 $L3 bar commit wait0 $L4 $L6 bar bar bar $L5 commit wait0 $L0'; then
	pass "products in flight: attn_next waits at the scores' first use, PV's at the loop's end"
else
	fail "products in flight: attn_next waits at the scores' first use, PV's at the loop's end" \
		"moved: $moved; kept: $kept"
fi
# ... and the product before its loop frees its staged operands at the statement's end, so the
# loop reuses them: 41348 bytes a block, 59780 when they were held to the kernel's end.
smem_next=$(grep '^//@kernel attn_next ' "$tmp/next.ptx" | sed 's/.* smem \([0-9]*\).*/\1/')
if [ "${smem_next:-0}" -gt 0 ] && [ "$smem_next" -le 41348 ]; then
	pass "a statement's staged operands freed at its end (attn_next: $smem_next bytes)"
else
	fail "a statement's staged operands freed at its end" "attn_next needs ${smem_next:-?} bytes of shared memory"
fi

# A product's epilogue on sm_90a goes out by TMA (compiler/lower_tma_store.c): the tile written
# into shared memory, fenced for the copy engine, a barrier, one box a 128-byte slab stored by one
# thread, its read waited for; no st.global. With -fno-tma-store, and on sm_80, from registers; and
# from registers where the kernel also reads the tensor it stores (C = acc + C) or stores it in a
# loop.
"$tilec" --no-ptxas --arch=sm_90a examples/matmul_f16.tile -o "$tmp/ts.ptx" 2>/dev/null
"$tilec" --no-ptxas --arch=sm_90a -fno-tma-store examples/matmul_f16.tile -o "$tmp/ts0.ptx" 2>/dev/null
"$tilec" --no-ptxas --arch=sm_80 examples/matmul_f16.tile -o "$tmp/ts80.ptx" 2>/dev/null
cat >"$tmp/tsacc.tile" <<'EOF'
kernel mm_acc(A: f16[M, K], B: f16[K, N], C: f16[M, N]) grid(cdiv(M, 128), cdiv(N, 128)) threads(256) {
    assume(K % 8 == 0);
    assume(N % 8 == 0);
    var acc: f32[128, 128] = 0;
    for k in 0 .. K step 64 pipeline(3) {
        acc += A[block.x * 128 +: 128, k +: 64] @ B[k +: 64, block.y * 128 +: 128];
    }
    C[block.x * 128 +: 128, block.y * 128 +: 128] = f16(acc + f32(C[block.x * 128 +: 128, block.y * 128 +: 128]));
}
kernel mm_plain(A: f16[M, K], B: f16[K, N], C: f16[M, N]) grid(cdiv(M, 128), cdiv(N, 128)) threads(256) {
    assume(K % 8 == 0);
    assume(N % 8 == 0);
    var acc: f32[128, 128] = 0;
    for k in 0 .. K step 64 pipeline(3) {
        acc += A[block.x * 128 +: 128, k +: 64] @ B[k +: 64, block.y * 128 +: 128];
    }
    C[block.x * 128 +: 128, block.y * 128 +: 128] = f16(acc * 2.0);
}
kernel mm_twice(A: f16[M, K], B: f16[K, N], C: f16[M, N]) grid(cdiv(M, 256), cdiv(N, 128)) threads(256) {
    assume(K % 8 == 0);
    assume(N % 8 == 0);
    var acc: f32[128, 128] = 0;
    for k in 0 .. K step 64 pipeline(3) {
        acc += A[block.x * 128 +: 128, k +: 64] @ B[k +: 64, block.y * 128 +: 128];
    }
    for h in 0 .. 2 {
        C[block.x * 256 + h * 128 +: 128, block.y * 128 +: 128] = f16(acc * f32(h + 1));
    }
}
EOF
"$tilec" --no-ptxas --arch=sm_90a "$tmp/tsacc.tile" -o "$tmp/tsacc.ptx" 2>/dev/null
tstore='cp\.async\.bulk\.tensor\.2d\.global\.shared::cta\.bulk_group'
e=$(entry_body "$tmp/ts.ptx" matmul_f16)
seq=$(echo "$e" | grep -oE 'st\.shared|fence\.proxy\.async|bar\.sync|cp\.async\.bulk\.tensor\.2d\.global|cp\.async\.bulk\.commit_group|cp\.async\.bulk\.wait_group\.read 0|st\.global' |
	uniq | tail -n 6 | tr '\n' ' ')
if [ "$seq" = "st.shared fence.proxy.async bar.sync cp.async.bulk.tensor.2d.global cp.async.bulk.commit_group cp.async.bulk.wait_group.read 0 " ] &&
   [ "$(echo "$e" | grep -c "$tstore")" -eq 4 ] && grep -q '^//@tmap a2 f16 128 128 64 ' "$tmp/ts.ptx"; then
	pass "TMA store: matmul_f16's tile staged, fenced and stored in 4 boxes (sm_90a)"
else
	fail "TMA store: matmul_f16's tile staged, fenced and stored in 4 boxes (sm_90a)" "order: $seq"
fi
n0=$(entry_body "$tmp/ts0.ptx" matmul_f16 | grep -c "$tstore") g0=$(entry_body "$tmp/ts0.ptx" matmul_f16 | grep -c 'st\.global')
n80=$(grep -c "$tstore" "$tmp/ts80.ptx")
na=$( (entry_body "$tmp/tsacc.ptx" mm_acc; entry_body "$tmp/tsacc.ptx" mm_twice) | grep -c "$tstore")
ga=$( (entry_body "$tmp/tsacc.ptx" mm_acc; entry_body "$tmp/tsacc.ptx" mm_twice) | grep -c 'st\.global')
np=$(entry_body "$tmp/tsacc.ptx" mm_plain | grep -c "$tstore")
if [ "$n0" -eq 0 ] && [ "$g0" -gt 0 ] && [ "$n80" -eq 0 ] && [ "$na" -eq 0 ] && [ "$ga" -gt 0 ] && [ "$np" -eq 2 ]; then
	pass "TMA store: none with -fno-tma-store, on sm_80, or where the kernel reads what it stores"
else
	fail "TMA store: none with -fno-tma-store, on sm_80, or where the kernel reads what it stores" \
		"bulk stores $n0 / $n80 / $na (the same kernel without the read: $np), st.global $g0 / $ga"
fi
# The staged writes are free of bank conflicts: each warp's st.shared of one instruction covers
# eight rows (the lane's row mod 8 picks its 16-byte chunk: xor'd addresses, 8 of them a thread).
nx=$(echo "$e" | grep -c 'xor\.b32')
if [ "$nx" -ge 7 ]; then
	pass "TMA store: the staged tile in the 128-byte swizzle ($nx xor'd bases)"
else
	fail "TMA store: the staged tile in the 128-byte swizzle" "$nx xor instructions"
fi

# Without `assume(N % 8 == 0)` the store is versioned (lower_tma_store.c): one uniform test of N's
# low bits and of C's pointer, the registers' stores where it fails, the TMA boxes where it holds,
# C's map marked if-aligned (the launcher builds it only then) and C's argument asking no 16-byte
# alignment of the launch. A size the kernel fixes, or a column start no fact makes a multiple,
# gets no version; the report says where.
cat >"$tmp/tsv.tile" <<'EOF'
kernel mm_any(A: f16[M, K], B: f16[K, N], C: f16[M, N]) grid(cdiv(M, 128), cdiv(N, 128)) threads(256) {
    assume(K % 8 == 0);
    var acc: f32[128, 128] = 0;
    for k in 0 .. K step 64 pipeline(3) {
        acc += A[block.x * 128 +: 128, k +: 64] @ B[k +: 64, block.y * 128 +: 128];
    }
    C[block.x * 128 +: 128, block.y * 128 +: 128] = f16(acc);
}
kernel mm_shifted(A: f16[M, K], B: f16[K, N], C: f16[M, N]) grid(cdiv(M, 128), cdiv(N, 128)) threads(256) {
    assume(K % 8 == 0);
    assume(N % 8 == 0);
    var acc: f32[128, 128] = 0;
    for k in 0 .. K step 64 pipeline(3) {
        acc += A[block.x * 128 +: 128, k +: 64] @ B[k +: 64, block.y * 128 +: 128];
    }
    C[block.x * 128 +: 128, block.y * 128 + 1 +: 128] = f16(acc);
}
EOF
"$tilec" --no-ptxas --arch=sm_90a "$tmp/tsv.tile" -o "$tmp/tsv.ptx" 2>/dev/null
e=$(entry_body "$tmp/tsv.ptx" mm_any)
vb=$(echo "$e" | grep -c "$tstore") vg=$(echo "$e" | grep -c 'st\.global')
vt=$(echo "$e" | grep -cE 'and\.b64 %rd[0-9]+, %rd[0-9]+, 15;')
vs=$(entry_body "$tmp/tsv.ptx" mm_shifted | grep -c "$tstore")
vm=$(awk '/^\/\/@kernel mm_any /,/^\/\/@end/' "$tmp/tsv.ptx" | grep -c '^//@tmap a2 f16 128 128 64 if-aligned ')
va=$(awk '/^\/\/@kernel mm_any /,/^\/\/@end/' "$tmp/tsv.ptx" | grep -c '^//@arg C ptr f16 2$')
vr=$("$tilec" --no-ptxas --arch=sm_90a --report "$tmp/tsv.tile" -o /dev/null 2>&1 | grep -c '^  stored by TMA      C if aligned at launch ')
if [ "$vb" -eq 2 ] && [ "$vg" -gt 0 ] && [ "$vt" -ge 1 ] && [ "$vs" -eq 0 ] && [ "$vm" -eq 1 ] && [ "$va" -eq 1 ] && [ "$vr" -eq 1 ]; then
	pass "TMA store: versioned on N and C's pointer where no assume states them"
else
	fail "TMA store: versioned on N and C's pointer where no assume states them" \
		"bulk stores $vb, st.global $vg, pointer tests $vt, shifted window $vs, if-aligned map $vm, C's alignment $va, report $vr"
fi

# A view whose rows are a stride of their own apart (`strides(LDC, 1)`) is stored by TMA too: the
# copy engine clips each row at N, so only LDC (the map's pitch) and the pointer must be 16-byte
# aligned, versioned on them where no assume states LDC's multiple, directly where one does.
cat >"$tmp/tview.tile" <<'EOF'
kernel mm_view(A: f16[M, K], B: f16[K, N], C: f16[M, N] strides(LDC, 1)) grid(cdiv(M, 128), cdiv(N, 128)) threads(256) {
    assume(K % 8 == 0);
    var acc: f32[128, 128] = 0;
    for k in 0 .. K step 64 pipeline(3) {
        acc += A[block.x * 128 +: 128, k +: 64] @ B[k +: 64, block.y * 128 +: 128];
    }
    C[block.x * 128 +: 128, block.y * 128 +: 128] = f16(acc);
}
kernel mm_view_ld(A: f16[M, K], B: f16[K, N], C: f16[M, N] strides(LDC, 1)) grid(cdiv(M, 128), cdiv(N, 128)) threads(256) {
    assume(K % 8 == 0 && LDC % 8 == 0);
    var acc: f32[128, 128] = 0;
    for k in 0 .. K step 64 pipeline(3) {
        acc += A[block.x * 128 +: 128, k +: 64] @ B[k +: 64, block.y * 128 +: 128];
    }
    C[block.x * 128 +: 128, block.y * 128 +: 128] = f16(acc);
}
EOF
"$tilec" --no-ptxas -w --arch=sm_90a "$tmp/tview.tile" -o "$tmp/tview.ptx" 2>/dev/null
wb=$(entry_body "$tmp/tview.ptx" mm_view | grep -c "$tstore")
wl=$(entry_body "$tmp/tview.ptx" mm_view_ld | grep -c "$tstore")
wm=$(awk '/^\/\/@kernel mm_view /,/^\/\/@end/' "$tmp/tview.ptx" | grep -c '^//@tmap a2 f16 128 128 64 if-aligned | a3 | a5 | a6$')
"$tilec" --no-ptxas -w --arch=sm_90a --report "$tmp/tview.tile" -o /dev/null >"$tmp/tview.rep" 2>&1
wr=$(grep -c '^  stored by TMA      C if aligned at launch ' "$tmp/tview.rep")
wa=$(grep -c '^  stored by TMA      C (tiles' "$tmp/tview.rep")
if [ "$wb" -eq 2 ] && [ "$wl" -eq 2 ] && [ "$wm" -eq 1 ] && [ "$wr" -eq 1 ] && [ "$wa" -eq 1 ]; then
	pass "TMA store: a strided view, versioned on its stride"
else
	fail "TMA store: a strided view, versioned on its stride" "bulk stores $wb / $wl, map $wm, report $wr / $wa"
fi

# The swapped tf32 product's B comes by TMA in slabs whose rows land 0 4 1 5 2 6 3 7 in each 8
# (a rows8 map, one 4-D copy a slab), which its fragment loads read without bank conflicts; the
# map needs K a multiple of 8: known, one version; K % 4 only (the example), the loop versioned
# on K % 8, the other version keeping A by TMA and B by cp.async.
sed 's/assume(K % 4 == 0);/assume(K % 8 == 0);/' examples/matmul_tf32.tile >"$tmp/tf32k8.tile"
"$tilec" --no-ptxas -w --arch=sm_90a --report "$tmp/tf32k8.tile" -o "$tmp/tf32k8.ptx" >"$tmp/tf32k8.rep" 2>&1
k8m=$(grep -c '^//@tmap a1 tf32 128 32 32 rows8 | a4 | a5 | a5$' "$tmp/tf32k8.ptx")
k8c=$(grep -c 'cp.async.bulk.tensor.4d' "$tmp/tf32k8.ptx")
k8r=$(grep -c 'wgmma tf32 (swapped); A by TMA; B by TMA; pipeline(3)' "$tmp/tf32k8.rep")
k8v=$(grep -c 'otherwise:' "$tmp/tf32k8.rep")
"$tilec" --no-ptxas -w --arch=sm_90a --report examples/matmul_tf32.tile -o "$tmp/tf32k4.ptx" >"$tmp/tf32k4.rep" 2>&1
k4m=$(grep -c '^//@tmap a1 tf32 128 32 32 if-aligned rows8 | a4 | a5 | a5$' "$tmp/tf32k4.ptx")
k4a=$(grep -c '^//@tmap a0 tf32 128 256 32 | a3 | a4 | a4$' "$tmp/tf32k4.ptx")
k4o=$(grep -c 'otherwise: wgmma tf32 (swapped); A by TMA; B by cp.async in 16-byte pieces' "$tmp/tf32k4.rep")
k4t=$(grep -c 'where the launch is aligned: wgmma tf32 (swapped); A by TMA; B by TMA' "$tmp/tf32k4.rep")
if [ "$k8m" -eq 1 ] && [ "$k8c" -ge 4 ] && [ "$k8r" -eq 1 ] && [ "$k8v" -eq 0 ] && [ "$k4m" -eq 1 ] &&
   [ "$k4a" -eq 1 ] && [ "$k4o" -eq 1 ] && [ "$k4t" -eq 1 ]; then
	pass "tf32: B by TMA in row-paired slabs, versioned on K % 8"
else
	fail "tf32: B by TMA in row-paired slabs, versioned on K % 8" "K % 8: map $k8m, copies $k8c, report $k8r, versions $k8v; K % 4: maps $k4m / $k4a, report $k4o / $k4t"
fi

# A stack frame under the register cap is ptxas keeping values in local memory without counting
# them as spills: the cap is loosened as for a spill (compiler/regcap.c). softmax over rows known
# 4-element aligned got 24 bytes at the 32 registers predicted.
cat >"$tmp/stackcap.tile" <<'EOF'
kernel sm_rows(X: f32[R, N], Y: f32[R, N]) grid(cdiv(R, 32)) threads(128) {
    assume(N <= 64 && N % 4 == 0);
    let x = X[block.x * 32 +: 32, 0 +: 64] else -inf;
    let e = exp(x - max(x, axis=1));
    Y[block.x * 32 +: 32, 0 +: 64] = e / sum(e, axis=1);
}
EOF
if [ -n "$PTXAS" ]; then
	if "$tilec" --arch=sm_90a "$tmp/stackcap.tile" -o "$tmp/stackcap.ptx" 2>/dev/null &&
	   "$PTXAS" -arch=sm_90a -v "$tmp/stackcap.ptx" -o "$tmp/stackcap.cubin" >"$tmp/stackcap.log" 2>&1; then
		bad=$(spill_problems "$tmp/stackcap.log" sm_rows)
		if [ -z "$bad" ]; then pass "register cap: a stack frame under it loosens it as a spill does"
		else fail "register cap: a stack frame under it loosens it as a spill does" "$bad"; fi
	else
		fail "register cap: a stack frame under it loosens it as a spill does" "compile or ptxas failed"
	fi
else
	skip "register cap: a stack frame under it loosens it as a spill does" "no ptxas"
fi

# --report says which tensors went out by TMA (text and json), and only where they did.
r90=$("$tilec" --no-ptxas --arch=sm_90a --report examples/matmul_f16.tile -o /dev/null 2>&1 | grep -c '^  stored by TMA      C ')
j90=$("$tilec" --no-ptxas --arch=sm_90a --report=json examples/matmul_f16.tile -o /dev/null 2>&1 | grep -c '"stored_by_tma": \["C"\]')
r0=$("$tilec" --no-ptxas --arch=sm_90a -fno-tma-store --report examples/matmul_f16.tile -o /dev/null 2>&1 | grep -c 'stored by TMA')
r80=$("$tilec" --no-ptxas --arch=sm_80 --report examples/matmul_f16.tile -o /dev/null 2>&1 | grep -c 'stored by TMA')
if [ "$r90" -eq 1 ] && [ "$j90" -eq 1 ] && [ "$r0" -eq 0 ] && [ "$r80" -eq 0 ]; then
	pass "report: the tensors stored by TMA"
else
	fail "report: the tensors stored by TMA" "sm_90a $r90 (json $j90), -fno-tma-store $r0, sm_80 $r80"
fi

# --report says how each `@` was computed, under its line:col: the path and each operand's way
# (matmul_f32: FFMA, A turned by 4-byte cp.async, B 16-byte; matmul_f16 on sm_90a: wgmma, both by
# TMA; on sm_80 mma.sync by cp.async; attention's P @ V: A from registers); why a path is not a
# faster one (f32: IEEE; the version of a loop that cannot copy its operands: not wgmma); a loop
# versioned on alignment says which version is which (store_align.tile line 72); a loop with no
# pipeline says its operands are loaded where used. Text and json.
rep() { "$tilec" --no-ptxas -w "$@" -o /dev/null 2>&1; }
n=0
rep --arch=sm_90a --report examples/matmul_f32.tile | grep -q '^  @ at 22:37  *ffma (IEEE f32: tf32(a) @ tf32(b) runs on the tensor cores); A by cp.async in 4-byte pieces, turned K-major; B by cp.async in 16-byte pieces; pipeline(2)$' && n=$((n+1))
rep --arch=sm_90a --report examples/matmul_f16.tile | grep -q '^  @ at 26:37  *wgmma; A by TMA; B by TMA; pipeline(3)$' && n=$((n+1))
rep --arch=sm_80 --report examples/matmul_f16.tile | grep -q '^  @ at 26:37  *mma.sync; A by cp.async in 16-byte pieces; B by cp.async in 16-byte pieces; pipeline(3)$' && n=$((n+1))
rep --arch=sm_90a --report examples/attention.tile | grep -q 'wgmma (A from registers); A from its registers (a value); B by TMA; pipeline(1), one stage refilled$' && n=$((n+1))
rep --arch=sm_90a --report tests/gpu/kernels/store_align.tile | grep -A1 '^  @ at 72:38 ' | grep -c 'otherwise: mma.sync (not wgmma, which needs A and B copied by a pipelined loop); A loaded where used\|^  *where the launch is aligned: wgmma; A by TMA; B by TMA' | grep -q '^2$' && n=$((n+1))
rep --arch=sm_90a --report=json examples/matmul_f32.tile | grep -q '"products": \[{"line": 22, "col": 37, "how": \["ffma (IEEE f32: tf32(a) @ tf32(b) runs on the tensor cores); A by cp.async in 4-byte pieces, turned K-major; B by cp.async in 16-byte pieces; pipeline(2)"\]}\]' && n=$((n+1))
rep --arch=sm_90a --report tests/gpu/kernels/layouts.tile | grep -q '^  @ at 380:47  *ffma (IEEE f32: tf32(a) @ tf32(b) runs on the tensor cores); A loaded where used (no pipelined copy); B loaded where used (no pipelined copy)$' && n=$((n+1))
# a 16-bit product whose rows do not fill its warps' 16 each: mma.sync, and the report says why
cat >"$tmp/rep_m.tile" <<'EOT'
kernel short_rows(A: f16[M, K], B: f16[K, N], C: f32[M, N])
    grid(cdiv(M, 64), cdiv(N, 64)) threads(256)
{
    assume(K % 8 == 0 && N % 8 == 0);
    var acc: f32[64, 64] = 0;
    for k in 0 .. K step 32 pipeline(2) {
        acc += A[block.x * 64 +: 64, k +: 32] @ B[k +: 32, block.y * 64 +: 64];
    }
    C[block.x * 64 +: 64, block.y * 64 +: 64] = acc;
}
EOT
rep --arch=sm_90a --report "$tmp/rep_m.tile" | grep -q '^  @ at 7:47  *mma.sync (wgmma needs M a multiple of 128 (16 rows a warp, 8 warps): M = 64); A by cp.async in 16-byte pieces; B by cp.async in 16-byte pieces; pipeline(2)$' && n=$((n+1))
if [ "$n" -eq 8 ]; then
	pass "report: how each product was computed"
else
	fail "report: how each product was computed" "$n of 8 lines as expected"
fi

# Epilogues that read a value twice (`h * sigmoid(h)`, GELU with erf or tanh) are lowered a
# tile at a time; the schedule pass moves each element's tree of operations down to its use
# (compiler/schedule.c, trees), so a 128 x 128 tile of 256 threads keeps two blocks a
# multiprocessor: 115, 115 and 128 registers predicted, where moving single instructions only
# gave 128, 128 and 200 (one block for the tanh GELU; 135 and 139 for silu and erf GELU written
# with lets for the tile's corner, tests/gpu/kernels/user.tile).
cat >"$tmp/epi.tile" <<'EOT'
kernel silu(X: bf16[M, K], W: bf16[N, K], b: f32[N], Y: bf16[M, N]) grid(cdiv(M, 128), cdiv(N, 128)) threads(256)
{
    var acc: f32[128, 128] = 0;
    for k in 0 .. K step 64 pipeline(3) {
        acc += X[block.x * 128 +: 128, k +: 64] @ W[block.y * 128 +: 128, k +: 64].T;
    }
    let h = acc + b[block.y * 128 +: 128];
    Y[block.x * 128 +: 128, block.y * 128 +: 128] = bf16(h * sigmoid(h));
}
kernel gelu(X: bf16[M, K], W: bf16[N, K], b: f32[N], Y: bf16[M, N]) grid(cdiv(M, 128), cdiv(N, 128)) threads(256)
{
    var acc: f32[128, 128] = 0;
    for k in 0 .. K step 64 pipeline(3) {
        acc += X[block.x * 128 +: 128, k +: 64] @ W[block.y * 128 +: 128, k +: 64].T;
    }
    let h = acc + b[block.y * 128 +: 128];
    Y[block.x * 128 +: 128, block.y * 128 +: 128] = bf16(0.5 * h * (1.0 + erf(h * 0.70710678)));
}
kernel gelu_tanh(X: bf16[M, K], W: bf16[N, K], b: f32[N], Y: bf16[M, N]) grid(cdiv(M, 128), cdiv(N, 128)) threads(256)
{
    var acc: f32[128, 128] = 0;
    for k in 0 .. K step 64 pipeline(3) {
        acc += X[block.x * 128 +: 128, k +: 64] @ W[block.y * 128 +: 128, k +: 64].T;
    }
    let h = acc + b[block.y * 128 +: 128];
    Y[block.x * 128 +: 128, block.y * 128 +: 128] = bf16(0.5 * h * (1.0 + tanh(h * 0.79788456 * (1.0 + 0.044715 * h * h))));
}
EOT
preds() { rep --arch=sm_90a --report "$@" "$tmp/epi.tile" | awk '/^kernel /{k=$2} /^  registers .* predicted/{print k, $2}'; }
n=$(preds | awk '($1 == "gelu_tanh" && $2 <= 128) || $2 <= 120' | wc -l)
if [ "$n" -eq 3 ]; then
	pass "schedule: activation epilogues element by element"
else
	fail "schedule: activation epilogues element by element" "$n of 3 predictions as expected"
fi

# A product's K loop split over blocks (compiler/lower_split.c): the kernel of one tile a block
# takes the grid dimension after its own, three hidden parameters last (the workspace, the pair
# words, the slice). On sm_80, after the loop the tree: the partial sums out, a release fence and
# the pair's counter, the block's OR of "second", the sum. On sm_90a the cluster's form: the
# metadata says `cluster 8`, two cluster barriers around the sums written into the owners' shared
# memory, no counters, and the rest of the kernel's global
# stores each under the warp's ownership (the staged TMA store only where the launch is unsplit);
# -fno-split-k and kernels it would change the meaning of get none of it.
for a in sm_80 sm_90a; do
	"$tilec" --no-ptxas --arch=$a examples/matmul_f16.tile -o "$tmp/split_$a.ptx" 2>/dev/null
	f="$tmp/split_$a.ptx"
	if [ $a = sm_80 ]; then form='//@split 1 131072 64 | a4 0 - 64 cdiv'; else form='//@split 1 131072 64 cluster 8 | a4 0 - 64 cdiv'; fi
	if grep -qx "$form" "$f" &&
	   grep -A2 'param .u64 matmul_f16_param_ws,' "$f" | grep -q 'param .s32 matmul_f16_param_span$' &&
	   grep -q 'param .u64 matmul_f16_param_cnt,' "$f" && grep -q 'mov.u32 %r[0-9]*, %nctaid.y' "$f" &&
	   ! grep -q '\.local' "$f"; then
		pass "split K: matmul_f16 $a splits over block.y"
	else
		fail "split K: matmul_f16 $a splits over block.y" "$(grep -c 'split\|param_ws\|param_span' "$f") matching lines"
	fi
done
f="$tmp/split_sm_80.ptx"
if grep -q 'fence.acq_rel.gpu' "$f" && grep -q 'atom.global.add.u32' "$f" && grep -q 'bar.red.or.pred' "$f" &&
   ! grep -q 'barrier.cluster' "$f"; then
	pass "split K: sm_80 sums in a tree of block pairs"
else
	fail "split K: sm_80 sums in a tree of block pairs" "$(grep -c 'fence.acq_rel\|atom.global\|bar.red\|barrier.cluster' "$f") matching lines"
fi
f="$tmp/split_sm_90a.ptx"
# every global store after the cluster barrier is guarded; the TMA store stays
unguarded=$(awk '/barrier.cluster.wait/ { t = 1 } t && /st\.global/ && !/^[ \t]*@/' "$f" | wc -l)
if [ "$(grep -c 'barrier.cluster.arrive' "$f")" -eq 2 ] && grep -q 'st.shared::cluster.v4.f32' "$f" &&
   ! grep -q 'fence.acq_rel.gpu\|atom.global\|bar.red' "$f" &&
   [ "$unguarded" -eq 0 ] && grep -q 'cp.async.bulk.tensor.2d.global.shared' "$f" &&
   [ "$(awk '/barrier.cluster.wait/ { t = 1 } t && /@%p[0-9]* st\.global/' "$f" | wc -l)" -gt 0 ]; then
	pass "split K: sm_90a sums in a cluster, stores by the rows' owners"
else
	fail "split K: sm_90a sums in a cluster, stores by the rows' owners" "$unguarded unguarded stores; $(grep -c 'barrier.cluster\|fence.acq_rel\|atom.global' "$f") matching lines"
fi
# a kernel whose epilogue moves values between threads (a row sum through shared memory) keeps
# the tree on sm_90a
cat >"$tmp/split_tree.tile" <<'EOF'
kernel rowsums(A: f16[M, K], B: f16[K, N], S: f32[M]) grid(cdiv(M, 128)) threads(256)
{
    assume(K % 8 == 0);
    assume(N % 8 == 0);
    var acc: f32[128, 128] = 0;
    for k in 0 .. K step 64 pipeline(3) { acc += A[block.x * 128 +: 128, k +: 64] @ B[k +: 64, 0 +: 128]; }
    S[block.x * 128 +: 128] = sum(acc, axis=1);
}
EOF
if "$tilec" --no-ptxas -w --arch=sm_90a "$tmp/split_tree.tile" -o "$tmp/split_tree.ptx" 2>"$tmp/split_tree.err"; then
	f="$tmp/split_tree.ptx"
	if grep -q '^//@split 1 65536 64 |' "$f" && grep -q 'atom.global.add.u32' "$f" && ! grep -q 'barrier.cluster' "$f"; then
		pass "split K: an epilogue moving values between threads keeps the tree on sm_90a"
	else
		fail "split K: an epilogue moving values between threads keeps the tree on sm_90a" "$(grep '//@split' "$f")"
	fi
else
	fail "split K: an epilogue moving values between threads keeps the tree on sm_90a" "$(head -3 "$tmp/split_tree.err")"
fi
"$tilec" --no-ptxas --arch=sm_90a -fno-split-k examples/matmul_f16.tile -o "$tmp/nosplit.ptx" 2>/dev/null
if ! grep -q '//@split\|param_ws\|fence.acq_rel' "$tmp/nosplit.ptx"; then pass "split K: -fno-split-k"
else fail "split K: -fno-split-k" "split code still there"; fi
cat >"$tmp/split_no.tile" <<'EOF'
// split: the product below
kernel yes(A: f32[M, K], B: f32[K, N], C: f32[M, N]) grid(cdiv(M, 64), cdiv(N, 128)) threads(256)
{
    var acc: f32[64, 128] = 0;
    for k in 0 .. K step 16 pipeline(2) { acc += A[block.x * 64 +: 64, k +: 16] @ B[k +: 16, block.y * 128 +: 128]; }
    C[block.x * 64 +: 64, block.y * 128 +: 128] = acc;
}
// no: block.z is the kernel's own (a 2-D grid splits over z)
kernel own_z(A: f32[M, K], B: f32[K, N], C: f32[M, N]) grid(cdiv(M, 64), cdiv(N, 128)) threads(256)
{
    var acc: f32[64, 128] = 0;
    for k in 0 .. K step 16 { acc += A[block.x * 64 + block.z +: 64, k +: 16] @ B[k +: 16, block.y * 128 +: 128]; }
    C[block.x * 64 +: 64, block.y * 128 +: 128] = acc;
}
// no: the sum starts from C, not from zero
kernel from_c(A: f32[M, K], B: f32[K, N], C: f32[M, N]) grid(cdiv(M, 64), cdiv(N, 128)) threads(256)
{
    var acc: f32[64, 128] = C[block.x * 64 +: 64, block.y * 128 +: 128];
    for k in 0 .. K step 16 { acc += A[block.x * 64 +: 64, k +: 16] @ B[k +: 16, block.y * 128 +: 128]; }
    C[block.x * 64 +: 64, block.y * 128 +: 128] = acc;
}
// no: a store before the loop would be made once a slice
kernel store_first(A: f32[M, K], B: f32[K, N], C: f32[M, N]) grid(cdiv(M, 64), cdiv(N, 128)) threads(256)
{
    C[block.x * 64 +: 64, block.y * 128 +: 128] = 0.0;
    var acc: f32[64, 128] = 0;
    for k in 0 .. K step 16 { acc += A[block.x * 64 +: 64, k +: 16] @ B[k +: 16, block.y * 128 +: 128]; }
    C[block.x * 64 +: 64, block.y * 128 +: 128] = acc;
}
// no: the loop does more than add products
kernel scaled(A: f32[M, K], B: f32[K, N], C: f32[M, N]) grid(cdiv(M, 64), cdiv(N, 128)) threads(256)
{
    var acc: f32[64, 128] = 0;
    for k in 0 .. K step 16 { acc = acc * 0.5; acc += A[block.x * 64 +: 64, k +: 16] @ B[k +: 16, block.y * 128 +: 128]; }
    C[block.x * 64 +: 64, block.y * 128 +: 128] = acc;
}
// no: an operand reads the accumulator (each slice's sum starts from zero)
kernel feeds_back(A: f32[M, K], B: f32[K, N], C: f32[M, N]) grid(cdiv(M, 64), cdiv(N, 128)) threads(256)
{
    var acc: f32[64, 128] = 0;
    for k in 0 .. K step 128 { acc += acc[0 +: 64, 0 +: 128] @ B[k +: 128, block.y * 128 +: 128]; }
    C[block.x * 64 +: 64, block.y * 128 +: 128] = acc;
}
// no: a 32 x 32 tile (too little work a block to split)
kernel small(A: f32[M, K], B: f32[K, N], C: f32[M, N]) grid(cdiv(M, 32), cdiv(N, 32)) threads(128)
{
    var acc: f32[32, 32] = 0;
    for k in 0 .. K step 16 { acc += A[block.x * 32 +: 32, k +: 16] @ B[k +: 16, block.y * 32 +: 32]; }
    C[block.x * 32 +: 32, block.y * 32 +: 32] = acc;
}
// no: a grid of three dimensions leaves none to split over
kernel full_grid(A: f32[M, K], B: f32[K, N], C: f32[M, N]) grid(cdiv(M, 64), cdiv(N, 128), 1) threads(256)
{
    var acc: f32[64, 128] = 0;
    for k in 0 .. K step 16 { acc += A[block.x * 64 +: 64, k +: 16] @ B[k +: 16, block.y * 128 +: 128]; }
    C[block.x * 64 +: 64, block.y * 128 +: 128] = acc;
}
EOF
if "$tilec" --no-ptxas -w --arch=sm_80 "$tmp/split_no.tile" -o "$tmp/split_no.ptx" 2>"$tmp/split_no.err"; then
	got=$(awk '/^\/\/@kernel/ { k = $2 } /^\/\/@split/ { printf "%s %s ", k, $2 }' "$tmp/split_no.ptx")
	if [ "$got" = "yes 2 " ]; then pass "split K: only the kernels whose meaning it keeps"
	else fail "split K: only the kernels whose meaning it keeps" "split: '$got', wanted 'yes 2 '"; fi
else
	fail "split K: only the kernels whose meaning it keeps" "$(head -3 "$tmp/split_no.err")"
fi
r=$("$tilec" --no-ptxas --arch=sm_90a --report examples/matmul_f16.tile -o /dev/null 2>&1 | grep -c '^  K split            over block.y')
j=$("$tilec" --no-ptxas --arch=sm_90a --report=json examples/matmul_f16.tile -o /dev/null 2>&1 | grep -c '"split_k_dim": 1, "split_k_bytes": 131072, "split_k_cluster": true')
if [ "$r" -eq 1 ] && [ "$j" -eq 1 ]; then pass "split K: the report says so"
else fail "split K: the report says so" "text $r, json $j"; fi

# ---- sum up
cat "$tmp"/*.res >"$tmp/all"
grep -E '^(FAIL|SKIP) ' "$tmp/all" | sed 's/^FAIL /FAIL: /; s/^SKIP /skip: /'
passed=$(grep -c '^PASS ' "$tmp/all")
failed=$(grep -c '^FAIL ' "$tmp/all")
skipped=$(grep -c '^SKIP ' "$tmp/all")
line="$passed passed, $failed failed"
[ "$skipped" -gt 0 ] && line="$line, $skipped skipped"
echo "$line"
[ "$failed" -eq 0 ]
