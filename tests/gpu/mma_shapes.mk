# The tensor-core examples at other tile shapes, for run_examples' shape cases: each shape lays
# its shared tiles out differently (row widths of 32 to 1024 bytes, copies that take the
# swizzle's slow path, warp grids of 1 to 8 columns), all within sm_80's 163 KB of shared
# memory. On sm_90a the f16/bf16 shapes with 128-byte k rows (deepk, wg*) take wgmma, one to
# four warpgroups, one or two wgmma per k step, A in one or two slabs. NAME:BM:BN:BK:STAGES:THREADS.
MMA_SHAPES := narrow:64:32:32:2:128 wide:128:256:32:3:256 longb:32:512:16:2:256 \
              tall:256:128:32:3:256 small:64:64:16:4:64 deepk:64:64:128:2:128 \
              square:128:128:32:4:128
MMA_SHAPE_KERNELS := matmul_f16 matmul_bf16 matmul_tf32
# 16-bit only (tf32's tiles of these shapes need more shared memory than sm_80 has)
MMA_SHAPES16 := wg64:64:128:64:4:128 wgtall:256:128:64:3:256 wgdeep:128:64:128:2:128
mma_shape_field = $(word $(2),$(subst :, ,$(1)))
mma_shape_flags = -D BM=$(call mma_shape_field,$(1),2) -D BN=$(call mma_shape_field,$(1),3) \
                  -D BK=$(call mma_shape_field,$(1),4) -D STAGES=$(call mma_shape_field,$(1),5) \
                  -D THREADS=$(call mma_shape_field,$(1),6)
MMA_SHAPES_PTX := $(foreach s,$(MMA_SHAPES),$(foreach k,$(MMA_SHAPE_KERNELS), \
                    $(EX_DIR)/mma_shapes/$(call mma_shape_field,$(s),1)/$(k).ptx)) \
                  $(foreach s,$(MMA_SHAPES16),$(foreach k,matmul_f16 matmul_bf16, \
                    $(EX_DIR)/mma_shapes/$(call mma_shape_field,$(s),1)/$(k).ptx))

define mma_shape_rule
$(EX_DIR)/mma_shapes/$(call mma_shape_field,$(1),1)/%.ptx: examples/%.tile $(TILEC)
	@mkdir -p $$(@D)
	$(TILEC) $(if $(ARCH),--arch=$(ARCH)) $(call mma_shape_flags,$(1)) $$< -o $$@
endef
$(foreach s,$(MMA_SHAPES) $(MMA_SHAPES16),$(eval $(call mma_shape_rule,$(s))))

# f16 without the K and N assumptions: 8- and 4-byte copies into the swizzled tiles
$(EX_DIR)/mma_shapes/anyk/matmul_f16.ptx: tests/gpu/kernels/matmul_f16_anyk.tile $(TILEC)
	@mkdir -p $(@D)
	$(TILEC) $(if $(ARCH),--arch=$(ARCH)) $< -o $@
MMA_SHAPES_PTX += $(EX_DIR)/mma_shapes/anyk/matmul_f16.ptx

all: $(MMA_SHAPES_PTX)
check-gpu: $(MMA_SHAPES_PTX)
