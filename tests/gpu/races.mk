# Kernels for tests/gpu/races.c: shared memory reused across loop iterations, branches and layouts.
RACES_PTX := $(EX_DIR)/races/races.ptx

$(RACES_PTX): tests/gpu/kernels/races.tile $(TILEC)
	@mkdir -p $(@D)
	$(TILEC) $(if $(ARCH),--arch=$(ARCH)) $< -o $@

all: $(RACES_PTX)
check-gpu: $(RACES_PTX)
