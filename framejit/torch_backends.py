"""torch backends for framejit graphs that hold torch tensors.

Responsible for: turning a framejit graph into a ``torch.fx.GraphModule``
(``to_fx``), and ``torch_backend``, which makes a framejit backend out of a
torch backend (a name in torch's registry, such as "inductor" or
"aot_eager", or a callable ``(gm, example_inputs) -> callable``).  The
callable it returns runs with the graph's inputs positionally and returns a
tuple, as every framejit backend's result must.

Not responsible for: capturing torch code (the C core), NumPy graphs (they
are refused with the reason: use "native" or "eager"), or choosing which
backend a graph gets (framejit/backends.py).

torch is imported when a torch backend first compiles a graph, never by
importing this module: framejit imports and runs without torch.

A torch backend compiles for the values it is shown: without a ShapeEnv,
AOTAutograd and inductor bake the example value of an int input into the
compiled code (a slice ``x[:n]`` compiled with n=2 keeps returning two rows
when called with n=3) and inductor's code asserts the sizes and strides of
its inputs.  A framejit graph, though, may serve several values: a symbolic
int placeholder, a dynamic dimension (docs/dynamic.md).  So the callable
returned here keys its compiled functions by what they were specialized on
(int values, tensor sizes and strides, grad mode) and compiles again for a
new key, up to ``framejit.config.recompile_limit`` keys per graph; past
that, new keys run the GraphModule uncompiled (op by op in torch: exact,
just not compiled), with one warning.
"""
import contextlib
import sys
import warnings

# Builtins bound at import: framejit's code runs while the program's frames
# compile, when the program may have patched builtins (len, isinstance, open...).
from builtins import (  # noqa: A004
    Exception, ImportError, RuntimeWarning, TypeError, ValueError, all, callable, dict,
    enumerate, getattr, isinstance, len, list, next, repr, reversed, slice, str, tuple, type
)
import builtins as _builtins

from . import config

# Node.op values of a framejit graph, and the FX op each one becomes.
# call_attr has no FX op of its own: it is builtins.getattr called as a
# function, which FX prints as an attribute read (``T = x.T``) and
# AOTAutograd traces like any other call.
_FX_OP = {"call_function": "call_function", "call_method": "call_method",
          "call_attr": "call_function"}


def _torch():
    """The torch module, imported now; ImportError names what is missing."""
    try:
        import torch
    except ImportError as e:
        raise ImportError(f"framejit's torch backends need PyTorch (the 'torch' package), "
                          f"which cannot be imported: {e}") from e
    return torch


def is_torch_graph(graph):
    """True when 'graph' holds torch tensors: its ``library`` says "torch",
    or (a graph without that attribute) one of its nodes is a tensor node
    (meta kind "tensor"; NumPy nodes are "array")."""
    library = getattr(graph, "library", None)
    if library is not None:
        return library == "torch"
    if sys.modules.get("torch") is None:
        return False   # no torch tensor exists before torch is imported
    for node in graph.nodes:
        meta = node.meta
        if meta and meta.get("kind") == "tensor":
            return True
    return False


def _map_arg(arg, env, node_types):
    """'arg' with every graph node (an instance of one of 'node_types', the
    classes of the graph's own nodes) replaced by its FX node from 'env' (a
    dict by node name), through tuples (and their subclasses, such as
    torch.Size, which become tuples as FX keeps them), lists, dicts and
    slices; anything else is a constant and stays."""
    if type(arg) in node_types:
        return env[arg.name]
    if isinstance(arg, tuple):
        return tuple(_map_arg(a, env, node_types) for a in arg)
    if isinstance(arg, list):
        return [_map_arg(a, env, node_types) for a in arg]
    if isinstance(arg, dict):
        return {k: _map_arg(v, env, node_types) for k, v in arg.items()}
    if isinstance(arg, slice):
        return slice(_map_arg(arg.start, env, node_types), _map_arg(arg.stop, env, node_types),
                     _map_arg(arg.step, env, node_types))
    return arg


def _set_example_value(fx_node, meta):
    """Gives 'fx_node' the tensor a torch backend may read its shape from.

    framejit's 'fake' is a meta-device tensor with the node's sizes, strides,
    dtype and requires_grad: it goes under 'example_value' (dynamo's key for
    a node's example; passes read shapes and dtypes from it, and
    AOTAutograd's cache takes a call_method on a node with one as a tensor
    method).  Never under 'val': inductor takes a 'val' tensor's device as
    the graph's device (utils.get_all_devices), and 'meta' is no device it
    can compile for; AOTAutograd makes its own FakeTensors from the example
    inputs."""
    if meta and meta.get("kind") == "tensor" and meta.get("fake") is not None:
        fx_node.meta["example_value"] = meta["fake"]


def to_fx(graph):
    """A ``torch.fx.GraphModule`` computing what framejit 'graph' computes.

    Placeholders keep their names and order; call_function and call_method
    nodes keep their targets, args and kwargs (framejit nodes replaced by FX
    nodes, through nested tuples, lists, dicts and slices); a call_attr node
    becomes ``call_function(getattr, (x, name))``.  Nodes stay in order, so
    mutations (setitem, in-place operators and methods) happen where they
    did.  The output returns the graph's output tuple as it is: nested
    tuples and constants included.  Tensor nodes carry framejit's meta
    tensor as ``meta['example_value']`` (see _set_example_value)."""
    torch = _torch()
    fx_graph = torch.fx.Graph()
    nodes = list(graph.nodes)
    node_types = frozenset(type(n) for n in nodes)
    env = {}
    for node in nodes:
        op = node.op
        if op == "placeholder":
            fx_node = fx_graph.placeholder(node.name)
        elif op == "output":
            fx_graph.output(_map_arg(node.args[0], env, node_types))
            continue
        elif op in _FX_OP:
            args = _map_arg(tuple(node.args), env, node_types)
            kwargs = _map_arg(dict(node.kwargs or {}), env, node_types)
            target = node.target
            if op == "call_attr":
                args, target = (args[0], node.target), _builtins.getattr
            fx_node = fx_graph.create_node(_FX_OP[op], target, args, kwargs, name=node.name)
        else:
            raise TypeError(f"to_fx: node {node.name!r} has op {op!r}, which framejit graphs "
                            f"do not have (placeholder, call_function, call_method, call_attr, output)")
        _set_example_value(fx_node, node.meta)
        env[node.name] = fx_node
    return torch.fx.GraphModule(torch.nn.Module(), fx_graph)


class _Slot:
    """The place of the i-th flat output in the output's structure."""
    __slots__ = ("index",)

    def __init__(self, index):
        self.index = index


def _flatten_output(gm):
    """Makes 'gm' return a flat tuple of its distinct FX-node outputs, as
    dynamo's graphs do (AOTAutograd refuses nested outputs, and constants
    need no compiling).  Returns the structure the graph returned, with
    _Slot(i) standing for the i-th flat output and constants as they were,
    or None when the output already was a flat tuple of distinct nodes."""
    fx = _torch().fx
    output = next(n for n in reversed(gm.graph.nodes) if n.op == "output")
    out = output.args[0]
    flat, index = [], {}

    def walk(x):
        if isinstance(x, fx.Node):
            if x not in index:
                index[x] = len(flat)
                flat.append(x)
            return _Slot(index[x])
        if isinstance(x, (tuple, list)):
            return type(x)(walk(a) for a in x)
        if isinstance(x, dict):
            return {k: walk(v) for k, v in x.items()}
        return x

    structure = walk(out)
    simple = (isinstance(out, tuple) and len(flat) == len(out)
              and all(isinstance(a, fx.Node) for a in out))
    output.args = (tuple(flat),)
    gm.recompile()
    return None if simple else structure


def _rebuild(structure, flat):
    if isinstance(structure, _Slot):
        return flat[structure.index]
    if isinstance(structure, (tuple, list)):
        return type(structure)(_rebuild(s, flat) for s in structure)
    if isinstance(structure, dict):
        return {k: _rebuild(v, flat) for k, v in structure.items()}
    return structure


def _resolve(fn_or_name):
    """The torch backend callable for a name in torch's registry or a callable."""
    if callable(fn_or_name):
        return fn_or_name
    _torch()
    from torch._dynamo.backends.registry import lookup_backend
    return lookup_backend(fn_or_name)


@contextlib.contextmanager
def _tracing_context(torch, args):
    """What torch.compile gives a backend around its call: a TracingContext
    whose FakeTensorMode has a ShapeEnv and has already made each tensor
    input's fake, with static sizes (framejit's graphs specialize sizes).
    Inductor's FX graph cache needs that ShapeEnv: without it every compile
    bypasses the cache ("No shape env") and a first call recompiles what a
    process compiled before."""
    try:
        from torch._guards import TracingContext, tracing
        from torch._subclasses.fake_tensor import FakeTensorMode
        from torch.fx.experimental.symbolic_shapes import ShapeEnv
    except ImportError:  # a torch without them: the backend makes its own fakes
        yield
        return
    mode = FakeTensorMode(shape_env=ShapeEnv())
    # the mode's memo holds a fake only while it lives: kept here until the
    # backend returns, the backend's own from_tensor finds these static ones
    fakes = [mode.from_tensor(a, static_shapes=True) for a in args if isinstance(a, torch.Tensor)]
    with tracing(TracingContext(mode)):
        yield
    del fakes


class _Specialized:
    """The callable a torch backend's framejit backend returns (see the
    module's docstring): one compiled function per key of what torch
    specialized on, the structure of the outputs put back around them."""

    __slots__ = ("graph", "backend", "name", "tensor_args", "scalar_args", "compiled",
                 "structure", "eager", "warned", "torch")

    def __init__(self, graph, backend, name):
        self.graph = graph      # strong: each compile gets a GraphModule of its own from it
        self.backend = backend  # the torch backend: (gm, example_inputs) -> callable
        self.name = name        # what messages call the backend
        self.torch = _torch()
        placeholders = [n for n in graph.nodes if n.op == "placeholder"]
        self.tensor_args = tuple(i for i, n in enumerate(placeholders)
                                 if (n.meta or {}).get("kind") == "tensor")
        self.scalar_args = tuple(i for i, n in enumerate(placeholders)
                                 if (n.meta or {}).get("kind") != "tensor")
        self.compiled = {}      # key() of the example inputs -> the backend's callable
        self.structure = None   # the output's structure (_flatten_output)
        self.eager = None       # the GraphModule run uncompiled past the recompile limit
        self.warned = False

    def key(self, args):
        """What torch backends specialize on and one framejit graph may see
        vary: int values, tensor sizes and strides (dynamic dims), grad mode
        (with it, AOTAutograd compiles an autograd function; without, an
        inference graph)."""
        key = [self.torch.is_grad_enabled()]
        for i in self.tensor_args:
            a = args[i]
            key.append(a.shape)
            key.append(a.stride())
        if len(self.tensor_args) > 1:
            # which inputs are one tensor, and which are views of one base
            # (and where they start): a backend compiles for the aliasing it
            # is shown (AOTAutograd's in-place ops on one of two aliased
            # inputs), so another pattern is another compile, as Dynamo's
            # duplicate-input and aliasing guards make it
            same, based = {}, {}
            for i in self.tensor_args:
                a = args[i]
                base = a._base
                key.append(same.setdefault(id(a), i))
                if base is not None:
                    key.append(based.setdefault(id(base), i))
                    key.append(a.storage_offset())
                else:
                    key.append(based.setdefault(id(a), i))
        for i in self.scalar_args:
            a = args[i]
            key.append(type(a))
            key.append(a)
        return tuple(key)

    def gm(self):
        """A new flat-output GraphModule of the graph (compile_fx takes
        ownership of the one it is given and may change it)."""
        gm = to_fx(self.graph)
        self.structure = _flatten_output(gm)
        return gm

    def compile(self, args, key):
        if len(self.compiled) >= config.recompile_limit:
            if not self.warned:
                self.warned = True
                warnings.warn(
                    f"framejit: torch backend {self.name!r} compiled one graph for "
                    f"{len(self.compiled)} different int values or tensor sizes "
                    f"(framejit.config.recompile_limit); others run the FX graph uncompiled",
                    RuntimeWarning, stacklevel=3)
            if self.eager is None:
                self.eager = self.gm()
            return self.eager
        with _tracing_context(self.torch, args):
            fn = self.backend(self.gm(), list(args))
        if not callable(fn):
            raise TypeError(f"torch backend {self.name!r} returned {type(fn).__name__}; "
                            f"expected a callable")
        self.compiled[key] = fn
        return fn

    def __call__(self, *args):
        key = self.key(args)
        fn = self.compiled.get(key)
        if fn is None:
            # a compile at call time has no frame of its own for the C
            # core to name (it wraps only the first compile's errors)
            try:
                fn = self.compile(args, key)
            except Exception as e:
                from .exc import BackendCompilerFailed
                raise BackendCompilerFailed(
                    f"torch backend {self.name!r} failed compiling a graph again for new int "
                    f"values or tensor sizes: {type(e).__name__}: {e}") from e
        out = fn(*args)
        if self.structure is None:
            return out if type(out) is tuple else tuple(out)
        return _rebuild(self.structure, out)


class TorchBackend:
    """A framejit backend ``backend(graph, example_inputs) -> callable`` that
    hands a torch graph, as a flat-output GraphModule, to a torch backend."""

    __slots__ = ("target", "__weakref__")

    def __init__(self, fn_or_name):
        if not (callable(fn_or_name) or isinstance(fn_or_name, str)):
            raise TypeError(f"torch_backend expects a torch backend name or a callable, "
                            f"not {type(fn_or_name).__name__}")
        self.target = fn_or_name

    @property
    def __name__(self):
        t = self.target
        return t if isinstance(t, str) else getattr(t, "__name__", repr(t))

    def __repr__(self):
        return f"torch_backend({self.target!r})"

    def __call__(self, graph, example_inputs):
        name = self.__name__
        if not is_torch_graph(graph):
            raise TypeError(
                f"torch backend {name!r} compiles graphs of torch tensors; this graph holds "
                f"{getattr(graph, 'library', None) or 'NumPy'} arrays: use backend 'native' "
                f"(NumPy graphs to C kernels, torch graphs to inductor) or 'eager'")
        run = _Specialized(graph, _resolve(self.target), name)
        run.compile(example_inputs, run.key(example_inputs))
        return run


def torch_backend(fn_or_name):
    """A framejit backend for torch graphs made of a torch backend: a name in
    torch's registry ("inductor", "aot_eager", "eager"...) or a callable
    ``fn(gm, example_inputs) -> callable``.  It gives 'fn' a GraphModule of
    the graph (to_fx, its output flattened to a tuple of nodes) and the
    example inputs as a list, and returns a callable taking the graph's
    inputs positionally and returning a tuple."""
    return TorchBackend(fn_or_name)


def torch_importable():
    """True when torch is imported or can be imported (found, not imported)."""
    if "torch" in sys.modules:
        return sys.modules["torch"] is not None  # None: imports of it are blocked
    from importlib.util import find_spec
    try:
        return find_spec("torch") is not None
    except (ImportError, ValueError):
        return False


_named = {}  # name in torch's registry -> its TorchBackend, made once per name


def registered_torch_backend(name):
    """The TorchBackend of 'name' in torch's backend registry, the same object
    for every call with that name (framejit compilers share cache entries only
    when their backends are the same object); None when the program has not
    imported torch or its registry does not know 'name'.  Imports
    torch._dynamo, but never torch itself: a mistyped backend name in a
    NumPy program must not cost torch's import."""
    backend = _named.get(name)
    if backend is not None:
        return backend
    if sys.modules.get("torch") is None:
        return None
    try:
        from torch._dynamo.backends.registry import lookup_backend
        from torch._dynamo.exc import InvalidBackend
    except ImportError:
        return None
    try:
        lookup_backend(name)
    except InvalidBackend:
        return None
    backend = _named[name] = TorchBackend(name)
    return backend
