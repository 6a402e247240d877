# Kernels for tests/gpu/print.c: print() on the GPU, compiled as they are (only block (0, 0, 0)
# prints) and with --print-all-blocks.
PRINT_PTX := $(EX_DIR)/print/print.ptx $(EX_DIR)/print/print_all.ptx

$(EX_DIR)/print/print.ptx: tests/gpu/kernels/print.tile $(TILEC)
	@mkdir -p $(@D)
	$(TILEC) $(if $(ARCH),--arch=$(ARCH)) $< -o $@

$(EX_DIR)/print/print_all.ptx: tests/gpu/kernels/print.tile $(TILEC)
	@mkdir -p $(@D)
	$(TILEC) $(if $(ARCH),--arch=$(ARCH)) --print-all-blocks $< -o $@

all: $(PRINT_PTX)
check-gpu: $(PRINT_PTX)
