# Kernels for tests/gpu/layouts.c: products with operands in every layout.
LAYOUTS_PTX := $(EX_DIR)/layouts/layouts.ptx

$(LAYOUTS_PTX): tests/gpu/kernels/layouts.tile $(TILEC)
	@mkdir -p $(@D)
	$(TILEC) -w $(if $(ARCH),--arch=$(ARCH)) $< -o $@

all: $(LAYOUTS_PTX)
check-gpu: $(LAYOUTS_PTX)
