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
import os
import sys
import sysconfig
import threading

from . import _C

_lib = None     # the loaded library, kept for the process: _C holds its function pointer
_reason = None  # why the reader could not be installed, once load() failed
_thread = None  # the background build started by ensure()


def _source():
    with open(os.path.join(os.path.dirname(os.path.abspath(__file__)), "_torch_meta.cpp")) as f:
        return f.read()


def _flags(torch, std):
    """(flags, libs) for compiling the reader against 'torch' with -std='std'."""
    base = os.path.dirname(os.path.abspath(torch.__file__))
    inc, lib = os.path.join(base, "include"), os.path.join(base, "lib")
    flags = ["-O2", "-shared", "-fPIC", f"-std={std}", "-w", f"-I{sysconfig.get_paths()['include']}",
             f"-I{inc}", f"-I{os.path.join(inc, 'torch', 'csrc', 'api', 'include')}",
             f"-D_GLIBCXX_USE_CXX11_ABI={int(torch._C._GLIBCXX_USE_CXX11_ABI)}"]
    return flags, [f"-L{lib}", "-ltorch_python", "-ltorch_cpu", "-lc10", f"-Wl,-rpath,{lib}"]


def build(torch):
    """The path of the reader built for this torch (from the cache when it is there):
    native.py's cached compile, with C++20 (torch's headers want it), else C++17."""
    from .native import compile_cached
    cxx = [os.environ.get("CXX") or "c++"]
    source = _source()
    version = f"torch {torch.__version__} at {torch.__file__}; {sys.version}"
    errors = []
    for std in ("c++20", "c++17"):
        flags, libs = _flags(torch, std)
        try:
            return compile_cached(source, cxx, flags, ".cpp", "framejit's torch tensor reader",
                                  libs, version)[0]
        except RuntimeError as e:
            errors.append(str(e))
    raise RuntimeError("\n".join(errors))


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
        state = ctypes.cast(lib.fj_torch_global_state, ctypes.c_void_p).value
        _C._torch_meta_install(read, abi)
        _C._torch_state_install(state)
    except (OSError, RuntimeError, ImportError, AttributeError) as e:
        _reason = f"the torch tensor reader is not available: {e}"
        return False
    _lib = lib
    return True


def ensure():
    """Called by the C core when a trace first meets torch: installs the reader
    now when it is built (a disk-cache hit costs milliseconds), else builds it
    on a background thread, so no compile waits for the C++ compiler (tens of
    seconds, once per torch version).  Until it is installed, guards read
    tensors through torch's methods; each guard switches to the reader on its
    first check after that (csrc/guards/guards.c torch_check)."""
    global _thread
    if _lib is not None or _reason is not None or _thread is not None:
        return
    if _cached():
        load()
        return
    _thread = threading.Thread(target=load, name="framejit-torch-reader", daemon=True)
    _thread.start()


def wait(timeout=None):
    """Waits for the background build ensure() started; True once installed."""
    t = _thread
    if t is not None:
        t.join(timeout)
    return _lib is not None


def _cached():
    """True when the reader for this torch is in the disk cache (no build)."""
    try:
        import torch
        from .native import cached_path
    except ImportError:
        return False
    cxx = [os.environ.get("CXX") or "c++"]
    version = f"torch {torch.__version__} at {torch.__file__}; {sys.version}"
    for std in ("c++20", "c++17"):
        flags, libs = _flags(torch, std)
        if os.path.exists(cached_path(_source(), cxx, flags, libs, version)):
            return True
    return False


def reason():
    """Why load() returned False (None when it did not)."""
    return _reason
