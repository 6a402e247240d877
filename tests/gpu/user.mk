# Kernels for tests/gpu/interp_vs_gpu.c written as users write them (tests/gpu/kernels/user.tile).
USER_PTX := $(EX_DIR)/user/user.ptx

$(USER_PTX): tests/gpu/kernels/user.tile $(TILEC)
	@mkdir -p $(@D)
	$(TILEC) -w $(if $(ARCH),--arch=$(ARCH)) $< -o $@

all: $(USER_PTX)
check-gpu: $(USER_PTX)
