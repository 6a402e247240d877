# Kernels for tests/gpu/features.c: language features the examples do not exercise.
FEATURES_PTX := $(EX_DIR)/features/features.ptx

$(FEATURES_PTX): tests/gpu/kernels/features.tile $(TILEC)
	@mkdir -p $(@D)
	$(TILEC) $(if $(ARCH),--arch=$(ARCH)) $< -o $@

all: $(FEATURES_PTX)
check-gpu: $(FEATURES_PTX)
