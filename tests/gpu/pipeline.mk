# Pipelined matmul at every stage count the GPU test covers: S = 1, 2, 3, 4 (and 0: off).
PIPE_PTX := $(foreach s,0 1 2 3 4,$(EX_DIR)/pipeline/matmul_f32_s$(s).ptx)

$(EX_DIR)/pipeline/matmul_f32_s%.ptx: examples/matmul_f32.tile $(TILEC)
	@mkdir -p $(@D)
	$(TILEC) $(if $(ARCH),--arch=$(ARCH)) -D STAGES=$* $< -o $@

all: $(PIPE_PTX)
check-gpu: $(PIPE_PTX)
