"""tilert_torch.py: tilec kernels launched through libtilert (ctypes) in torch's process, and the
timing the benchmark's torch scripts share (attn_sdpa.py, mm8_torch.py). libtilert is
build/libtilert.so beside this directory, or $TILERT_LIB; it runs in the device's primary
context, torch's, on torch's current stream, and builds the tensor maps sm_90a kernels read."""
import ctypes, os
import torch

rt = ctypes.CDLL(os.environ.get("TILERT_LIB", os.path.join(os.path.dirname(__file__), "..", "build", "libtilert.so")))
rt.tilert_last_error.restype = ctypes.c_char_p
torch.zeros(1, device="cuda")

class Arg(ctypes.Structure):   # tilert_arg (runtime/tilert.h)
    class V(ctypes.Union):
        _fields_ = [("ptr", ctypes.c_uint64), ("i32", ctypes.c_int32), ("u32", ctypes.c_uint32),
                    ("i64", ctypes.c_int64), ("f32", ctypes.c_float), ("bits16", ctypes.c_uint16)]
    _fields_ = [("kind", ctypes.c_int), ("v", V)]
PTR, I32, F32 = 0, 1, 4

def check(status, what):
    assert status == 0, "%s: %s" % (what, rt.tilert_last_error().decode())

ctx = ctypes.c_void_p()
check(rt.tilert_init(0, ctypes.byref(ctx)), "tilert_init")   # the primary context, torch's

def kernels(path, names):
    """The kernels `names` (bytes) of the PTX module at path, by name."""
    mod, fns = ctypes.c_void_p(), {}
    check(rt.tilert_load_ptx_file(ctx, path.encode(), ctypes.byref(mod)), "load " + path)
    for name in names:
        fn = ctypes.c_void_p()
        check(rt.tilert_get_kernel(mod, name, ctypes.byref(fn)), name.decode())
        fns[name] = fn
    return fns

def launch(fn, what, args):
    """fn on args, each a torch tensor (its pointer) or a (kind, value) pair, on torch's stream."""
    a = (Arg * len(args))()
    for i, x in enumerate(args):
        if isinstance(x, torch.Tensor):
            a[i].kind, a[i].v.ptr = PTR, x.data_ptr()
        elif x[0] == F32:
            a[i].kind, a[i].v.f32 = F32, x[1]
        else:
            a[i].kind, a[i].v.i32 = I32, x[1]
    st = ctypes.c_void_p(torch.cuda.current_stream().cuda_stream)
    check(rt.tilert_launch(fn, st, a, len(args)), "launch " + what)

def bench(f, reps=30):
    """Median milliseconds of reps calls of f, CUDA events, after 3 warm-up calls."""
    for _ in range(3): f()
    torch.cuda.synchronize()
    ts = []
    for _ in range(reps):
        a = torch.cuda.Event(enable_timing=True); b = torch.cuda.Event(enable_timing=True)
        a.record(); f(); b.record(); torch.cuda.synchronize(); ts.append(a.elapsed_time(b))
    ts.sort(); return ts[len(ts) // 2]
