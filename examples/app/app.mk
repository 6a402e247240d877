# examples/app/app.mk: the example program that links generated kernels (included by Makefile).
#
#   $(EX_DIR)/app/NAME.c, NAME.h        tilec --emit=c examples/NAME.tile (vecadd, softmax)
#   $(EX_DIR)/app/app                   app.c + both launchers + libtilert
#   make app-run                        runs it (check-gpu does too); prints
#                                       `skipped: no CUDA device` and succeeds without a GPU
#
# Uses the top Makefile's B, TILEC, TILERT_A, CUDA_INC, CUDA_LIBS, CFLAGS, DEPFLAGS, ARCH and the
# driver stub link $(B)/cuda-stub/libcuda.so.1.

APP_DIR     := $(EX_DIR)/app
APP_KERNELS := vecadd softmax
APP_GEN_C   := $(APP_KERNELS:%=$(APP_DIR)/%.c)
APP_GEN_H   := $(APP_KERNELS:%=$(APP_DIR)/%.h)
APP_OBJ     := $(APP_DIR)/app.o $(APP_GEN_C:.c=.o)
APP         := $(APP_DIR)/app

# One tilec run writes both files (a multi-target pattern rule). Without ARCH the app embeds an
# sm_90a cubin (Hopper loads it as is) and sm_80 PTX (JIT-compiled on every other GPU), so both
# ways of loading run somewhere.
comma := ,
APP_ARCHS := $(if $(ARCH),$(ARCH),sm_80$(comma)sm_90a)
$(APP_DIR)/%.c $(APP_DIR)/%.h: examples/%.tile $(TILEC)
	@mkdir -p $(@D)
	$(TILEC) --emit=c --arch=$(APP_ARCHS) -o $(APP_DIR)/$*.c $<

$(APP_DIR)/app.o: examples/app/app.c $(APP_GEN_H)
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) $(DEPFLAGS) -I$(APP_DIR) -Iruntime -I$(CUDA_INC) -c -o $@ $<

$(APP_DIR)/%.o: $(APP_DIR)/%.c $(APP_DIR)/%.h
	$(CC) $(CFLAGS) $(DEPFLAGS) -I$(APP_DIR) -Iruntime -I$(CUDA_INC) -c -o $@ $<

$(APP): $(APP_OBJ) $(TILERT_A)
	$(CC) $(LDFLAGS) -o $@ $(APP_OBJ) $(TILERT_A) $(CUDA_LIBS) -lm

all: $(APP)
check-gpu: app-run

# Without a driver the loader cannot find libcuda.so.1: the stub stands in (last on the path, so
# a real driver found through LD_LIBRARY_PATH still wins), and its cuInit failure makes the
# program skip. With a driver in the loader's cache the stub is never put on the path.
.PHONY: app app-run
app: $(APP)
app-run: $(APP) $(B)/cuda-stub/libcuda.so.1
	@echo "== $(APP)"
	@if { ldconfig -p || /sbin/ldconfig -p; } 2>/dev/null | grep -q 'libcuda\.so\.1 '; then \
		$(APP); \
	else \
		LD_LIBRARY_PATH="$${LD_LIBRARY_PATH:+$$LD_LIBRARY_PATH:}$(abspath $(B)/cuda-stub)" $(APP); \
	fi

-include $(wildcard $(APP_DIR)/*.d)
