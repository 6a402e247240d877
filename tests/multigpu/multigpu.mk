# tests/multigpu/multigpu.mk: `make check-multigpu`, libtilert in a multi-GPU program
# (tests/multigpu/multigpu.c says what it checks). Part of nothing that runs without a GPU:
# `make check` only builds the program; check-multigpu builds and runs it, run-multigpu runs a
# build made elsewhere (a GPU machine without re2c and bison). With one GPU the cases that need
# two are skipped and the rest run.
#
#   $(B)/tests/multigpu/gen/NAME.c, NAME.h   tilec --emit=c of examples/NAME.tile, with cubins
#                                            for sm_80 and sm_90a and the sm_80 PTX
#   $(B)/tests/multigpu/multigpu             the program; its argument is the directory of
#                                            compiled examples ($(EX_DIR)) it loads PTX from

MG_DIR     := $(B)/tests/multigpu
MG_GEN     := $(MG_DIR)/gen
MG_KERNELS := vecadd softmax layernorm matmul_f16 matmul_tf32
MG_GEN_H   := $(MG_KERNELS:%=$(MG_GEN)/%.h)
MG_GEN_O   := $(MG_KERNELS:%=$(MG_GEN)/%.o)
MG_PROG    := $(MG_DIR)/multigpu

# One tilec run writes both files. The arch list is fixed (not ARCH): the program checks that
# each device picks its own cubin, or the PTX where none fits.
$(MG_GEN)/%.c $(MG_GEN)/%.h: examples/%.tile $(TILEC)
	@mkdir -p $(@D)
	$(TILEC) --emit=c --arch=sm_80,sm_90a -o $(MG_GEN)/$*.c $<

$(MG_GEN)/%.o: $(MG_GEN)/%.c $(MG_GEN)/%.h
	$(CC) $(CFLAGS) $(DEPFLAGS) -I$(MG_GEN) -Iruntime -I$(CUDA_INC) -c -o $@ $<

$(MG_DIR)/multigpu.o $(MG_DIR)/workloads.o: $(MG_GEN_H)
$(MG_DIR)/multigpu.o $(MG_DIR)/workloads.o: PROG_CPPFLAGS += -Itests/gpu -I$(MG_GEN)
# the references and device helpers of the single-GPU tests
$(MG_PROG): $(MG_GEN_O) $(B)/tests/gpu/helpers.a

.PHONY: check-multigpu run-multigpu
check-multigpu: all $(EX_PTX) $(MG_PROG)
	@$(MAKE_MULTIGPU_RUN)

run-multigpu:
	@$(MAKE_MULTIGPU_RUN)

define MAKE_MULTIGPU_RUN
sh tests/gpu-run.sh $(EX_DIR) $(MG_PROG)
endef

-include $(wildcard $(MG_GEN)/*.d)
