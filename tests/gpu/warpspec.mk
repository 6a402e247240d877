# The examples and the product tests again with a producer warp (-fwarp-specialize,
# compiler/lower_warpspec.c), which only sm_90a code has, and again with two-block clusters
# sharing copies as well (-fcluster): with ARCH=sm_90a, check-gpu and run-gpu also run
# run_examples, layouts and matmul8 on both. Under compute-sanitizer:
#   make run-sanitize ARCH=sm_90a SANITIZE_ARCHS="sm_90a/warpspec sm_90a/cluster" \
#     SANITIZE_PROGS="build/tests/gpu/run_examples build/tests/gpu/layouts build/tests/gpu/matmul8"
ifeq ($(ARCH),sm_90a)
WS_DIR := $(EX_DIR)/warpspec
CL_DIR := $(EX_DIR)/cluster
ws_ptx = $(patsubst examples/%.tile,$(1)/%.ptx,$(EX_TILES)) $(1)/layouts/layouts.ptx \
         $(1)/matmul8/matmul8_sm_89.ptx $(1)/matmul8/matmul8_sm_90a.ptx
WS_PTX := $(call ws_ptx,$(WS_DIR)) $(call ws_ptx,$(CL_DIR))

# $(1): the directory, $(2): the flags besides -fwarp-specialize
define ws_rules
$(1)/%.ptx: examples/%.tile $$(TILEC)
	@mkdir -p $$(@D)
	$$(TILEC) --arch=sm_90a -fwarp-specialize $(2) $$< -o $$@
$(1)/layouts/layouts.ptx: tests/gpu/kernels/layouts.tile $$(TILEC)
	@mkdir -p $$(@D)
	$$(TILEC) -w --arch=sm_90a -fwarp-specialize $(2) $$< -o $$@
$(1)/matmul8/matmul8_%.ptx: tests/gpu/kernels/matmul8.tile $$(TILEC)
	@mkdir -p $$(@D)
	$$(TILEC) --arch=$$* -fwarp-specialize $(2) $$< -o $$@
endef
$(eval $(call ws_rules,$(WS_DIR),))
$(eval $(call ws_rules,$(CL_DIR),-fcluster))

.PHONY: run-gpu-warpspec
all: $(WS_PTX)
check-gpu: run-gpu-warpspec
run-gpu: run-gpu-warpspec
run-gpu-warpspec: $(if $(filter check-gpu,$(MAKECMDGOALS)),$(WS_PTX) $(GPU_PROGS))
	@sh tests/gpu-run.sh $(WS_DIR) $(B)/tests/gpu/run_examples $(B)/tests/gpu/layouts $(B)/tests/gpu/matmul8
	@sh tests/gpu-run.sh $(CL_DIR) $(B)/tests/gpu/run_examples $(B)/tests/gpu/layouts $(B)/tests/gpu/matmul8
endif
