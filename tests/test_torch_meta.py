"""The C reader of torch tensors (csrc/arraylib/tensor_meta.h, built from
framejit/_torch_meta.cpp by framejit/torch_meta.py): what it reads equals
what torch's Python attributes say, and what it must not read it leaves.
"""
import ctypes
import os
import shutil

import numpy as np
import pytest

from framejit import _C

ABI_FN = ctypes.CFUNCTYPE(None, ctypes.POINTER(ctypes.c_int64), ctypes.POINTER(ctypes.c_int64))


def test_install_checks_its_arguments():
    with pytest.raises(TypeError, match="two int addresses"):
        _C._torch_meta_install("a", 1)
    with pytest.raises(ValueError, match="NULL address"):
        _C._torch_meta_install(0, 0)


def test_install_refuses_a_reader_of_another_layout():
    def abi(version, size):
        version[0] = 99
        size[0] = 8
    fn = ABI_FN(abi)
    addr = ctypes.cast(fn, ctypes.c_void_p).value
    with pytest.raises(ImportError, match="layout 99 of 8 bytes"):
        _C._torch_meta_install(addr, addr)


@pytest.fixture(scope="module")
def torch():
    torch = pytest.importorskip("torch")
    if shutil.which(os.environ.get("CXX") or "c++") is None:
        pytest.skip("no C++ compiler")
    from framejit import torch_meta
    assert torch_meta.load(), torch_meta.reason()
    return torch


def tensors(torch):
    base = torch.arange(24, dtype=torch.float32).reshape(2, 3, 4)

    class Plain(torch.Tensor):   # a subclass without its own dispatch
        pass
    return [
        torch.ones(4, 4, requires_grad=True),
        torch.zeros(3, 5, dtype=torch.float64)[:, ::2],
        torch.tensor(3),
        torch.empty(2, 3, device="meta"),
        torch.arange(10)[3:],
        torch.ones(2, dtype=torch.bool),
        base.permute(2, 0, 1),
        base.expand(5, 2, 3, 4),
        torch.ones(0, 3, dtype=torch.float16),
        torch.ones(2, dtype=torch.bfloat16),
        torch.ones(2, dtype=torch.complex64),
        torch.ones(3, dtype=torch.int8),
        torch.ones(3, dtype=torch.uint8),
        torch.ones(2, 2).as_subclass(Plain),
        torch.ones(3, 3)[1],
    ]


def test_the_reader_reads_what_torch_says(torch):
    codes = {}
    for t in tensors(torch):
        m = _C._testing.tensor_meta(t)
        assert m is not None, t
        assert m["sizes"] == tuple(t.shape)
        assert m["strides"] == t.stride()
        assert m["storage_offset"] == t.storage_offset()
        assert m["requires_grad"] is t.requires_grad
        assert m["device_type"] == {"cpu": 0, "meta": 14}[t.device.type]
        assert m["device_index"] == (-1 if t.device.index is None else t.device.index)
        # one code per dtype, the same for every tensor of it (c10::ScalarType)
        assert codes.setdefault(t.dtype, m["dtype"]) == m["dtype"]
    assert len(set(codes.values())) == len(codes)
    assert codes[torch.float32] == 6 and codes[torch.float64] == 7 and codes[torch.int64] == 4


def test_dispatch_keys_tell_devices_apart(torch):
    cpu = _C._testing.tensor_meta(torch.ones(2))["dispatch_keys"]
    meta = _C._testing.tensor_meta(torch.ones(2, device="meta"))["dispatch_keys"]
    assert cpu != meta and cpu == _C._testing.tensor_meta(torch.ones(3, 3))["dispatch_keys"]


def test_the_reader_leaves_what_only_python_or_other_layouts_could_say(torch):
    import warnings
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        sparse = torch.sparse_coo_tensor([[0]], [1.0], (2,))
        nested = torch.nested.nested_tensor([torch.ones(2), torch.ones(3)])
    for o in (3, 2.5, None, np.ones(3), torch.float32, sparse, nested):
        assert _C._testing.tensor_meta(o) is None, o


def test_loading_twice_keeps_the_first_reader(torch):
    from framejit import torch_meta
    assert torch_meta.load() and torch_meta.reason() is None
    assert _C._testing.tensor_meta(torch.ones(1))["sizes"] == (1,)
