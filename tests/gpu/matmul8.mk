# Kernels for tests/gpu/matmul8.c: products of 8-bit operands. Built for sm_89 (mma.sync; the fp8
# types start there) and sm_90a (wgmma for K-major operands) whatever ARCH says: the test runs
# each module the GPU can load.
MATMUL8_PTX := $(EX_DIR)/matmul8/matmul8_sm_89.ptx $(EX_DIR)/matmul8/matmul8_sm_90a.ptx

$(EX_DIR)/matmul8/matmul8_%.ptx: tests/gpu/kernels/matmul8.tile $(TILEC)
	@mkdir -p $(@D)
	$(TILEC) --arch=$* $< -o $@

all: $(MATMUL8_PTX)
check-gpu: $(MATMUL8_PTX)
