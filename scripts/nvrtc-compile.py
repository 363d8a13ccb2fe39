#!/usr/bin/env python3
"""Compile kernel-mode .cu files with NVRTC exactly as kforge does (the prelude
force-included, -DNAME=v for parameters), without a GPU. For authors of bundled tasks
and red-team cases: python3 scripts/nvrtc-compile.py [-DNAME=v ...] FILE.cu ..."""
import ctypes, glob, os, sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
lib = None
for p in [os.environ.get("KFORGE_NVRTC", "")] + sorted(glob.glob("/usr/local/cuda*/lib64/libnvrtc.so*")) + ["libnvrtc.so"]:
    try:
        if p:
            lib = ctypes.CDLL(p)
            break
    except OSError:
        pass
if not lib:
    sys.exit("nvrtc-compile: libnvrtc not found")
defs = [a for a in sys.argv[1:] if a.startswith("-D")]
files = [a for a in sys.argv[1:] if not a.startswith("-")]
prelude = open(os.path.join(ROOT, "src/backend/cuda/prelude.cuh")).read()
inc = [d for d in glob.glob("/usr/local/cuda*/include")][:1]
bad = 0
for f in files:
    src = prelude + "#line 1 \"%s\"\n" % f + open(f).read()
    prog = ctypes.c_void_p()
    lib.nvrtcCreateProgram(ctypes.byref(prog), src.encode(), f.encode(), 0, None, None)
    opts = ["--gpu-architecture=sm_90", "-default-device", "-std=c++17", "-lineinfo",
            "--ptxas-options=-v"] + ["-I" + i for i in inc] + defs
    arr = (ctypes.c_char_p * len(opts))(*[o.encode() for o in opts])
    rc = lib.nvrtcCompileProgram(prog, len(opts), arr)
    n = ctypes.c_size_t()
    lib.nvrtcGetProgramLogSize(prog, ctypes.byref(n))
    log = ctypes.create_string_buffer(n.value)
    lib.nvrtcGetProgramLog(prog, log)
    print("%s: %s" % (f, "ok" if rc == 0 else "FAILED (%d)" % rc))
    if log.value.strip():
        print(log.value.decode(errors="replace").rstrip())
    bad |= rc != 0
    lib.nvrtcDestroyProgram(ctypes.byref(prog))
sys.exit(1 if bad else 0)
