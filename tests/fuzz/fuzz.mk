# tests/fuzz/fuzz.mk: the fuzz targets (libFuzzer), their replay under the sanitizers, and the
# goals that run them. The targets' sources have no main, so they live in tests/fuzz/harness/,
# out of reach of the Makefile's tests/*/*.c program rule. Built here, under build/fuzz/:
#
#   build/fuzz/obj/          the compiler and the runtime's metadata code, instrumented for
#                            libFuzzer (FUZZ_CC from configure: clang with libFuzzer; empty: no
#                            fuzz targets, tests/fuzz/run.sh skips the smoke runs)
#   build/fuzz/fuzz_NAME     the targets: compile (source text to PTX), meta (the runtime's
#                            metadata parser), gen (generated programs with chosen sizes)
#   build/fuzz/replay/fuzz_NAME  the same harness with replay.c's main instead of libFuzzer, over
#                            build/asan's sanitized objects (tests/asan/asan.mk): make check
#                            replays tests/fuzz/regress/NAME/* with them
#
#   make fuzz [FUZZ_SECONDS=60] [FUZZ_RUNS=N] [FUZZ_WORKERS=1] [FUZZ_TARGETS="compile meta gen"]
#             [FUZZ_EXTREME=1]
#                            runs each target for FUZZ_SECONDS (or FUZZ_RUNS executions) in
#                            FUZZ_WORKERS processes (fuzz_gen with sizes up to 2^63 with
#                            FUZZ_EXTREME); corpus and findings in build/fuzz/work/
#   make fuzz-bundle         build/fuzz/bundle/ (and build/fuzz/tilec-fuzz.tar.gz): the binaries,
#                            the dictionary, the seeds and fuzz.sh, to run on another machine

FUZZ_B       := $(B)/fuzz
FUZZ_NAMES   := compile meta gen
FUZZ_TARGETS ?= $(FUZZ_NAMES)
FUZZ_SECONDS ?= 60
FUZZ_WORKERS ?= 1
FUZZ_SAN     := -fsanitize=address,undefined -fno-sanitize-recover=undefined -fno-omit-frame-pointer
# libFuzzer is C++: its runtime is linked statically (the sanitizers' are by default), so the
# binaries need only libc and libm and run on machines without clang.
FUZZ_LDFLAGS := -fsanitize=fuzzer $(FUZZ_SAN) -static-libstdc++ -static-libgcc

FUZZ_COMPILER_OBJ := $(patsubst compiler/%.c,$(FUZZ_B)/obj/compiler/%.o, \
                        $(filter-out compiler/main.c,$(wildcard compiler/*.c))) \
                     $(patsubst $(B)/gen/%.c,$(FUZZ_B)/obj/gen/%.o,$(GEN_C))
FUZZ_RT_OBJ  := $(patsubst %,$(FUZZ_B)/obj/runtime/%.o,meta rpn args error)
FUZZ_H       := $(FUZZ_B)/obj/harness
REPLAY_H     := $(FUZZ_B)/replay/obj

# What each target links besides its own file: the compiler's targets share fuzz_job.c, and all
# link the runtime's metadata parser (the compiler's targets read back what compiled).
fuzz_parts_compile := fuzz_compile fuzz_job fuzz_util no_driver
fuzz_parts_gen     := fuzz_gen fuzz_job fuzz_util no_driver
fuzz_parts_meta    := fuzz_meta fuzz_util no_driver
FUZZ_BINS   := $(patsubst %,$(FUZZ_B)/fuzz_%,$(FUZZ_NAMES))
REPLAY_BINS := $(patsubst %,$(FUZZ_B)/replay/fuzz_%,$(FUZZ_NAMES))

FUZZ_CPPFLAGS = $(TILEC_CPPFLAGS) -Iruntime -I$(CUDA_INC) -Itests/fuzz/harness

$(FUZZ_B)/obj/compiler/%.o: compiler/%.c config.mk | $(GEN_H)
	@mkdir -p $(@D)
	$(FUZZ_CC) $(CFLAGS) -fsanitize=fuzzer-no-link $(FUZZ_SAN) $(DEPFLAGS) $(TILEC_CPPFLAGS) -c -o $@ $<
$(FUZZ_B)/obj/gen/%.o: $(B)/gen/%.c config.mk | $(GEN_H)
	@mkdir -p $(@D)
	$(FUZZ_CC) $(CFLAGS) $(GEN_WARNINGS) -fsanitize=fuzzer-no-link $(FUZZ_SAN) $(DEPFLAGS) $(TILEC_CPPFLAGS) -c -o $@ $<
$(FUZZ_B)/obj/runtime/%.o: runtime/%.c config.mk
	@mkdir -p $(@D)
	$(FUZZ_CC) $(CFLAGS) -fsanitize=fuzzer-no-link $(FUZZ_SAN) $(DEPFLAGS) -Iruntime -I$(CUDA_INC) -c -o $@ $<
$(FUZZ_H)/%.o: tests/fuzz/harness/%.c config.mk | $(GEN_H)
	@mkdir -p $(@D)
	$(FUZZ_CC) $(CFLAGS) -fsanitize=fuzzer-no-link $(FUZZ_SAN) $(DEPFLAGS) $(FUZZ_CPPFLAGS) -c -o $@ $<
$(REPLAY_H)/%.o: tests/fuzz/harness/%.c config.mk | $(GEN_H)
	@mkdir -p $(@D)
	$(ASAN_CC) $(CFLAGS) $(ASAN_SAN) $(DEPFLAGS) $(FUZZ_CPPFLAGS) -c -o $@ $<

define FUZZ_TARGET_RULES
$(FUZZ_B)/fuzz_$(1): $(patsubst %,$(FUZZ_H)/%.o,$(fuzz_parts_$(1))) $(FUZZ_RT_OBJ) \
                     $(if $(filter meta,$(1)),,$(FUZZ_COMPILER_OBJ))
	$$(FUZZ_CC) $$(LDFLAGS) $$(FUZZ_LDFLAGS) -o $$@ $$^ -lm
$(FUZZ_B)/replay/fuzz_$(1): $(patsubst %,$(REPLAY_H)/%.o,$(fuzz_parts_$(1)) replay) \
                            $(if $(filter meta,$(1)),,$(B)/asan/libtilec.a) $(B)/asan/libtilert-cpu.a
	$$(ASAN_CC) $$(LDFLAGS) $$(ASAN_SAN) -o $$@ $$^ -lm
endef
$(foreach t,$(FUZZ_NAMES),$(eval $(call FUZZ_TARGET_RULES,$(t))))

.PHONY: fuzz fuzz-build fuzz-bundle
fuzz-build: $(if $(FUZZ_CC),$(FUZZ_BINS)) $(if $(ASAN_CC),$(REPLAY_BINS))

ifneq ($(FUZZ_CC),)
check: $(FUZZ_BINS)
endif
ifneq ($(ASAN_CC),)
check: $(REPLAY_BINS)
endif

ifeq ($(FUZZ_CC),)
fuzz fuzz-bundle:
	@echo "$@: configure found no clang with libFuzzer (Debian: apt-get install clang libclang-rt-dev, then ./configure)"
	@exit 1
else
# The seeds come from the tree at run time (tests/fuzz/seeds.sh): the .tile files, and the
# metadata of the PTX tilec compiles from the examples.
fuzz: $(FUZZ_BINS) $(TILEC)
	sh tests/fuzz/seeds.sh $(TILEC) $(FUZZ_B)/seeds
	sh tests/fuzz/fuzz.sh --work $(FUZZ_B)/work --seeds $(FUZZ_B)/seeds --dict tests/fuzz/tile.dict \
	    $(if $(FUZZ_RUNS),--runs $(FUZZ_RUNS),--seconds $(FUZZ_SECONDS)) --workers $(FUZZ_WORKERS) \
	    $(if $(FUZZ_EXTREME),--extreme) $(FUZZ_B) $(FUZZ_TARGETS)

# Everything a machine without clang, the tree or the toolkit needs to run the targets.
FUZZ_BUNDLE := $(FUZZ_B)/bundle
fuzz-bundle: $(FUZZ_BINS) $(TILEC)
	rm -rf $(FUZZ_BUNDLE)
	mkdir -p $(FUZZ_BUNDLE)
	cp $(FUZZ_BINS) tests/fuzz/tile.dict tests/fuzz/fuzz.sh $(FUZZ_BUNDLE)/
	sh tests/fuzz/seeds.sh $(TILEC) $(FUZZ_BUNDLE)/seeds
	tar -C $(FUZZ_B) -czf $(FUZZ_B)/tilec-fuzz.tar.gz bundle
	@echo "fuzz-bundle: $(FUZZ_BUNDLE) and $(FUZZ_B)/tilec-fuzz.tar.gz; on the other machine:"
	@echo "    cd bundle && sh fuzz.sh --runs 10000000 --workers 16 . compile meta gen"
endif

-include $(wildcard $(FUZZ_B)/obj/*/*.d $(REPLAY_H)/*.d)
