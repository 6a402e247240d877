# Makefile: builds tilec, libtilert, the tests, the examples and the benchmarks (GNU make).
#
# Everything goes under build/. Source lists are wildcards: a new compiler/*.c, runtime/*.c,
# tests/unit/*.c, tests/gpu/*.c, bench/*.c or examples/*.tile needs no edit here. In a test,
# bench or example directory every NAME.c is a program (build/DIR/NAME), except files whose name
# ends in util.c (gpu_util.c, ...): those are helpers linked into every program of their directory.
#
# No recursive make; dependencies on headers come from the compiler (-MMD), so `make -j` is safe.

# Cleaning needs no configuration; everything else reads config.mk (written by ./configure,
# which runs by itself when config.mk is missing).
NOCONFIG_GOALS := clean distclean
ifneq ($(filter-out $(NOCONFIG_GOALS),$(or $(MAKECMDGOALS),all)),)
include config.mk
endif

config.mk:
	./configure

B       := build
TILEC   := $(B)/tilec
VERSION := $(shell sed -n 's/^\#define TILEC_VERSION "\(.*\)"/\1/p' compiler/tilec.h)

# Install layout (PREFIX comes from configure; DESTDIR is for staged installs).
BINDIR       = $(PREFIX)/bin
LIBDIR       = $(PREFIX)/lib
INCLUDEDIR   = $(PREFIX)/include
MANDIR       = $(PREFIX)/share/man
PKGCONFIGDIR = $(LIBDIR)/pkgconfig
CMAKEDIR     = $(LIBDIR)/cmake/tilec

# Dependency files are a side effect of every compile.
DEPFLAGS  = -MMD -MP
CUDA_LIBS = -L$(CUDA_LIB) -lcuda -lpthread

# ---------------------------------------------------------------- tilec

# Lexer and parser are generated into build/gen: they are build outputs, never committed.
GEN_C   := $(patsubst compiler/%.re,$(B)/gen/%.c,$(wildcard compiler/*.re)) \
           $(patsubst compiler/%.y,$(B)/gen/%.c,$(wildcard compiler/*.y))
GEN_H   := $(patsubst compiler/%.y,$(B)/gen/%.h,$(wildcard compiler/*.y))
TILEC_OBJ := $(patsubst %.c,$(B)/%.o,$(wildcard compiler/*.c)) $(GEN_C:.c=.o)
# Everything but main: unit tests link compiler internals from here.
LIBTILEC  := $(B)/libtilec.a

# tilec runs ptxas as a process: from the toolkit configure found unless $TILEC_PTXAS says else.
TILEC_CPPFLAGS = -Icompiler -I$(B)/gen -DTILEC_CUDA_HOME='"$(CUDA_HOME)"'

# Generated C gets the same warnings as ours: lex.c and parse.c are clean under gcc and clang
# with -Wall -Wextra -pedantic today. Should a generator version emit unused labels or skeleton
# functions, relax exactly those here (build/gen only), never in CFLAGS.
GEN_WARNINGS =

RE2C_FLAGS  = -W
# --defines=FILE rather than --header=FILE: the latter only exists since Bison 3.8 and we accept 3.6.
BISON_FLAGS = -Wall

$(B)/gen/%.c: compiler/%.re
	@mkdir -p $(@D)
	$(RE2C) $(RE2C_FLAGS) -o $@ $<

# A multi-target pattern rule: one bison run makes both files.
$(B)/gen/%.c $(B)/gen/%.h: compiler/%.y
	@mkdir -p $(@D)
	$(BISON) $(BISON_FLAGS) --defines=$(B)/gen/$*.h -o $(B)/gen/$*.c $<

$(B)/compiler/%.o: compiler/%.c | $(GEN_H)
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) $(DEPFLAGS) $(TILEC_CPPFLAGS) -c -o $@ $<

$(B)/gen/%.o: $(B)/gen/%.c | $(GEN_H)
	$(CC) $(CFLAGS) $(GEN_WARNINGS) $(DEPFLAGS) $(TILEC_CPPFLAGS) -c -o $@ $<

# libc only (-lm is its math half: constant folding evaluates exp, log, ...).
$(TILEC): $(TILEC_OBJ)
	$(CC) $(LDFLAGS) -o $@ $(TILEC_OBJ) -lm

$(LIBTILEC): $(filter-out $(B)/compiler/main.o,$(TILEC_OBJ))
	@rm -f $@
	$(AR) rcs $@ $^

# ---------------------------------------------------------------- libtilert

TILERT_OBJ := $(patsubst %.c,$(B)/%.o,$(wildcard runtime/*.c))
TILERT_A   := $(B)/libtilert.a
TILERT_SO  := $(B)/libtilert.so

# -fPIC for both libraries: one set of objects serves the archive and the shared library.
$(B)/runtime/%.o: runtime/%.c
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) -fPIC $(DEPFLAGS) -Iruntime -I$(CUDA_INC) -c -o $@ $<

$(TILERT_A): $(TILERT_OBJ)
	@rm -f $@
	$(AR) rcs $@ $^

$(TILERT_SO): $(TILERT_OBJ)
	$(CC) $(LDFLAGS) -shared -Wl,-soname,libtilert.so -o $@ $^ $(CUDA_LIBS)

# ---------------------------------------------------------------- tilec-tune

# The autotuner (tune/): runs tilec on candidates, times them through libtilert, so it links the
# compiler's front end, the runtime and the driver.
TUNE     := $(B)/tilec-tune
TUNE_OBJ := $(patsubst %.c,$(B)/%.o,$(wildcard tune/*.c))

$(B)/tune/%.o: tune/%.c | $(GEN_H)
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) $(DEPFLAGS) -Itune -Icompiler -I$(B)/gen -Iruntime -I$(CUDA_INC) -c -o $@ $<

$(TUNE): $(TUNE_OBJ) $(LIBTILEC) $(TILERT_A)
	$(CC) $(LDFLAGS) -o $@ $(TUNE_OBJ) $(LIBTILEC) $(TILERT_A) $(CUDA_LIBS) -lm

# ---------------------------------------------------------------- libtilert_host: kernels on the CPU

# libtilert with a host stand-in for the CUDA driver (runtime/host/) whose launches run the
# interpreter, and the compiler's front end it needs: a program linked with it instead of
# libcuda runs its kernels on the CPU (docs/runtime.md, "Running on the CPU").
HOST_OBJ      := $(patsubst %.c,$(B)/%.o,$(wildcard runtime/host/*.c))
TILERT_HOST_A := $(B)/libtilert_host.a

$(B)/runtime/host/%.o: runtime/host/%.c | $(GEN_H)
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) $(DEPFLAGS) -Iruntime -Icompiler -I$(B)/gen -I$(CUDA_INC) -c -o $@ $<

$(TILERT_HOST_A): $(TILERT_OBJ) $(HOST_OBJ) $(filter-out $(B)/compiler/main.o,$(TILEC_OBJ))
	@rm -f $@
	$(AR) rcs $@ $^

# ---------------------------------------------------------------- programs: tests, bench, examples

# In tests/*/, bench/ and examples/, every .c file with a line starting `int main(` is a program
# (build/DIR/NAME); the directory's other .c files are helpers, archived into build/DIR/helpers.a
# so that each program pulls in only the helpers it uses.
PROG_DIRS := $(sort $(patsubst %/,%,$(dir $(wildcard tests/*/*.c bench/*.c examples/*.c))))

MAIN_RE   := ^int main[(]
main_srcs  = $(shell grep -l '$(MAIN_RE)' $(wildcard $(1)/*.c) /dev/null)
progs_of   = $(patsubst %.c,$(B)/%,$(call main_srcs,$(1)))
helpers_of = $(patsubst %.c,$(B)/%.o,$(filter-out $(call main_srcs,$(1)),$(wildcard $(1)/*.c)))
helpers_a  = $(if $(call helpers_of,$(1)),$(B)/$(1)/helpers.a)

define PROG_DIR_RULES
$(1)_PROGS := $(call progs_of,$(1))
$(call progs_of,$(1)): $(call helpers_a,$(1))
$(B)/$(1)/helpers.a: $(call helpers_of,$(1))
	@rm -f $$@
	$$(AR) rcs $$@ $$^
endef
$(foreach d,$(PROG_DIRS),$(eval $(call PROG_DIR_RULES,$(d))))

GPU_PROGS   := $(tests/gpu_PROGS)
BENCH_PROGS := $(bench_PROGS)
# What `make check` builds: programs of every test directory except tests/gpu.
CHECK_PROGS := $(foreach d,$(filter-out tests/gpu,$(filter tests/%,$(PROG_DIRS))),$($(d)_PROGS))
PROGS := $(foreach d,$(PROG_DIRS),$($(d)_PROGS))

PROG_CPPFLAGS = -Icompiler -I$(B)/gen -Iruntime -I$(CUDA_INC)

$(B)/tests/%.o: tests/%.c | $(GEN_H)
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) $(DEPFLAGS) $(PROG_CPPFLAGS) -c -o $@ $<
$(B)/bench/%.o: bench/%.c | $(GEN_H)
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) $(DEPFLAGS) $(PROG_CPPFLAGS) -c -o $@ $<
$(B)/examples/%.o: examples/%.c | $(GEN_H)
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) $(DEPFLAGS) $(PROG_CPPFLAGS) -c -o $@ $<

# The benchmark compares with cuBLAS, which lives in the toolkit's own lib directory.
$(BENCH_PROGS): PROG_LIBS = -L$(CUDA_HOME)/lib64 -lcublas

# The archives come last so only what a program uses is pulled in.
$(PROGS): $(B)/%: $(B)/%.o $(LIBTILEC) $(TILERT_A)
	$(CC) $(LDFLAGS) -o $@ $(filter %.o,$^) $(filter %/helpers.a,$^) $(LIBTILEC) $(TILERT_A) \
	    $(PROG_LIBS) $(CUDA_LIBS) -lm

# Without a driver, programs linked with -lcuda cannot even start: the loader wants
# libcuda.so.1. tests/run-check.sh puts this link to the toolkit's stub on LD_LIBRARY_PATH (only
# when no driver is installed); the stub fails cuInit, so GPU-dependent tests skip.
CUDA_STUB := $(firstword $(wildcard $(CUDA_HOME)/lib64/stubs/libcuda.so \
                                    $(CUDA_HOME)/targets/*/lib/stubs/libcuda.so) \
                         $(CUDA_LIB)/libcuda.so)
$(B)/cuda-stub/libcuda.so.1:
	@mkdir -p $(@D)
	ln -sf $(CUDA_STUB) $@

# Reconfiguring (another compiler, other flags, another toolkit) rebuilds every object.
PROG_OBJ := $(patsubst %.c,$(B)/%.o,$(wildcard tests/*/*.c bench/*.c examples/*.c))
$(TILEC_OBJ) $(TILERT_OBJ) $(HOST_OBJ) $(PROG_OBJ) $(TUNE_OBJ): config.mk

# ---------------------------------------------------------------- examples as PTX

# Default: tilec's default arch. `make check-gpu ARCH=sm_90a` builds into build/examples/sm_90a.
EX_TILES := $(wildcard examples/*.tile)
EX_DIR   := $(B)/examples$(if $(ARCH),/$(ARCH))
EX_PTX   := $(patsubst examples/%.tile,$(EX_DIR)/%.ptx,$(EX_TILES))
all: $(EX_PTX)

# fp8 starts at sm_89: the fp8 example builds for sm_89 where ARCH names no later arch
FP8_EXAMPLES := matmul_fp8
ex_arch = $(if $(filter $(FP8_EXAMPLES),$(1)),$(if $(filter sm_89 sm_90 sm_90a,$(ARCH)),$(ARCH),sm_89),$(ARCH))

$(EX_DIR)/%.ptx: examples/%.tile $(TILEC)
	@mkdir -p $(@D)
	$(TILEC) $(if $(call ex_arch,$*),--arch=$(call ex_arch,$*)) $< -o $@

# ---------------------------------------------------------------- goals

.PHONY: all check check-gpu run-gpu check-sanitize run-sanitize demo bench install uninstall clean \
        distclean
.DEFAULT_GOAL := all
.DELETE_ON_ERROR:
# Keep generated sources and objects that make reaches through pattern chains: they are
# outputs we want to look at (build/gen) and to reuse, not temporaries.
.SECONDARY:

all: $(TILEC) $(TILERT_A) $(TILERT_SO) $(TILERT_HOST_A) $(TUNE)

# Everything that runs without a GPU.
check: all $(LIBTILEC) $(CHECK_PROGS) $(B)/cuda-stub/libcuda.so.1
	tests/run-check.sh

# Each GPU program gets the directory of compiled examples as its argument.
check-gpu: all $(EX_PTX) $(GPU_PROGS)
	@$(MAKE_GPU_RUN)

# The same run without rebuilding anything: for a machine that has a GPU but no re2c/bison,
# given a build/ made elsewhere.
run-gpu:
	@$(MAKE_GPU_RUN)

define MAKE_GPU_RUN
sh tests/gpu-run.sh $(EX_DIR) $(GPU_PROGS)
endef

# Every GPU test program under compute-sanitizer (memcheck, racecheck, synccheck, initcheck) on
# its small cases, for each arch of SANITIZE_ARCHS ("default": tilec's); tests/sanitize-run.sh
# says more. One make run builds the kernels of one arch (EX_DIR follows ARCH), so check-sanitize
# builds each arch's with a make of its own, one after the other. run-sanitize builds nothing.
# `make run-sanitize SANITIZE_TOOLS=racecheck SANITIZE_ARCHS=sm_90a` runs a part.
SANITIZE_ARCHS ?= default sm_90a
SANITIZE_TOOLS ?= memcheck racecheck synccheck initcheck
SANITIZE_PROGS ?= $(filter %/run_examples,$(GPU_PROGS)) $(filter-out %/run_examples,$(GPU_PROGS))

check-sanitize: all $(GPU_PROGS)
	@for a in $(SANITIZE_ARCHS); do \
		[ "$$a" = default ] && a=; \
		$(MAKE) --no-print-directory ARCH=$$a all || exit 1; \
	done
	@$(MAKE_SANITIZE_RUN)

run-sanitize:
	@$(MAKE_SANITIZE_RUN)

define MAKE_SANITIZE_RUN
SANITIZE_ARCHS='$(SANITIZE_ARCHS)' SANITIZE_TOOLS='$(SANITIZE_TOOLS)' CUDA_HOME='$(CUDA_HOME)' \
    sh tests/sanitize-run.sh $(B) $(SANITIZE_PROGS)
endef

HAVE_GPU = nvidia-smi -L >/dev/null 2>&1 || [ -e /dev/nvidia0 ]

# The main job: build, compile every example with its report, run them where a GPU is.
# (--report without -o prints the report only; the PTX itself is in $(EX_DIR).)
demo: all $(EX_PTX) $(GPU_PROGS)
	@for f in $(EX_TILES); do \
		echo "== $(TILEC) --report $(if $(ARCH),--arch=$(ARCH) )$$f"; \
		$(TILEC) --report $(if $(ARCH),--arch=$(ARCH)) $$f || exit 1; \
	done
	@if ! ( $(HAVE_GPU) ); then \
		echo "demo: no GPU here (nvidia-smi -L failed, no /dev/nvidia0): skipped running the kernels"; \
	elif [ ! -x $(B)/tests/gpu/run_examples ]; then \
		echo "demo: $(B)/tests/gpu/run_examples is not built: skipped running the kernels"; \
	else \
		echo "== $(B)/tests/gpu/run_examples $(EX_DIR)"; \
		$(B)/tests/gpu/run_examples $(EX_DIR); \
	fi

# bench/run.sh does the work: compile times (no GPU needed), then the kernels where a GPU is.
bench: all $(EX_PTX) $(BENCH_PROGS)
	@if [ -f bench/run.sh ]; then sh bench/run.sh $(B) $(EX_DIR); \
	else echo "bench: no bench/run.sh"; fi

# pkg-config file: from runtime/tilert.pc.in (or ./tilert.pc.in) with @PREFIX@ @LIBDIR@
# @INCLUDEDIR@ @VERSION@ @CUDA_LIB@ @CUDA_INC@ substituted. Installed only when the .in exists.
TILERT_PC_IN := $(firstword $(wildcard runtime/tilert.pc.in tilert.pc.in))
TILERT_PC    := $(if $(TILERT_PC_IN),$(B)/tilert.pc)

$(B)/tilert.pc: $(TILERT_PC_IN) config.mk
	@mkdir -p $(@D)
	sed -e 's|@PREFIX@|$(PREFIX)|g' -e 's|@LIBDIR@|$(LIBDIR)|g' \
	    -e 's|@INCLUDEDIR@|$(INCLUDEDIR)|g' -e 's|@VERSION@|$(VERSION)|g' \
	    -e 's|@CUDA_LIB@|$(CUDA_LIB)|g' -e 's|@CUDA_INC@|$(CUDA_INC)|g' $(TILERT_PC_IN) >$@

INSTALLED := $(BINDIR)/tilec $(BINDIR)/tilec-tune $(LIBDIR)/libtilert.a $(LIBDIR)/libtilert.so $(LIBDIR)/libtilert_host.a \
             $(INCLUDEDIR)/tilert.h $(MANDIR)/man1/tilec.1 \
             $(CMAKEDIR)/tilecConfig.cmake $(CMAKEDIR)/tilecConfigVersion.cmake \
             $(if $(TILERT_PC),$(PKGCONFIGDIR)/tilert.pc)

install: all $(TILERT_PC)
	install -d $(DESTDIR)$(BINDIR) $(DESTDIR)$(LIBDIR) $(DESTDIR)$(INCLUDEDIR) \
	           $(DESTDIR)$(MANDIR)/man1
	install -m 755 $(TILEC) $(DESTDIR)$(BINDIR)/tilec
	install -m 755 $(TUNE) $(DESTDIR)$(BINDIR)/tilec-tune
	install -m 644 $(TILERT_A) $(DESTDIR)$(LIBDIR)/libtilert.a
	install -m 755 $(TILERT_SO) $(DESTDIR)$(LIBDIR)/libtilert.so
	install -m 644 $(TILERT_HOST_A) $(DESTDIR)$(LIBDIR)/libtilert_host.a
	install -m 644 runtime/tilert.h $(DESTDIR)$(INCLUDEDIR)/tilert.h
	install -m 644 docs/tilec.1 $(DESTDIR)$(MANDIR)/man1/tilec.1
	install -d $(DESTDIR)$(CMAKEDIR)
	install -m 644 cmake/tilecConfig.cmake $(DESTDIR)$(CMAKEDIR)/tilecConfig.cmake
	sed 's|@VERSION@|$(VERSION)|' cmake/tilecConfigVersion.cmake.in >$(DESTDIR)$(CMAKEDIR)/tilecConfigVersion.cmake
	$(if $(TILERT_PC),install -d $(DESTDIR)$(PKGCONFIGDIR))
	$(if $(TILERT_PC),install -m 644 $(TILERT_PC) $(DESTDIR)$(PKGCONFIGDIR)/tilert.pc)

uninstall:
	rm -f $(addprefix $(DESTDIR),$(INSTALLED))

clean:
	rm -rf $(B)

distclean: clean
	rm -f config.mk

# Parts may add their own rules (extra goals, flags) in a DIR/NAME.mk fragment: bench/bench.mk.
include $(wildcard bench/*.mk tests/*/*.mk examples/*.mk examples/*/*.mk)

-include $(wildcard $(B)/compiler/*.d $(B)/gen/*.d $(B)/runtime/*.d $(B)/runtime/host/*.d $(B)/tune/*.d $(B)/tests/*/*.d \
                    $(B)/bench/*.d $(B)/examples/*.d)

# ---------------------------------------------------------------- address splitting (tests/addr)

# The examples again with -fno-addr-split, and the GPU cases of tests/addr/*.tile with and
# without it (tests/gpu/addr_cases.c runs both). check-gpu and run-gpu also run run_examples on
# the examples built without the pass: the pass must never be what makes them correct.
NOAS_DIR := $(EX_DIR)/noaddrsplit
NOAS_PTX := $(patsubst examples/%.tile,$(NOAS_DIR)/%.ptx,$(EX_TILES))
ADDR_PTX := $(patsubst tests/addr/%.tile,$(EX_DIR)/addr/%.ptx,$(wildcard tests/addr/*.tile)) \
            $(patsubst tests/addr/%.tile,$(EX_DIR)/addr/noaddrsplit/%.ptx,$(wildcard tests/addr/*.tile))

$(NOAS_DIR)/%.ptx: examples/%.tile $(TILEC)
	@mkdir -p $(@D)
	$(TILEC) $(if $(call ex_arch,$*),--arch=$(call ex_arch,$*)) -fno-addr-split $< -o $@
$(EX_DIR)/addr/%.ptx: tests/addr/%.tile $(TILEC)
	@mkdir -p $(@D)
	$(TILEC) $(if $(ARCH),--arch=$(ARCH)) $< -o $@
$(EX_DIR)/addr/noaddrsplit/%.ptx: tests/addr/%.tile $(TILEC)
	@mkdir -p $(@D)
	$(TILEC) $(if $(ARCH),--arch=$(ARCH)) -fno-addr-split $< -o $@

.PHONY: run-gpu-noaddrsplit
all: $(NOAS_PTX) $(ADDR_PTX)
check-gpu: run-gpu-noaddrsplit
run-gpu: run-gpu-noaddrsplit
run-gpu-noaddrsplit: $(if $(filter check-gpu,$(MAKECMDGOALS)),$(NOAS_PTX) $(GPU_PROGS))
	@sh tests/gpu-run.sh $(NOAS_DIR) $(B)/tests/gpu/run_examples
