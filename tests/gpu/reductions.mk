# Kernels for tests/gpu/reductions.c: reductions along axes that span warps, axis sums deferred past
# their loops, f16 and bf16 rows moved 16 bytes a thread.
REDUCTIONS_PTX := $(EX_DIR)/reductions/reductions.ptx

$(REDUCTIONS_PTX): tests/gpu/kernels/reductions.tile $(TILEC)
	@mkdir -p $(@D)
	$(TILEC) $(if $(ARCH),--arch=$(ARCH)) $< -o $@

all: $(REDUCTIONS_PTX)
check-gpu: $(REDUCTIONS_PTX)

# sm_90-only kernels, always built for sm_90a whatever ARCH says
REDUCTIONS90_PTX := $(EX_DIR)/reductions/reductions_sm90.ptx

$(REDUCTIONS90_PTX): tests/gpu/kernels/reductions_sm90.tile $(TILEC)
	@mkdir -p $(@D)
	$(TILEC) --arch=sm_90a $< -o $@

all: $(REDUCTIONS90_PTX)
check-gpu: $(REDUCTIONS90_PTX)
