# Kernels for tests/gpu/split_k.c: K loops split over blocks. Built for sm_80 (mma.sync, the
# tree's sum), sm_90 (mma.sync, the cluster's: warps that own parts of rows) and sm_90a (wgmma,
# TMA, the cluster's) whatever ARCH says: the test runs each module the GPU can load.
SPLIT_K_PTX := $(EX_DIR)/split_k/split_k_sm_80.ptx $(EX_DIR)/split_k/split_k_sm_90.ptx \
	$(EX_DIR)/split_k/split_k_sm_90a.ptx

$(EX_DIR)/split_k/split_k_%.ptx: tests/gpu/kernels/split_k.tile $(TILEC)
	@mkdir -p $(@D)
	$(TILEC) -w --arch=$* $< -o $@

all: $(SPLIT_K_PTX)
check-gpu: $(SPLIT_K_PTX)
