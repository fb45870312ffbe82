/*
** torchlib.c: torch as framejit's second array library.  See torchlib.h.
*/
#include "torchlib.h"
#include "torch_infer.h"
#include "fj_numpy.h"
#include "guard_values.h"

#include <stddef.h>
#include <string.h>

/* Strong references taken once torch is imported (kept for the process:
   torch cannot be unloaded). */
static PyObject *torch_mod = NULL;      /* the torch module */
static PyObject *torch_c = NULL;        /* torch._C */
static PyTypeObject *tensor_base = NULL;/* torch._C.TensorBase */
static PyObject *tensor_type = NULL;    /* torch.Tensor */
static PyObject *param_type = NULL;     /* torch.nn.Parameter */
static PyTypeObject *module_type = NULL; /* torch.nn.Module */
static PyObject *sequential_type = NULL, *modulelist_type = NULL;
static PyObject *module_mod = NULL;     /* torch.nn.modules.module (its global hook dicts) */
static PyObject *memfmt_type = NULL; /* torch.memory_format */
static PyObject *size_type = NULL, *dtype_type = NULL, *device_type = NULL, *layout_type = NULL;
static PyObject *cpu_device = NULL, *meta_device = NULL;
static PyObject *empty_strided = NULL;
static PyObject *torch_builtins = NULL;     /* dict id -> None: torch's own builtin functions in
                                               its namespace (torch.sin: static methods of
                                               _VariableFunctions, with no __self__) */
static PyObject *c_modules[6];              /* torch._C._nn, _special, _linalg, _fft, _nested, _sparse */
static int (*state_reader)(uint64_t *) = NULL;

/* sys.modules[name] when it is a module whose import has finished (its
   spec's _initializing read from the spec's __dict__, running no code). */
static PyObject *finished_module(PyObject *modules, const char *name)
{
    PyObject *m = PyDict_GetItemString(modules, name);
    if (m == NULL || !PyModule_CheckExact(m))
        return NULL;
    PyObject *spec = PyDict_GetItemString(PyModule_GetDict(m), "__spec__");
    PyObject *sd = spec && spec != Py_None ? PyObject_GenericGetDict(spec, NULL) : NULL;
    if (sd == NULL && PyErr_Occurred())
        PyErr_Clear();
    int busy = sd != NULL && PyDict_GetItemString(sd, "_initializing") == Py_True;
    Py_XDECREF(sd);
    return busy ? NULL : m;
}

/* A name from a module's dict, running no code: borrowed or NULL. */
static PyObject *mod_get(PyObject *m, const char *name)
{
    return m ? PyDict_GetItemString(PyModule_GetDict(m), name) : NULL;
}

static int load_types(PyObject *modules)
{
    PyObject *torch = finished_module(modules, "torch");
    PyObject *c = torch ? PyDict_GetItemString(modules, "torch._C") : NULL;
    PyObject *nnp = torch ? finished_module(modules, "torch.nn.parameter") : NULL;
    PyObject *nnm = torch ? finished_module(modules, "torch.nn.modules.module") : NULL;
    PyObject *nnc = torch ? finished_module(modules, "torch.nn.modules.container") : NULL;
    if (c == NULL || nnp == NULL || nnm == NULL || nnc == NULL || !PyModule_Check(c))
        return 0;
    PyObject *mt = mod_get(nnm, "Module"), *seq = mod_get(nnc, "Sequential"), *ml = mod_get(nnc, "ModuleList");
    if (mt == NULL || seq == NULL || ml == NULL || !PyType_Check(mt))
        return 0;
    PyObject *tb = mod_get(c, "TensorBase"), *t = mod_get(torch, "Tensor"), *p = mod_get(nnp, "Parameter");
    PyObject *sz = mod_get(torch, "Size"), *dt = mod_get(torch, "dtype"), *dv = mod_get(torch, "device");
    PyObject *ly = mod_get(torch, "layout"), *es = mod_get(torch, "empty_strided");
    PyObject *sin = mod_get(torch, "sin");
    if (!tb || !t || !p || !sz || !dt || !dv || !ly || !es || !sin || !PyType_Check(tb) || !PyType_Check(t) ||
        !PyType_Check(p) || !PyCFunction_Check(sin))
        return 0;
    PyObject *cpu = PyObject_CallFunction(dv, "s", "cpu");
    PyObject *meta = cpu ? PyObject_CallFunction(dv, "s", "meta") : NULL;
    if (meta == NULL) {
        PyErr_Clear();
        Py_XDECREF(cpu);
        return 0;
    }
    static const char *cmods[6] = {"torch._C._nn", "torch._C._special", "torch._C._linalg",
                                   "torch._C._fft", "torch._C._nested", "torch._C._sparse"};
    for (int i = 0; i < 6; i++)
        c_modules[i] = Py_XNewRef(PyDict_GetItemString(modules, cmods[i]));
    PyObject *ids = PyDict_New(), *k, *v;
    Py_ssize_t pos = 0;
    while (ids != NULL && PyDict_Next(PyModule_GetDict(torch), &pos, &k, &v)) {
        if (!PyCFunction_Check(v) || (((PyCFunctionObject *)v)->m_self != NULL &&
                                      !PyType_Check(((PyCFunctionObject *)v)->m_self)))
            continue;
        PyObject *id = PyLong_FromVoidPtr(v);
        if (id == NULL || PyDict_SetItem(ids, id, Py_None) < 0)
            Py_CLEAR(ids);
        Py_XDECREF(id);
    }
    if (ids == NULL) {
        PyErr_Clear();
        Py_DECREF(cpu);
        Py_DECREF(meta);
        return 0;
    }
    torch_builtins = ids;
    torch_mod = Py_NewRef(torch);
    torch_c = Py_NewRef(c);
    module_type = (PyTypeObject *)Py_NewRef(mt);
    sequential_type = Py_NewRef(seq);
    modulelist_type = Py_NewRef(ml);
    module_mod = Py_NewRef(nnm);
    tensor_base = (PyTypeObject *)Py_NewRef(tb);
    tensor_type = Py_NewRef(t);
    param_type = Py_NewRef(p);
    size_type = Py_NewRef(sz);
    dtype_type = Py_NewRef(dt);
    device_type = Py_NewRef(dv);
    layout_type = Py_NewRef(ly);
    empty_strided = Py_NewRef(es);
    PyObject *cl = mod_get(torch, "channels_last");
    memfmt_type = cl != NULL ? Py_NewRef((PyObject *)Py_TYPE(cl)) : NULL;
    cpu_device = cpu;
    meta_device = meta;
    return 1;
}

int fj_torch_ready(void)
{
    static uint64_t modules_seen = 0;
    if (tensor_base != NULL)
        return 1;
    PyObject *modules = PyImport_GetModuleDict();
    if (modules == NULL || FJ_DICT_VERSION(modules) == modules_seen)
        return 0;
    modules_seen = FJ_DICT_VERSION(modules);
    PyObject *et, *ev, *tb;
    PyErr_Fetch(&et, &ev, &tb);
    /* graphs keep NumPy's metadata types beside torch's: both must be there */
    int ok = fj_numpy_try() && load_types(modules);
    PyErr_Restore(et, ev, tb);
    return ok;
}

int fj_torch_is_tensor(PyObject *o)
{
    return tensor_base != NULL && PyObject_TypeCheck(o, tensor_base);
}

int fj_torch_is_plain_tensor(PyObject *o)
{
    return tensor_base != NULL &&
           ((PyObject *)Py_TYPE(o) == tensor_type || (PyObject *)Py_TYPE(o) == param_type);
}

PyObject *fj_torch_size_type(void)
{
    return tensor_base != NULL ? size_type : NULL;
}

int fj_torch_is_value_type(PyObject *tp)
{
    /* torch.Size(...) and torch.device(...) of constants make immutable values */
    return tensor_base != NULL && (tp == size_type || tp == device_type);
}

PyObject *fj_torch_vf_attr(PyObject *mod, PyObject *name)
{
    /* torch._VF forwards every attribute to torch._C._VariableFunctions
       (its __getattr__): the class's own static methods, read as a type's */
    if (tensor_base == NULL || !PyModule_Check(mod))
        return NULL;
    PyObject *modules = PyImport_GetModuleDict();
    if (modules == NULL || PyDict_GetItemString(modules, "torch._VF") != mod)
        return NULL;
    PyObject *vf = mod_get(torch_c, "_VariableFunctions"), *v = NULL;
    if (vf != NULL && !PyType_Check(vf))
        vf = (PyObject *)Py_TYPE(vf); /* an instance of _VariableFunctionsClass */
    if (vf == NULL || fj_safe_getattr(vf, name, &v) != 1) {
        PyErr_Clear();
        return NULL;
    }
    return v;
}

int fj_torch_is_parameter(PyObject *o)
{
    return param_type != NULL && PyObject_TypeCheck(o, (PyTypeObject *)param_type);
}

int fj_torch_is_value(PyObject *o)
{
    if (tensor_base == NULL)
        return 0;
    PyObject *tp = (PyObject *)Py_TYPE(o);
    if (tp == size_type) {
        for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(o); i++)
            if (!PyLong_CheckExact(PyTuple_GET_ITEM(o, i)))
                return 0; /* a Size of symbolic ints */
        return 1;
    }
    return tp == dtype_type || tp == device_type || tp == layout_type || (memfmt_type && tp == memfmt_type);
}

int fj_torch_is_module(PyObject *o)
{
    return module_type != NULL && PyObject_TypeCheck(o, module_type);
}

int fj_torch_module_setattr_is_torchs(PyTypeObject *tp)
{
    static PyObject *setattr_name = NULL;
    if (module_type == NULL)
        return 0;
    if (setattr_name == NULL && (setattr_name = PyUnicode_InternFromString("__setattr__")) == NULL) {
        PyErr_Clear();
        return 0;
    }
    PyObject *mine = _PyType_Lookup(module_type, setattr_name);
    return mine != NULL && _PyType_Lookup(tp, setattr_name) == mine;
}

int fj_torch_module_container(PyObject *o)
{
    PyObject *tp = (PyObject *)Py_TYPE(o);
    return module_type == NULL ? 0 : tp == sequential_type ? FJ_TORCH_SEQUENTIAL
                                   : tp == modulelist_type ? FJ_TORCH_MODULELIST
                                                           : 0;
}

const char *fj_torch_global_hooks(void)
{
    static const char *const names[] = {"_global_forward_hooks", "_global_forward_pre_hooks",
                                        "_global_backward_hooks", "_global_backward_pre_hooks",
                                        "_global_forward_hooks_always_called",
                                        "_global_forward_hooks_with_kwargs", "_global_buffer_registration_hooks",
                                        "_global_module_registration_hooks",
                                        "_global_parameter_registration_hooks", NULL};
    for (int i = 0; names[i] != NULL; i++) {
        PyObject *d = mod_get(module_mod, names[i]);
        if (d != NULL && PyDict_Check(d) && PyDict_GET_SIZE(d) > 0)
            return names[i];
    }
    return NULL;
}

int fj_torch_is_singleton(PyObject *o)
{
    return tensor_base != NULL && ((PyObject *)Py_TYPE(o) == dtype_type || (PyObject *)Py_TYPE(o) == layout_type ||
                                   (memfmt_type != NULL && (PyObject *)Py_TYPE(o) == memfmt_type));
}

PyObject *fj_torch_tensor_type(void)
{
    return tensor_type;
}

PyObject *fj_torch_cpu_device(void)
{
    return cpu_device;
}

PyObject *fj_torch_meta_device(void)
{
    return meta_device;
}

PyObject *fj_torch_fake(PyObject *t, const char **why)
{
    *why = NULL;
    PyObject *fast = fj_torch_fast_fake(t);
    if (fast != NULL || PyErr_Occurred())
        return fast;
    PyObject *dev = PyObject_GetAttrString(t, "device");
    if (dev == NULL)
        return NULL;
    int cpu = PyObject_RichCompareBool(dev, cpu_device, Py_EQ);
    Py_DECREF(dev);
    if (cpu <= 0) {
        if (cpu == 0)
            *why = "only tensors on the CPU are captured";
        return NULL;
    }
    PyObject *size = PyObject_CallMethod(t, "size", NULL);
    PyObject *stride = size ? PyObject_CallMethod(t, "stride", NULL) : NULL;
    PyObject *dtype = stride ? PyObject_GetAttrString(t, "dtype") : NULL;
    PyObject *rg = dtype ? PyObject_GetAttrString(t, "requires_grad") : NULL;
    PyObject *args = rg ? PyTuple_Pack(2, size, stride) : NULL;
    PyObject *kw = args ? Py_BuildValue("{s:O,s:O,s:O}", "dtype", dtype, "device", meta_device,
                                        "requires_grad", rg)
                        : NULL;
    PyObject *fake = kw ? PyObject_Call(empty_strided, args, kw) : NULL;
    if (fake != NULL) {
        /* a lazily conjugated or negated tensor (x.conj()) carries the bit its
           dispatch keys show, which TENSOR_MATCH pins: its fake carries it too */
        PyObject *conj = PyObject_CallMethod(t, "is_conj", NULL);
        PyObject *neg = conj ? PyObject_CallMethod(t, "is_neg", NULL) : NULL;
        if (neg == NULL)
            Py_CLEAR(fake);
        else {
            if (conj == Py_True)
                Py_SETREF(fake, PyObject_CallMethod(fake, "conj", NULL));
            if (fake != NULL && neg == Py_True)
                Py_SETREF(fake, PyObject_CallMethod(fake, "_neg_view", NULL));
        }
        Py_XDECREF(conj);
        Py_XDECREF(neg);
    }
    if (fake != NULL && rg == Py_True) {
        /* an intermediate result (not a leaf) takes in-place ops a leaf that
           requires grad refuses: its fake must not be a leaf either */
        PyObject *leaf = PyObject_GetAttrString(t, "is_leaf");
        if (leaf == NULL)
            Py_CLEAR(fake);
        else if (leaf == Py_False)
            Py_SETREF(fake, fj_torch_non_leaf(fake));
        Py_XDECREF(leaf);
    }
    Py_XDECREF(size);
    Py_XDECREF(stride);
    Py_XDECREF(dtype);
    Py_XDECREF(rg);
    Py_XDECREF(args);
    Py_XDECREF(kw);
    return fake;
}

/* The ints of the tuple-like 'seq' into out[0..n); n into *nd.  0 or -1. */
static int read_ints(PyObject *seq, int64_t *out, int32_t *nd)
{
    PyObject *t = PySequence_Tuple(seq);
    if (t == NULL)
        return -1;
    Py_ssize_t n = PyTuple_GET_SIZE(t);
    if (n > FJ_TENSOR_MAX_DIMS) {
        Py_DECREF(t);
        PyErr_SetString(PyExc_ValueError, "framejit: a tensor with too many dimensions");
        return -1;
    }
    for (Py_ssize_t i = 0; i < n; i++) {
        out[i] = PyLong_AsLongLong(PyTuple_GET_ITEM(t, i));
        if (out[i] == -1 && PyErr_Occurred()) {
            Py_DECREF(t);
            return -1;
        }
    }
    *nd = (int32_t)n;
    Py_DECREF(t);
    return 0;
}

int fj_torch_meta_read(PyObject *t, fj_TensorMeta *m)
{
    PyObject *dtype = NULL;
    int r = fj_tensor_meta(t, m);
    if (r == 0) {
        r = fj_torch_meta_slow(t, m, &dtype);
        Py_XDECREF(dtype);
    }
    return r;
}

int fj_torch_meta_slow(PyObject *t, fj_TensorMeta *m, PyObject **dtype)
{
    *dtype = NULL;
    memset(m, 0, offsetof(fj_TensorMeta, sizes));
    m->dtype = -1;
    PyObject *size = PyObject_CallMethod(t, "size", NULL);
    PyObject *stride = size ? PyObject_CallMethod(t, "stride", NULL) : NULL;
    PyObject *dev = stride ? PyObject_GetAttrString(t, "device") : NULL;
    PyObject *rg = dev ? PyObject_GetAttrString(t, "requires_grad") : NULL;
    PyObject *off = rg ? PyObject_CallMethod(t, "storage_offset", NULL) : NULL;
    PyObject *keys = NULL, *raw = NULL;
    PyObject *dk = off ? mod_get(torch_c, "_dispatch_keys") : NULL;
    if (off != NULL && dk == NULL)
        PyErr_SetString(PyExc_RuntimeError, "framejit: torch._C._dispatch_keys is missing");
    keys = dk ? PyObject_CallOneArg(dk, t) : NULL;
    raw = keys ? PyObject_CallMethod(keys, "raw_repr", NULL) : NULL;
    int32_t nd2 = 0;
    int ok = raw != NULL && read_ints(size, m->sizes, &m->ndim) == 0 &&
             read_ints(stride, m->strides, &nd2) == 0;
    if (ok) {
        int cpu = PyObject_RichCompareBool(dev, cpu_device, Py_EQ);
        m->device_type = cpu > 0 ? FJ_TORCH_CPU : -1;
        m->device_index = -1;
        m->requires_grad = PyObject_IsTrue(rg) > 0;
        m->storage_offset = PyLong_AsLongLong(off);
        m->dispatch_keys = PyLong_AsUnsignedLongLongMask(raw);
        ok = cpu >= 0 && !PyErr_Occurred() && (*dtype = PyObject_GetAttrString(t, "dtype")) != NULL;
    }
    Py_XDECREF(size);
    Py_XDECREF(stride);
    Py_XDECREF(dev);
    Py_XDECREF(rg);
    Py_XDECREF(off);
    Py_XDECREF(keys);
    Py_XDECREF(raw);
    return ok ? 1 : -1;
}

PyObject *fj_torch_non_leaf(PyObject *fake)
{
    if (fake == NULL)
        return NULL;
    /* clone keeps the strides of a dense tensor; an overlapping one (an
       expand's zero strides) comes back contiguous: then a view stands in */
    PyObject *c = PyObject_CallMethod(fake, "clone", NULL);
    PyObject *s1 = c ? PyObject_CallMethod(c, "stride", NULL) : NULL;
    PyObject *s2 = s1 ? PyObject_CallMethod(fake, "stride", NULL) : NULL;
    int same = s2 ? PyObject_RichCompareBool(s1, s2, Py_EQ) : -1;
    Py_XDECREF(s1);
    Py_XDECREF(s2);
    if (same == 0)
        Py_SETREF(c, PyObject_CallMethod(fake, "view_as", "O", fake));
    else if (same < 0)
        Py_CLEAR(c);
    return c;
}

PyObject *fj_torch_dtype_text(PyObject *dtype)
{
    /* str(torch.float32) is "torch.float32": torch's own C code (THPDtype_repr) */
    return PyObject_Repr(dtype);
}

void fj_torch_set_state_reader(int (*fn)(uint64_t *))
{
    state_reader = fn;
}

int fj_torch_state_reader_ready(void)
{
    return state_reader != NULL;
}

/* torch.<name>(*args) of the torch module (new reference). */
static PyObject *torch_call(const char *name, const char *arg)
{
    PyObject *fn = mod_get(torch_mod, name);
    if (fn == NULL) {
        PyErr_Format(PyExc_AttributeError, "framejit: torch.%s is missing", name);
        return NULL;
    }
    return arg ? PyObject_CallFunction(fn, "s", arg) : PyObject_CallNoArgs(fn);
}

int fj_torch_global_state(int use_reader, int *fast, uint64_t *bits, PyObject **tuple)
{
    *tuple = NULL;
    if (state_reader != NULL && use_reader) {
        *fast = 1;
        if (state_reader(bits) < 0) {
            PyErr_SetString(PyExc_RuntimeError, "framejit: the torch global-state reader failed");
            return -1;
        }
        return 0;
    }
    *fast = 0;
    if (torch_mod == NULL) {
        PyErr_SetString(PyExc_RuntimeError, "framejit: torch is not imported");
        return -1;
    }
    PyObject *v[6] = {torch_call("is_grad_enabled", NULL), torch_call("is_inference_mode_enabled", NULL),
                      torch_call("is_autocast_enabled", "cpu"), torch_call("get_autocast_dtype", "cpu"),
                      torch_call("get_default_dtype", NULL),
                      torch_call("are_deterministic_algorithms_enabled", NULL)};
    int ok = 1;
    for (int i = 0; i < 6; i++)
        ok &= v[i] != NULL;
    if (ok)
        *tuple = PyTuple_Pack(6, v[0], v[1], v[2], v[3], v[4], v[5]);
    for (int i = 0; i < 6; i++)
        Py_XDECREF(v[i]);
    return *tuple == NULL ? -1 : 0;
}

/* Names of torch's namespaces that change or read the process's state:
   never graph operations, never folded. */
static const char *const stateful_names[] = {
    "manual_seed", "seed", "initial_seed", "get_rng_state", "set_rng_state", "set_grad_enabled",
    "is_grad_enabled", "set_default_dtype", "get_default_dtype", "set_default_device",
    "get_default_device", "set_default_tensor_type", "use_deterministic_algorithms",
    "are_deterministic_algorithms_enabled", "set_num_threads", "get_num_threads",
    "set_num_interop_threads", "save", "load", "set_printoptions", "compile", "from_numpy",
    "frombuffer", "from_file", "set_flush_denormal", "is_inference_mode_enabled",
    "set_anomaly_enabled", "is_anomaly_enabled", "set_warn_always", "is_warn_always_enabled",
    "empty_cache", "synchronize", "is_autocast_enabled", "set_autocast_enabled",
    "get_autocast_dtype", "set_autocast_dtype", "is_storage",
    "typename", "vmap", "cond", "while_loop", "export", "jit", "autograd", "library",
    NULL};

/* torch functions whose result is metadata TENSOR_MATCH pins (constants). */
static const char *const meta_functions[] = {"numel", "is_floating_point", "is_complex", "is_tensor",
                                             "is_nonzero_size", NULL};

/* Readers of what GLOBAL_STATE pins. */
static const char *const state_readers[] = {
    "is_grad_enabled", "is_inference_mode_enabled", "is_autocast_enabled", "is_autocast_cpu_enabled",
    "get_autocast_dtype", "get_autocast_cpu_dtype", "get_default_dtype",
    "are_deterministic_algorithms_enabled", "is_deterministic_algorithms_warn_only_enabled",
    "_is_any_autocast_enabled", NULL};

static int name_in(const char *name, const char *const *list)
{
    for (int i = 0; list[i] != NULL; i++)
        if (strcmp(name, list[i]) == 0)
            return 1;
    return 0;
}

/* __name__ of a builtin or Python function as UTF-8 (borrowed storage), or NULL. */
static const char *callable_name(PyObject *fn)
{
    if (PyCFunction_Check(fn))
        return ((PyCFunctionObject *)fn)->m_ml->ml_name;
    if (PyFunction_Check(fn)) {
        PyObject *n = ((PyFunctionObject *)fn)->func_name;
        return n && PyUnicode_Check(n) ? PyUnicode_AsUTF8(n) : NULL;
    }
    if (Py_TYPE(fn) == &PyMethodDescr_Type)
        return ((PyMethodDescrObject *)fn)->d_method->ml_name;
    return NULL;
}

int fj_torch_callable_kind(PyObject *fn)
{
    if (tensor_base == NULL)
        return 0;
    const char *name = callable_name(fn);
    if (name == NULL)
        return 0;
    int torchs = 0;
    if (PyCFunction_Check(fn)) {
        PyObject *self = ((PyCFunctionObject *)fn)->m_self;
        if (name_in(name, state_readers) &&
            (self == torch_c || (self == NULL || PyType_Check(self))))
            return FJ_TORCH_STATE_READ;
        /* torch.overrides.has_torch_function*: False for the plain tensors a
           graph holds (TENSOR_MATCH pins their exact types) */
        if (self == torch_c && strncmp(name, "_has_torch_function", 19) == 0)
            return FJ_TORCH_META;
        for (int i = 0; !torchs && i < 6; i++)
            torchs = self != NULL && self == c_modules[i];
        if (!torchs) {
            PyObject *id = PyLong_FromVoidPtr(fn);
            torchs = id != NULL && PyDict_GetItemWithError(torch_builtins, id) != NULL;
            Py_XDECREF(id);
            PyErr_Clear();
        }
    }
    else if (PyFunction_Check(fn)) {
        PyObject *m = ((PyFunctionObject *)fn)->func_module;
        if (name_in(name, state_readers) && m != NULL && PyUnicode_Check(m) &&
            (PyUnicode_CompareWithASCIIString(m, "torch") == 0 ||
             PyUnicode_CompareWithASCIIString(m, "torch.autocast_mode") == 0 ||
             PyUnicode_CompareWithASCIIString(m, "torch.amp.autocast_mode") == 0))
            return FJ_TORCH_STATE_READ;
        if (m == NULL || !PyUnicode_Check(m))
            return 0;
        const char *mod = PyUnicode_AsUTF8(m);
        if (mod == NULL) {
            PyErr_Clear();
            return 0;
        }
        if (strcmp(mod, "torch.random") == 0 || strcmp(mod, "torch.serialization") == 0 ||
            strncmp(mod, "torch.autograd", 14) == 0 || strncmp(mod, "torch.cuda", 10) == 0 ||
            strncmp(mod, "torch._dynamo", 13) == 0 || strncmp(mod, "torch.compiler", 14) == 0)
            return FJ_TORCH_STATEFUL;
        torchs = strcmp(mod, "torch.nn.functional") == 0 || strcmp(mod, "torch.functional") == 0;
        /* their private helpers (_canonical_mask, _none_or_dtype) are plain
           Python the tracer inlines */
        const char *fname = callable_name(fn);
        if (torchs && fname != NULL && fname[0] == '_')
            return 0;
        if (strcmp(mod, "torch._tensor") == 0) {
            /* a method of torch.Tensor written in Python (split, norm, __rsub__) */
            PyObject *n = ((PyFunctionObject *)fn)->func_name;
            return fj_torch_method_ok(n, NULL) ? FJ_TORCH_OP : FJ_TORCH_STATEFUL;
        }
    }
    else if (Py_TYPE(fn) == &PyMethodDescr_Type &&
             ((PyMethodDescrObject *)fn)->d_common.d_type == tensor_base) {
        PyObject *n = PyUnicode_FromString(name);
        int ok = n != NULL && fj_torch_method_ok(n, NULL);
        Py_XDECREF(n);
        PyErr_Clear();
        return ok ? FJ_TORCH_OP : FJ_TORCH_STATEFUL;
    }
    if (!torchs)
        return 0;
    if (name[0] == '_' || strncmp(name, "set_", 4) == 0 || name_in(name, stateful_names))
        return FJ_TORCH_STATEFUL;
    if (name_in(name, meta_functions))
        return FJ_TORCH_META;
    return FJ_TORCH_OP;
}

/* Tensor methods that are never graph operations, with the reason. */
static const struct {
    const char *name, *why;
} refused_methods[] = {
    {"item", "torch.Tensor.item() reads a value out of the tensor (data-dependent)"},
    {"tolist", "torch.Tensor.tolist() reads the tensor's values (data-dependent)"},
    {"numpy", "torch.Tensor.numpy() shares the tensor's memory with a NumPy array"},
    {"backward", "torch.Tensor.backward() runs autograd and writes .grad (a side effect)"},
    {"__bool__", "a tensor's truth value depends on its data (data-dependent control flow)"},
    {"__int__", "int() of a tensor reads its value (data-dependent)"},
    {"__float__", "float() of a tensor reads its value (data-dependent)"},
    {"__index__", "a tensor used as an index reads its value (data-dependent)"},
    {"__complex__", "complex() of a tensor reads its value (data-dependent)"},
    {"__iter__", "iterating over a tensor is not captured"},
    {"__array__", "a tensor converted to a NumPy array is not captured"},
    {"__setstate__", NULL}, {"__reduce_ex__", NULL}, {"__deepcopy__", NULL},
    {"data_ptr", "torch.Tensor.data_ptr() is an address"},
    {"storage", "a tensor's storage is not captured"},
    {"untyped_storage", "a tensor's storage is not captured"},
    {"register_hook", "tensor hooks are not captured"},
    {"register_post_accumulate_grad_hook", "tensor hooks are not captured"},
    {"retain_grad", "torch.Tensor.retain_grad() changes autograd state"},
    {"requires_grad_", "torch.Tensor.requires_grad_() changes the tensor's metadata"},
    {"detach_", "torch.Tensor.detach_() changes the tensor's metadata"},
    {"set_", "torch.Tensor.set_() replaces the tensor's storage"},
    {"t_", "torch.Tensor.t_() changes the tensor's metadata in place"},
    {"transpose_", "torch.Tensor.transpose_() changes the tensor's metadata in place"},
    {"swapdims_", "torch.Tensor.swapdims_() changes the tensor's metadata in place"},
    {"swapaxes_", "torch.Tensor.swapaxes_() changes the tensor's metadata in place"},
    {"squeeze_", "torch.Tensor.squeeze_() changes the tensor's metadata in place"},
    {"unsqueeze_", "torch.Tensor.unsqueeze_() changes the tensor's metadata in place"},
    {"as_strided_", "torch.Tensor.as_strided_() changes the tensor's metadata in place"},
    {"resize_", "torch.Tensor.resize_() changes the tensor's shape in place"},
    {"resize_as_", "torch.Tensor.resize_as_() changes the tensor's shape in place"},
    {"share_memory_", "torch.Tensor.share_memory_() moves storage"},
    {"pin_memory", "torch.Tensor.pin_memory() is not captured"},
    {"apply_", "torch.Tensor.apply_() runs a Python callable per element"},
    {"map_", "torch.Tensor.map_() runs a Python callable per element"},
    {"map2_", "torch.Tensor.map2_() runs a Python callable per element"},
    {"cuda", "device moves are not captured yet"},
    {"type", "torch.Tensor.type() is not captured"},
    {"get_device", NULL},
    {"nonzero", "torch.Tensor.nonzero() has a data-dependent shape"},
    {"unique", "torch.Tensor.unique() has a data-dependent shape"},
    {"masked_select", "torch.Tensor.masked_select() has a data-dependent shape"},
    {"record_stream", NULL}, {"is_shared", NULL}, {"is_pinned", NULL},
    {"__torch_function__", NULL}, {"__torch_dispatch__", NULL},
    {"_version", NULL},
    {NULL, NULL},
};

int fj_torch_method_ok(PyObject *name, const char **why)
{
    if (why)
        *why = NULL;
    if (!PyUnicode_Check(name))
        return 0;
    const char *s = PyUnicode_AsUTF8(name);
    if (s == NULL) {
        PyErr_Clear();
        return 0;
    }
    for (int i = 0; refused_methods[i].name != NULL; i++)
        if (strcmp(s, refused_methods[i].name) == 0) {
            if (why)
                *why = refused_methods[i].why;
            return 0;
        }
    /* private methods and dunders other than the operators' */
    if (s[0] == '_' && !(s[1] == '_' && strlen(s) > 4))
        return 0;
    return 1;
}

static const char *const meta_methods[] = {
    "size", "dim", "ndimension", "numel", "nelement", "stride", "is_contiguous", "is_floating_point",
    "is_complex", "element_size", "__len__", "is_signed", NULL};

int fj_torch_method_is_meta(PyObject *name)
{
    const char *s = PyUnicode_Check(name) ? PyUnicode_AsUTF8(name) : NULL;
    if (s == NULL) {
        PyErr_Clear();
        return 0;
    }
    return name_in(s, meta_methods);
}

int fj_torch_attr_kind(PyObject *name)
{
    static const char *const consts[] = {"shape", "dtype", "ndim", "requires_grad", "layout", "device",
                                         "is_cuda", "is_cpu", "is_meta", "is_sparse", "is_quantized",
                                         "is_mkldnn", "is_nested", "itemsize", "nbytes", NULL};
    static const char *const tensors[] = {"T", "mT", "H", "mH", "real", "imag", NULL};
    const char *s = PyUnicode_Check(name) ? PyUnicode_AsUTF8(name) : NULL;
    if (s == NULL) {
        PyErr_Clear();
        return 0;
    }
    return name_in(s, consts) ? 1 : name_in(s, tensors) ? 2 : 0;
}

/* _torch_state_install(address): the reader's fj_torch_global_state. */
static PyObject *state_install_py(PyObject *mod, PyObject *arg)
{
    void *p = PyLong_AsVoidPtr(arg);
    if (p == NULL) {
        if (!PyErr_Occurred())
            PyErr_SetString(PyExc_ValueError, "_torch_state_install: a NULL address");
        return NULL;
    }
    state_reader = (int (*)(uint64_t *))p;
    Py_RETURN_NONE;
}

/* _testing.torch_callable_kind(fn): fj_torch_callable_kind, for tests. */
static PyObject *callable_kind_py(PyObject *mod, PyObject *fn)
{
    (void)fj_torch_ready();
    return PyLong_FromLong(fj_torch_callable_kind(fn));
}

PyObject *fj_torch_meta_cache_clear(PyObject *mod, PyObject *unused); /* trace_torch.c */

static PyMethodDef testing_methods[] = {
    {"torch_meta_cache_clear", fj_torch_meta_cache_clear, METH_NOARGS,
     "torch_meta_cache_clear(): forget the trace's cached torch metadata"},
    {"torch_callable_kind", callable_kind_py, METH_O,
     "torch_callable_kind(fn): 1 a torch op, 2 stateful torch code, 0 not torch's"},
    {NULL},
};

static PyMethodDef methods[] = {
    {"_torch_state_install", state_install_py, METH_O,
     "_torch_state_install(address): the C reader of torch's global state"},
    {NULL},
};

int fj_torchlib_init(PyObject *module, PyObject *testing)
{
    return PyModule_AddFunctions(module, methods) < 0 ? -1 : PyModule_AddFunctions(testing, testing_methods);
}
