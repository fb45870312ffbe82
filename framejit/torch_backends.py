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
int placeholder, a dynamic dimension (docs/dynamic.md).  Such a graph is
compiled dynamically, as torch.compile compiles with dynamic shapes: the
backend gets fakes whose dynamic dims are symbols, and its ints become
symbols (AOTAutograd's own), so one compile serves many sizes and values;
what the compile assumed about them comes back from the ShapeEnv as a guard
expression over the inputs' sizes, strides and ints.  The callable returned
here keeps every compile with the part of its inputs it cannot take as
symbols (grad mode, aliasing, dtypes, devices, other scalars: its static
key) and its guard expression; a call whose static key matches a compile
and whose sizes pass that compile's guards reuses it, and only a call no
compile serves compiles again.  A fully static graph (no dynamic dims, no
int inputs) compiles once per exact key, as before.  Past
``framejit.config.recompile_limit`` compiles per graph, inputs no compile
serves run the GraphModule uncompiled (op by op in torch: exact, just not
compiled), with one warning.
"""
import contextlib
import sys
import warnings

# Builtins bound at import: framejit's code runs while the program's frames
# compile, when the program may have patched builtins (len, isinstance, open...).
from builtins import (  # noqa: A004
    Exception, ImportError, RuntimeWarning, TypeError, ValueError, all, any, bool, callable,
    dict, enumerate, eval, frozenset, getattr, id, int, isinstance, len, list, next, range,
    repr, reversed, set, slice, str, tuple, type
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
    tensor as ``meta['example_value']`` (see _set_example_value).

    A size input (an int placeholder whose meta says ``size_of: (tensor
    placeholder's name, dim)``) stays a placeholder, but its uses read
    ``torch.ops.aten.sym_size.int(tensor, dim)``, computed once after the
    placeholders: a backend compiling with symbolic sizes then sees the
    int as the tensor's own size symbol (as in Dynamo's graphs), not as a
    second symbol it would have to guard equal to it."""
    torch = _torch()
    fx_graph = torch.fx.Graph()
    nodes = list(graph.nodes)
    node_types = frozenset(type(n) for n in nodes)
    env = {}
    sizes = []   # (size placeholder's name, tensor placeholder's name, dim)
    for node in nodes:
        if node.op == "placeholder":
            fx_node = env[node.name] = fx_graph.placeholder(node.name)
            _set_example_value(fx_node, node.meta)
            size_of = node.meta.get("size_of") if node.meta else None
            if size_of is not None:
                sizes.append((node.name, size_of[0], size_of[1]))
    for name, tensor, dim in sizes:
        if tensor not in env:
            raise ValueError(f"to_fx: size input {name!r} is the size of {tensor!r}, which is "
                             f"not a placeholder of the graph")
        env[name] = fx_graph.call_function(torch.ops.aten.sym_size.int, (env[tensor], dim))
    for node in nodes:
        op = node.op
        if op == "placeholder":
            continue
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
def _tracing_context(torch, args, dynamic=None):
    """What torch.compile gives a backend around its call: a TracingContext
    whose FakeTensorMode has a ShapeEnv and has already made each tensor
    input's fake.  Inductor's FX graph cache needs that ShapeEnv: without it
    every compile bypasses the cache ("No shape env") and a first call
    recompiles what a process compiled before.

    Without 'dynamic' every fake has static sizes.  With it (a _Dynamic), a
    tensor input's dims in ``dynamic.dims[i]`` are symbols (source
    ``t{i}``, the name produce_guards_expression gives input i), its other
    dims static, and each int input in ``dynamic.ints`` is the SymInt
    AOTAutograd's process_inputs makes of it (the same call, source
    ``sym_{i}``: with duck sizing it returns this symbol again, so the
    graph's example values and AOTAutograd's trace share their symbols).

    Yields (mode, fake inputs: each tensor's fake, each int's SymInt, other
    inputs as they are), or None for a torch without these APIs (the
    backend then makes its own fakes)."""
    try:
        from torch._guards import TracingContext, tracing
        from torch._subclasses.fake_tensor import FakeTensorMode
        from torch.fx.experimental.symbolic_shapes import ShapeEnv
        if dynamic is not None:
            from torch._dynamo.source import ConstantSource, LocalSource
            from torch.fx.experimental.symbolic_shapes import DimDynamic, StatelessSymbolicContext
    except ImportError:
        yield None
        return
    mode = FakeTensorMode(shape_env=ShapeEnv())
    # the mode's memo holds a fake only while it lives: kept here until the
    # backend returns, the backend's own from_tensor finds these
    fakes = []
    for i, a in enumerate(args):
        if isinstance(a, torch.Tensor):
            dims = dynamic.dims.get(i) if dynamic is not None else None
            if dims:
                context = StatelessSymbolicContext(dynamic_sizes=[
                    DimDynamic.DYNAMIC if d in dims else DimDynamic.STATIC for d in range(a.dim())])
                a = mode.from_tensor(a, symbolic_context=context, source=LocalSource(f"t{i}"))
            else:
                a = mode.from_tensor(a, static_shapes=True)
        elif dynamic is not None and i in dynamic.ints and type(a) is int:
            env = mode.shape_env
            source = ConstantSource(f"sym_{i}")
            a = env.create_symintnode(env.create_symbol(a, source, positive=a >= 0),
                                      hint=a, source=source)
        fakes.append(a)
    with tracing(TracingContext(mode)):
        yield mode, fakes
    del fakes


def _fake_example_values(gm, mode, fakes):
    """Gives every node of 'gm' the example value it has on 'fakes' (symbolic
    sizes, SymInts), as Dynamo's graphs carry theirs, in place of
    framejit's static meta tensors: passes that read ``example_value``
    then see the symbols the backend compiles with.  A node whose value is
    no tensor, symbol or number (setitem's None), and the output, get
    none.  'val' stays absent, as in Dynamo's graphs (AOTAutograd sets it
    on its own graphs)."""
    from torch.fx.passes.fake_tensor_prop import FakeTensorProp
    FakeTensorProp(gm, mode).propagate_dont_convert_inputs(*fakes)
    for node in gm.graph.nodes:
        val = node.meta.pop("val", None)
        if val is None or node.op == "output":
            node.meta.pop("example_value", None)
        else:
            node.meta["example_value"] = val


class _Dynamic:
    """What makes a graph's compile dynamic, read once from its placeholders'
    meta: ``dims[i]``, the dynamic dims of tensor input i (a tuple, maybe
    empty); ``ints``, the indices of int inputs (symbolic ints and sizes:
    framejit makes an int a graph input only once it varies)."""
    __slots__ = ("dims", "ints")

    def __init__(self, dims, ints):
        self.dims = dims
        self.ints = ints


def _dynamic_of(placeholders):
    """The _Dynamic of a graph with these placeholders, or None when nothing
    in it varies (no dynamic dim, no int input)."""
    dims, ints = {}, set()
    for i, node in enumerate(placeholders):
        meta = node.meta or {}
        if meta.get("kind") == "tensor":
            dims[i] = tuple(meta.get("dynamic_dims") or ())
        elif meta.get("size_of") is not None or type(meta.get("example")) is int:
            ints.add(i)
    if not ints and not any(dims.values()):
        return None
    return _Dynamic(dims, frozenset(ints))


class _Compiled:
    """One compile of a graph: the backend's callable 'fn' and the inputs it
    serves.  A static compile ('static' None) serves the exact key 'key' it
    was compiled for; a dynamic one serves any inputs with its static key
    whose sizes and ints pass 'guards' (a code object over ``L['t0']``...,
    ``L['t{j}']`` being input ``guard_args[j]``; True when the ShapeEnv
    had no guard)."""
    __slots__ = ("fn", "key", "static", "guards", "guard_args")

    def __init__(self, fn, key, static=None, guards=None, guard_args=()):
        self.fn = fn
        self.key = key
        self.static = static
        self.guards = guards
        self.guard_args = guard_args

    def serves(self, key, static, args):
        """True when this compile may run 'args' (exact key 'key', static key
        'static').  Reads only sizes, strides, storage offsets and ints."""
        if self.static is None:
            return self.key == key
        if self.static != static:
            return False
        if self.guards is True:
            return True
        names = {f"t{j}": args[i] for j, i in enumerate(self.guard_args)}
        try:
            return bool(eval(self.guards, _sympy_interp(), {"L": names}))
        except Exception:
            # a guard that cannot be evaluated on these inputs (an int out
            # of a range it computes in) does not hold for them
            return False


def _sympy_interp():
    """The globals guard expressions evaluate in (ShapeEnv.evaluate_guards_expression's)."""
    from torch.fx.experimental.symbolic_shapes import SYMPY_INTERP
    return SYMPY_INTERP


def _guard_code(shape_env, fakes, dynamic, args):
    """The guard expression of a dynamic compile, compiled, and the input
    index of each of its placeholders: (code or True when there are no
    guards, guard_args).

    The placeholders are the tensors' fakes and, for an int input, the
    SymInt of each symbol whose sources include ``sym_{i}`` (AOTAutograd's
    and ours: with duck sizing off they are two) or the int itself when it
    has none (0 and 1 are specialized: the guard then pins the value).
    ignore_static=False: the guards also pin every static size and stride
    and each storage offset, which the static key leaves out.  Other
    scalars are left to the static key."""
    from torch._dynamo.source import ConstantSource
    by_input = {}
    for sym, sources in shape_env.var_to_sources.items():
        for source in sources:
            if isinstance(source, ConstantSource) and source.source_name.startswith("sym_"):
                by_input.setdefault(int(source.source_name[4:]), []).append(sym)
    placeholders, guard_args = [], []
    for i, fake in enumerate(fakes):
        if i in dynamic.ints:
            syms = by_input.get(i)
            if syms:
                for sym in dict.fromkeys(syms):
                    placeholders.append(shape_env.create_symintnode(sym, hint=args[i]))
                    guard_args.append(i)
                continue
        elif not isinstance(fake, _torch().Tensor):
            continue
        placeholders.append(fake)
        guard_args.append(i)
    text = shape_env.produce_guards_expression(placeholders, ignore_static=False)
    code = True if text is None else _builtins.compile(text, "<framejit torch guards>", "eval")
    return code, tuple(guard_args)


def _storage_key(t):
    """What tensors sharing memory have in common: their storage's address
    (an empty storage's is 0: the tensor itself then)."""
    ptr = t.untyped_storage().data_ptr()
    return ptr if ptr else id(t)


class _Specialized:
    """The callable a torch backend's framejit backend returns (see the
    module's docstring): the graph's compiles, found for a call through a
    bounded dict of exact keys (the fast path) and otherwise by their
    static keys and guards; the structure of the outputs put back around
    the compiled function's flat tuple."""

    __slots__ = ("graph", "backend", "name", "tensor_args", "scalar_args", "compiled",
                 "entries", "dynamic", "structure", "eager", "warned", "torch")

    # exact keys remembered (the dict is cleared past it): a loop over
    # ever-new ints must not grow it without end
    MAX_KEYS = 256

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
        self.dynamic = _dynamic_of(placeholders)   # None: compile per exact key
        self.compiled = {}      # key() -> the callable serving it (a cache of 'entries')
        self.entries = []       # the _Compiled of each compile, oldest first
        self.structure = None   # the output's structure (_flatten_output)
        self.eager = None       # the GraphModule run uncompiled past the recompile limit
        self.warned = False

    def key(self, args):
        """What torch backends specialize on and one framejit graph may see
        vary: int values, tensor sizes and strides (dynamic dims), grad mode
        (with it, AOTAutograd compiles an autograd function; without, an
        inference graph), aliasing.  dtypes, devices and requires_grad are
        not in it: framejit's TENSOR_MATCH guards hold them fixed for all
        calls of a graph, and this key is computed on every call."""
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
            # (by storage, not by _base: t and t.detach(), two from_numpy of
            # one array share memory without being views of each other)
            same, based = {}, {}
            for i in self.tensor_args:
                a = args[i]
                key.append(same.setdefault(id(a), i))
                first = based.setdefault(_storage_key(a), i)
                key.append(first)
                if first != i or a._base is not None:
                    key.append(a.storage_offset())
        for i in self.scalar_args:
            a = args[i]
            key.append(type(a))
            key.append(a)
        return tuple(key)

    def static_key(self, args, key):
        """What a dynamic compile holds fixed and its guards do not check,
        for 'args' of exact key 'key': the key's grad mode, aliasing (views'
        storage offsets included) and scalar types, the values of scalars
        that are not int inputs (a float is baked into the compile), and
        each tensor's type, dtype, device, requires_grad and number of
        dims.  Sizes, strides and ints are the guards'."""
        tensors, scalars = len(self.tensor_args), len(key) - 2 * len(self.scalar_args)
        static = [key[0]]
        for i in self.tensor_args:
            a = args[i]
            static += (type(a), a.dtype, a.device, a.requires_grad, a.dim())
        static += key[1 + 2 * tensors:scalars]
        ints = self.dynamic.ints
        for j, i in enumerate(self.scalar_args):
            static.append(key[scalars + 2 * j])
            if i not in ints:
                static.append(key[scalars + 2 * j + 1])
        return tuple(static)

    def gm(self):
        """A new flat-output GraphModule of the graph (compile_fx takes
        ownership of the one it is given and may change it)."""
        gm = to_fx(self.graph)
        self.structure = _flatten_output(gm)
        return gm

    def find(self, args, key):
        """The callable for inputs whose exact key missed: the first
        compile that serves them (oldest first), else a new compile (see
        compile)."""
        static = self.static_key(args, key) if self.dynamic is not None else None
        for entry in self.entries:
            if entry.serves(key, static, args):
                return entry.fn
        return self.compile(args, key, static)

    def compile(self, args, key, static=None):
        """Compiles the graph for 'args' (exact key 'key', static key
        'static' when the graph is dynamic), records the compile in
        self.entries and returns the backend's callable.  Past the recompile
        limit, and for inputs fake tensors cannot run the graph on, returns
        the uncompiled GraphModule instead (recording nothing)."""
        if len(self.entries) >= config.recompile_limit:
            if not self.warned:
                self.warned = True
                warnings.warn(
                    f"framejit: torch backend {self.name!r} compiled one graph for "
                    f"{len(self.entries)} different int values or tensor sizes "
                    f"(framejit.config.recompile_limit); others run the FX graph uncompiled",
                    RuntimeWarning, stacklevel=4)
            if self.eager is None:
                self.eager = self.gm()
            return self.eager
        dynamic = self.dynamic
        if dynamic is not None and static is None:
            static = self.static_key(args, key)
        if dynamic is not None and len(self.tensor_args) > 1:
            dynamic = self._unaliased(args)
        gm = self.gm()
        with _tracing_context(self.torch, args, dynamic) as context:
            if context is None:
                dynamic = None
            if dynamic is not None:
                mode, fakes = context
                try:
                    _fake_example_values(gm, mode, fakes)
                except Exception:
                    # the graph does not run on fakes of these inputs: their
                    # sizes do not fit its ops (two dynamic dims that differ
                    # meeting in a broadcast) or fake tensors cannot run an
                    # op.  The uncompiled graph serves them exactly: it
                    # raises torch's own error where eager torch raises.
                    return self.gm()
            try:
                fn = self.backend(gm, list(args))
            except Exception:
                if dynamic is None:
                    raise
                fn = None
            if fn is None:
                # the backend failed on the symbolic graph (inductor on an int
                # input specialized to 0 beside a size input: KeyError in its
                # graph copy): compile for these exact inputs, statically, as
                # before symbolic sizes
                with _tracing_context(self.torch, args):
                    fn = self.backend(self.gm(), list(args))
                dynamic = None
            if not callable(fn):
                raise TypeError(f"torch backend {self.name!r} returned {type(fn).__name__}; "
                                f"expected a callable")
            entry = None
            if dynamic is not None:
                try:
                    guards, guard_args = _guard_code(mode.shape_env, fakes, dynamic, args)
                    entry = _Compiled(fn, key, static, guards, guard_args)
                except Exception:
                    pass   # no guards to check: the compile serves its own exact key
        self.entries.append(entry or _Compiled(fn, key))
        return fn

    def _unaliased(self, args):
        """self.dynamic without the dynamic dims of inputs that alias another
        input (one tensor twice, views of one base, tensors sharing a
        storage): their fakes are static,
        so the guards pin their sizes and strides, and with the storage
        offsets in the static key AOTAutograd's aliasing analysis (which
        inputs overlap) holds for every call the compile serves."""
        bases = {}
        for i in self.tensor_args:
            bases.setdefault(_storage_key(args[i]), []).append(i)
        aliased = {i for group in bases.values() if len(group) > 1 for i in group}
        if not aliased:
            return self.dynamic
        dims = {i: (() if i in aliased else d) for i, d in self.dynamic.dims.items()}
        return _Dynamic(dims, self.dynamic.ints)

    def __call__(self, *args):
        key = self.key(args)
        fn = self.compiled.get(key)
        if fn is None:
            # a compile at call time has no frame of its own for the C
            # core to name (it wraps only the first compile's errors)
            try:
                fn = self.find(args, key)
            except Exception as e:
                from .exc import BackendCompilerFailed
                raise BackendCompilerFailed(
                    f"torch backend {self.name!r} failed compiling a graph again for new int "
                    f"values or tensor sizes: {type(e).__name__}: {e}") from e
            if len(self.compiled) >= self.MAX_KEYS:
                self.compiled.clear()
            self.compiled[key] = fn
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
        key = run.key(example_inputs)
        run.compiled[key] = run.compile(example_inputs, key)
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
