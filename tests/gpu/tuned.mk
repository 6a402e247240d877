# A second variant of examples/softmax.tile for tests/gpu/tuned.c (the dispatch of tuned
# launchers): BN=4096, whose assume(N <= BN) refuses the longer rows the file's own BN takes.
TUNED_PTX := $(EX_DIR)/tuned/softmax_bn4096.ptx

$(TUNED_PTX): examples/softmax.tile $(TILEC)
	@mkdir -p $(@D)
	$(TILEC) $(if $(ARCH),--arch=$(ARCH)) -D BN=4096 $< -o $@

all: $(TUNED_PTX)
check-gpu: $(TUNED_PTX)
