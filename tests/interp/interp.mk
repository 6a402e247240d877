# The GPU test programs (tests/gpu) linked with libtilert_host.a instead of libcuda, as
# build/host/tests/gpu/NAME: `make check` runs them on the CPU (tests/interp/run.sh), so the
# examples' and the test kernels' semantics are checked where there is no GPU.
# (interp_vs_gpu compares the interpreter with the GPU: on the host it would meet itself.)
HOST_GPU_PROGS := $(patsubst $(B)/tests/gpu/%,$(B)/host/tests/gpu/%,$(filter-out %/interp_vs_gpu,$(GPU_PROGS)))

$(HOST_GPU_PROGS): $(B)/host/tests/gpu/%: $(B)/tests/gpu/%.o $(call helpers_a,tests/gpu) $(TILERT_HOST_A)
	@mkdir -p $(@D)
	$(CC) $(LDFLAGS) -o $@ $(filter %.o,$^) $(filter %/helpers.a,$^) $(TILERT_HOST_A) -lpthread -lm

check: $(HOST_GPU_PROGS)
