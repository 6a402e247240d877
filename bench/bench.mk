# bench.mk: the benchmark's extra rules. The top Makefile includes it after its own definitions
# (it uses B, BENCH_PROGS, EX_PTX, EX_DIR, CUDA_HOME from there; `make bench` itself is the top
# Makefile's target, which hands over to bench/run.sh).
#
#   make bench           compile times (no GPU needed), then each kernel against its reference
#   make bench-all       the same, then torch and Triton (bench/peers.py) and one merged table
#   make bench-all-run   bench-all without rebuilding (a GPU machine given a build/ made elsewhere)
#
# cuBLAS is a dependency of the benchmark only: tilec and libtilert never link it. The rpath lets
# the bench program find libcublas in the toolkit without LD_LIBRARY_PATH.

$(BENCH_PROGS): LDFLAGS += -Wl,-rpath,$(CUDA_HOME)/lib64

.PHONY: bench-all bench-all-run
bench-all: all $(EX_PTX) $(BENCH_PROGS)
	sh bench/run.sh --all $(B) $(EX_DIR)

bench-all-run:
	sh bench/run.sh --all $(B) $(EX_DIR)

# The CUDA C++ reference of examples/lse_bwd.tile, built by nvcc (the benchmark only; without nvcc
# the bench program skips those rows): the bench program loads it from its own directory. Built for sm_90 (H100/H200), the GPUs of the figures.
LSE_REF := $(B)/bench/lse_bwd_ref.cubin
NVCC ?= $(CUDA_HOME)/bin/nvcc
bench bench-all: $(LSE_REF)
$(LSE_REF): bench/lse_bwd_ref.cu
	@mkdir -p $(dir $@)
	@if command -v $(NVCC) >/dev/null 2>&1; then echo "$(NVCC) -cubin -O3 -arch=sm_90 -o $@ $<"; \
	 $(NVCC) -cubin -O3 -arch=sm_90 -o $@ $<; \
	 else echo "bench: no nvcc ($(NVCC)): the lse_bwd rows will be skipped"; fi
