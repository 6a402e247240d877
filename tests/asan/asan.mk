# tests/asan/asan.mk: tilec and the runtime's CPU half built with AddressSanitizer and
# UndefinedBehaviorSanitizer, in build/asan/ (ASAN_CC from configure: clang, else the C compiler;
# empty: none of this is built and tests/asan/run.sh skips).
#
#   build/asan/tilec            the compiler; tests/asan/run.sh compiles every .tile of the tree
#   build/asan/libtilec.a       the compiler without main (the fuzz targets' replay links it)
#   build/asan/libtilert-cpu.a  the runtime's metadata, RPN and argument code: no driver calls
#
# Any report ends the process with a non-zero status: -fno-sanitize-recover makes UBSan's
# reports fatal like ASan's.

ASAN_B      := $(B)/asan
ASAN_SAN    := -fsanitize=address,undefined -fno-sanitize-recover=undefined -fno-omit-frame-pointer
ASAN_TILEC  := $(ASAN_B)/tilec
ASAN_LIBTILEC := $(ASAN_B)/libtilec.a
ASAN_LIBRT  := $(ASAN_B)/libtilert-cpu.a
ASAN_COMPILER_OBJ := $(patsubst %.c,$(ASAN_B)/%.o,$(wildcard compiler/*.c)) \
                     $(patsubst $(B)/gen/%.c,$(ASAN_B)/gen/%.o,$(GEN_C))
ASAN_RT_OBJ := $(patsubst %,$(ASAN_B)/runtime/%.o,meta rpn args error)

$(ASAN_B)/compiler/%.o: compiler/%.c config.mk | $(GEN_H)
	@mkdir -p $(@D)
	$(ASAN_CC) $(CFLAGS) $(ASAN_SAN) $(DEPFLAGS) $(TILEC_CPPFLAGS) -c -o $@ $<

$(ASAN_B)/gen/%.o: $(B)/gen/%.c config.mk | $(GEN_H)
	@mkdir -p $(@D)
	$(ASAN_CC) $(CFLAGS) $(GEN_WARNINGS) $(ASAN_SAN) $(DEPFLAGS) $(TILEC_CPPFLAGS) -c -o $@ $<

$(ASAN_B)/runtime/%.o: runtime/%.c config.mk
	@mkdir -p $(@D)
	$(ASAN_CC) $(CFLAGS) $(ASAN_SAN) $(DEPFLAGS) -Iruntime -I$(CUDA_INC) -c -o $@ $<

$(ASAN_TILEC): $(ASAN_COMPILER_OBJ)
	$(ASAN_CC) $(LDFLAGS) $(ASAN_SAN) -o $@ $^ -lm

$(ASAN_LIBTILEC): $(filter-out $(ASAN_B)/compiler/main.o,$(ASAN_COMPILER_OBJ))
	@rm -f $@
	$(AR) rcs $@ $^

$(ASAN_LIBRT): $(ASAN_RT_OBJ)
	@rm -f $@
	$(AR) rcs $@ $^

ifneq ($(ASAN_CC),)
check: $(ASAN_TILEC)
endif

-include $(wildcard $(ASAN_B)/compiler/*.d $(ASAN_B)/gen/*.d $(ASAN_B)/runtime/*.d)
