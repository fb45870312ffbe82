"""The C reader of torch tensors (csrc/arraylib/tensor_meta.h).

``framejit/_torch_meta.cpp`` reads a tensor's metadata (dtype, device,
requires_grad, dispatch keys, sizes, strides, storage offset) straight from
its ``TensorImpl``, so guards on tensors need no Python attribute calls.
It must match the installed torch's headers, so it is built at run time,
once per torch version, into the same disk cache as the native backend's
kernels, and installed into ``framejit._C``.  torch stays optional:
framejit's own build never needs it.

``load()`` returns True once the reader is installed, False when it cannot
be (torch not importable, no C++ compiler, a failed build); ``reason()``
says why.

Environment: ``CXX`` (default ``c++``), ``FRAMEJIT_CACHE_DIR`` (see
framejit/native.py).
"""
import ctypes
import hashlib
import os
import sys
import sysconfig

from . import _C

_lib = None     # the loaded library, kept for the process: _C holds its function pointer
_reason = None  # why the reader could not be installed, once load() failed


def _source():
    with open(os.path.join(os.path.dirname(os.path.abspath(__file__)), "_torch_meta.cpp")) as f:
        return f.read()


def _command(torch, cxx, std):
    base = os.path.dirname(os.path.abspath(torch.__file__))
    inc = os.path.join(base, "include")
    lib = os.path.join(base, "lib")
    py_inc = sysconfig.get_paths()["include"]
    return ([cxx, "-O2", "-shared", "-fPIC", f"-std={std}", "-w",
             f"-I{py_inc}", f"-I{inc}", f"-I{os.path.join(inc, 'torch', 'csrc', 'api', 'include')}",
             f"-D_GLIBCXX_USE_CXX11_ABI={int(torch._C._GLIBCXX_USE_CXX11_ABI)}"],
            [f"-L{lib}", "-ltorch_python", "-ltorch_cpu", "-lc10", f"-Wl,-rpath,{lib}"])


def build(torch):
    """The path of the reader built for this torch (from the cache when it is there)."""
    import subprocess
    import tempfile
    from .native import cache_dir
    cxx = os.environ.get("CXX") or "c++"
    source = _source()
    key = hashlib.sha256("\0".join([source, torch.__version__, torch.__file__, sys.version,
                                    cxx]).encode()).hexdigest()[:40]
    d = cache_dir()
    path = os.path.join(d, f"fj_torch_meta_{key}.so")
    if os.path.exists(path):
        return path
    os.makedirs(d, exist_ok=True)
    fd, tmp_cpp = tempfile.mkstemp(suffix=".cpp", prefix=".fj_torch_", dir=d)
    tmp_so = tmp_cpp[:-4] + ".so"
    try:
        with os.fdopen(fd, "w") as f:
            f.write(source)
        errors = []
        for std in ("c++20", "c++17"):
            head, tail = _command(torch, cxx, std)
            try:
                r = subprocess.run(head + [tmp_cpp, "-o", tmp_so] + tail,
                                   capture_output=True, text=True)
            except OSError as e:
                raise RuntimeError(f"no C++ compiler ({cxx}): {e}") from None
            if r.returncode == 0:
                os.replace(tmp_so, path)  # atomic: other processes see a whole file or none
                return path
            errors.append(f"-std={std}: {(r.stderr or r.stdout)[-2000:]}")
        raise RuntimeError(f"the C++ compiler ({cxx}) failed on _torch_meta.cpp:\n" +
                           "\n".join(errors))
    finally:
        for t in (tmp_cpp, tmp_so):
            try:
                os.unlink(t)
            except OSError:
                pass


def load():
    """Installs the reader into framejit._C: True when it is installed, False if it cannot be."""
    global _lib, _reason
    if _lib is not None:
        return True
    if _reason is not None:
        return False
    try:
        import torch
    except ImportError as e:
        _reason = f"torch cannot be imported: {e}"
        return False
    try:
        lib = ctypes.CDLL(build(torch))
        read = ctypes.cast(lib.fj_torch_meta_read, ctypes.c_void_p).value
        abi = ctypes.cast(lib.fj_torch_meta_abi, ctypes.c_void_p).value
        _C._torch_meta_install(read, abi)
    except (OSError, RuntimeError, ImportError, AttributeError) as e:
        _reason = f"the torch tensor reader is not available: {e}"
        return False
    _lib = lib
    return True


def reason():
    """Why load() returned False (None when it did not)."""
    return _reason
