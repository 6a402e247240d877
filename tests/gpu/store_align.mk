# Kernels for tests/gpu/store_align.c: epilogue stores versioned on the launch's alignment.
STORE_ALIGN_PTX := $(EX_DIR)/store_align/store_align.ptx

$(STORE_ALIGN_PTX): tests/gpu/kernels/store_align.tile $(TILEC)
	@mkdir -p $(@D)
	$(TILEC) $(if $(ARCH),--arch=$(ARCH)) $< -o $@

all: $(STORE_ALIGN_PTX)
check-gpu: $(STORE_ALIGN_PTX)
