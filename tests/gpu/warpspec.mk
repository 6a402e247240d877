# The examples and the product tests again with a producer warp (-fwarp-specialize,
# compiler/lower_warpspec.c), which only sm_90a code has: with ARCH=sm_90a, check-gpu and run-gpu
# also run run_examples, layouts and matmul8 on these. Under compute-sanitizer:
#   make run-sanitize ARCH=sm_90a SANITIZE_ARCHS=sm_90a/warpspec \
#     SANITIZE_PROGS="build/tests/gpu/run_examples build/tests/gpu/layouts build/tests/gpu/matmul8"
ifeq ($(ARCH),sm_90a)
WS_DIR := $(EX_DIR)/warpspec
WS_PTX := $(patsubst examples/%.tile,$(WS_DIR)/%.ptx,$(EX_TILES)) $(WS_DIR)/layouts/layouts.ptx \
          $(WS_DIR)/matmul8/matmul8_sm_89.ptx $(WS_DIR)/matmul8/matmul8_sm_90a.ptx

$(WS_DIR)/%.ptx: examples/%.tile $(TILEC)
	@mkdir -p $(@D)
	$(TILEC) --arch=sm_90a -fwarp-specialize $< -o $@
$(WS_DIR)/layouts/layouts.ptx: tests/gpu/kernels/layouts.tile $(TILEC)
	@mkdir -p $(@D)
	$(TILEC) -w --arch=sm_90a -fwarp-specialize $< -o $@
$(WS_DIR)/matmul8/matmul8_%.ptx: tests/gpu/kernels/matmul8.tile $(TILEC)
	@mkdir -p $(@D)
	$(TILEC) --arch=$* -fwarp-specialize $< -o $@

.PHONY: run-gpu-warpspec
all: $(WS_PTX)
check-gpu: run-gpu-warpspec
run-gpu: run-gpu-warpspec
run-gpu-warpspec: $(if $(filter check-gpu,$(MAKECMDGOALS)),$(WS_PTX) $(GPU_PROGS))
	@sh tests/gpu-run.sh $(WS_DIR) $(B)/tests/gpu/run_examples $(B)/tests/gpu/layouts $(B)/tests/gpu/matmul8
endif
