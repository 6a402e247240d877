# tests/unit/test_gpu_bounds checks the GPU tests' error bounds on the CPU, in `make check`: it
# links this directory's helpers (ref_util.c, and gpu_util.c for its random numbers).
$(B)/tests/unit/test_gpu_bounds: $(B)/tests/gpu/helpers.a
