# Kernels for tests/gpu/types8.c: 8-bit tensors, their loads, stores and conversions. The fp8
# conversions are sm_89 instructions: built for sm_89 whatever ARCH says (the PTX runs on later
# GPUs too).
TYPES8_PTX := $(EX_DIR)/types8/types8.ptx

$(TYPES8_PTX): tests/gpu/kernels/types8.tile $(TILEC)
	@mkdir -p $(@D)
	$(TILEC) --arch=sm_89 $< -o $@

all: $(TYPES8_PTX)
check-gpu: $(TYPES8_PTX)
