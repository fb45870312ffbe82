/*
** guards.c: guard trees, their fast and verbose checks, and their printer.
**
** Responsible for: the GuardManager / RootGuardManager types (a tree whose
** inner nodes are reached through accessors mirroring access paths and whose
** leaves are checks; each manager holds its fj_Source and reads its value
** with fj_source_fetch_step), building trees from C and Python, the hot check run
** by cache lookup (no allocation on the pass path: values are read straight
** from the frame's localsplus and dicts), the side-effect-free verbose check
** that names the first failing guard, fail-count reordering of accessors,
** skipping global subtrees of immutable values while the globals dict's
** version tag is unchanged, and the "GUARDS:" printer.
**
** Not responsible for: choosing guards (the tracer does), running them at the
** right time (evalframe.c / cache.c), or CPython layout details (compat.h).
**
** Soundness: a guard runs none of the program's code.  Leaves compare
** exact builtin values (None, bool, int, float, str, bytes, complex, tuples
** and sets of those) with C comparisons, everything else by identity; dict
** reads never call a key's __eq__ or __hash__ (fj_dict_lookup); a check that
** cannot be decided without the program's code fails, so the frame
** recompiles or runs as it is.  Leaves keep no program object alive: classes,
** modules, functions and other objects are held through weak references
** (a dead referent fails the leaf); only objects that take no weak reference
** (NumPy ufuncs, dtypes, scalars) and values the guard owns are strong.
**
** Attributes are read only when that runs no program code (fj_safe_getattr).
**
** Reentrancy: no program code runs, but a check may still free objects
** (a weak reference's callback, a gc callback).  Children and leaves live in
** arrays of pointers, loops re-read array and length on every step and every
** fetched value is a strong reference, so code that adds guards, or rebinds
** the values being checked, cannot make a check touch freed memory.
** Reordering only happens in the outermost check of a manager.
*/
#include "fj_array.h"
#include "fj_numpy.h"
#include "guard_values.h"
#include "guards.h"
#include "source.h"
#include "arraylib.h"
#include "torch_infer.h"
#include "torchlib.h"

#include <limits.h>
#include <stdarg.h>
#include <stdint.h>
#include <string.h>
#include <time.h>

/* Deeper trees are refused at build time (the check recurses). */
#define MAX_DEPTH 200

/* Leaf kinds; names in leaf_names, in the same order. */
enum {
    LEAF_TYPE_MATCH,      /* type(v) is obj */
    LEAF_ID_MATCH,        /* v is obj */
    LEAF_EQUALS_MATCH,    /* type(v) is type(obj) and v == obj */
    LEAF_NONE_MATCH,      /* v is None */
    LEAF_SEQUENCE_LENGTH, /* exact list/tuple, len(v) == n */
    LEAF_DICT_KEYS,       /* dict, keys in order match the tuple obj; aux: bytes of KEY_* per key */
    LEAF_DICT_VERSION,    /* dict, version tag == version */
    LEAF_TENSOR_MATCH,    /* ndarray: type obj, dtype aux, ndim n, shape, strides */
    LEAF_GLOBAL_STATE,    /* contextvar obj holds aux */
    LEAF_GLOBAL_ABSENT,   /* root only: name obj is not in the frame's globals (v) */
    LEAF_NO_ALIASING,     /* root only: the sources in tuple obj are distinct objects */
    LEAF_DIMS_EQUAL,      /* root only: arrays at sources obj[0], obj[1]: size of dim ival == of dim n */
    LEAF_TORCH_MATCH,     /* torch tensor: type obj/ref, metadata tm, dtype aux; ival 1 when
                             read with the C reader (tensor_meta.h), 0 through torch's methods */
    LEAF_RELATION,        /* root only: a relation over symbols (fj_guard_add_relation): the
                             symbols in obj, the program prog (nprog words), its expected truth n */
};
static const char *const leaf_names[] = {
    "TYPE_MATCH",   "ID_MATCH",     "EQUALS_MATCH", "NONE_MATCH",   "SEQUENCE_LENGTH",
    "DICT_KEYS",    "DICT_VERSION", "TENSOR_MATCH", "GLOBAL_STATE", "GLOBAL_ABSENT", "NO_ALIASING",
    "DIMS_EQUAL",   "TENSOR_MATCH", "RELATION",
};


/* DICT_KEYS: how the key at each position is matched (the bytes in aux). */
enum {
    KEY_VALUE = 'v', /* a value kind: fj_value_same */
    KEY_WEAK = 'w',  /* identity with the referent of the weak reference in obj */
    KEY_SAME = 'i',  /* identity with obj's item (an object that takes no weak reference) */
};

typedef struct {
    int kind;      /* LEAF_* */
    int eq_kind;   /* EQ_*, EQUALS_MATCH only */
    int immutable; /* passes again while the value's binding is unchanged */
    PyObject *obj;  /* strong or NULL, meaning per kind (see the enum) */
    PyObject *ref;  /* strong or NULL: a weak reference standing for obj (leaf_target) */
    PyObject *aux;  /* strong or NULL */
    PyObject *text; /* strong str: the printer's text without "KIND: " */
    Py_ssize_t n;
    uint64_t version;
    long long ival;
    double dval;
    npy_intp *shape;   /* PyMem, n entries; -1 marks a dynamic dim */
    npy_intp *strides; /* PyMem, n entries */
    int layout;        /* TENSOR_MATCH with dynamic dims: C/F-contiguity flags to match
                          instead of strides; -1 when strides are checked */
    fj_TensorMeta *tm;    /* TORCH_MATCH: the metadata to match (PyMem) */
    int torch_state;      /* GLOBAL_STATE: also torch's (torchlib.h): 1 packed in torch_bits
                             by the C reader, 2 the tuple torch_tuple; 0 NumPy's only */
    uint64_t torch_bits;
    PyObject *torch_tuple; /* strong or NULL */
    const void *dtype_id; /* TENSOR_MATCH: the builtin dtype singleton the array had
                             (NumPy keeps those for the process), compared by address
                             only, never dereferenced; NULL for other dtypes */
    long long *prog;      /* RELATION: (opcode, operand) pairs (PyMem), nprog words */
    Py_ssize_t nprog;
} Leaf;

typedef struct GuardManager {
    PyObject_HEAD
    int depth;            /* 0 for the root */
    int busy;             /* checks of this manager in progress */
    int skippable;        /* only immutable leaves, no accessors */
    int keys_pinned;      /* a DICT_KEYS leaf matching every key by value: item reads are safe */
    fj_Source *src;       /* strong: how the value is fetched from the parent's (or the
                             frame), and its text (MGR_TEXT); NULL for the root */
    Leaf **leaves;        /* PyMem; each Leaf PyMem, owned */
    Py_ssize_t nleaves, leaves_cap;
    struct GuardManager **children; /* PyMem; strong references */
    Py_ssize_t nchildren, children_cap;
    Py_ssize_t fail_count;
    uint64_t seen_version;      /* dict tag at the last pass of a skippable subtree */
    Py_ssize_t skipped_checks;  /* root: subtrees skipped by the dict tag */
} GuardManager;

PyTypeObject *fj_RootGuardManager_Type = NULL;
static PyTypeObject *GuardManager_Type = NULL; /* strong */
static PyObject *null_slot = NULL;             /* strong: framejit._C.NULL_SLOT */
static PyObject *root_text = NULL;             /* strong: "", the root's source text */

#define IS_MANAGER(o) PyObject_TypeCheck((o), GuardManager_Type)
#define IS_ROOT(m) ((m)->src == NULL)
/* The printed access path of manager 'm' (borrowed): e.g. "L['x'].shape". */
#define MGR_TEXT(m) ((m)->src != NULL ? (m)->src->text : root_text)

/* ---------------------------------------------------------------- leaves */

static void leaf_free(Leaf *lf)
{
    if (lf == NULL)
        return;
    Py_CLEAR(lf->obj);
    Py_CLEAR(lf->ref);
    Py_CLEAR(lf->aux);
    Py_CLEAR(lf->text);
    Py_CLEAR(lf->torch_tuple);
    PyMem_Free(lf->tm);
    PyMem_Free(lf->shape);
    PyMem_Free(lf->strides);
    PyMem_Free(lf->prog);
    PyMem_Free(lf);
}

/* A zeroed leaf of 'kind'.  PyMem, NULL on error. */
static Leaf *leaf_new(int kind)
{
    Leaf *lf = PyMem_Calloc(1, sizeof(Leaf));
    if (lf == NULL) {
        PyErr_NoMemory();
        return NULL;
    }
    lf->kind = kind;
    return lf;
}

/*
** Makes 'lf' stand for the program object 'o' without keeping it alive: a
** weak reference in lf->ref, or a strong lf->obj for static types (never
** freed) and objects that take no weak reference.  0, or -1 with an
** exception set.
*/
static int leaf_hold(Leaf *lf, PyObject *o)
{
    int is_static_type = PyType_Check(o) && !(((PyTypeObject *)o)->tp_flags & Py_TPFLAGS_HEAPTYPE);
    if (!is_static_type && PyType_SUPPORTS_WEAKREFS(Py_TYPE(o))) {
        lf->ref = PyWeakref_NewRef(o, NULL);
        return lf->ref == NULL ? -1 : 0;
    }
    lf->obj = Py_NewRef(o);
    return 0;
}

/* The object 'lf' stands for (see leaf_hold); borrowed.  NULL once it died. */
static inline PyObject *leaf_target(Leaf *lf)
{
    if (lf->obj != NULL)
        return lf->obj;
    PyObject *o = fj_weakref_object(lf->ref);
    return o == Py_None ? NULL : o;
}




/* The EQ_* kind of an EQUALS_MATCH value: a value kind, a set of them, a
** NumPy scalar, or EQ_NONE (refused: comparing it would run program code). */
static int eq_kind_of(PyObject *v)
{
    int k = fj_value_kind(v, 0);
    if (k != EQ_NONE)
        return k;
    if (PyAnySet_CheckExact(v)) {
        Py_ssize_t pos = 0;
        PyObject *item;
        Py_hash_t hash;
        while (_PySet_NextEntry(v, &pos, &item, &hash))
            if (fj_value_kind(item, 0) == EQ_NONE)
                return EQ_NONE;
        return EQ_SET;
    }
    if (fj_numpy_try() && PyArray_IsScalar(v, Generic)) /* no table: no NumPy scalar yet */
        return EQ_NUMPY;
    return EQ_NONE;
}


/*
** Equality of two objects of the same NumPy scalar type: floating and
** complex kinds by bit pattern (as fj_double_same), others by ==.  1, 0, -1.
*/
static int numpy_scalar_same(PyObject *e, PyObject *v)
{
    PyArray_Descr *d = PyArray_DescrFromScalar(e), *dv = PyArray_DescrFromScalar(v);
    if (d == NULL || dv == NULL) {
        Py_XDECREF(d);
        Py_XDECREF(dv);
        return -1;
    }
    int r;
    Py_ssize_t size = PyDataType_ELSIZE(d);
    if (!PyArray_EquivTypes(d, dv))
        r = 0; /* np.void of another layout: == would raise (NumPy test_indexing) */
    else if ((d->kind == 'f' || d->kind == 'c') && size <= 32) {
        char a[32], b[32];
        PyArray_ScalarAsCtype(e, a);
        PyArray_ScalarAsCtype(v, b);
        r = memcmp(a, b, (size_t)size) == 0;
    }
    else {
        r = PyObject_RichCompareBool(v, e, Py_EQ);
        if (r < 0) { /* a value the guard cannot compare is not the one it expects */
            PyErr_Clear();
            r = 0;
        }
    }
    Py_DECREF(d);
    Py_DECREF(dv);
    return r;
}


/*
** EQUALS_MATCH on a set: v is a set of the same exact type and size whose
** every item is a value kind matching (fj_value_same) an item of the expected set.
** lf->aux maps each expected item to itself, so the lookup hashes and
** compares only exact builtin values.  1, 0 or -1.
*/
static int set_same(Leaf *lf, PyObject *v)
{
    PyObject *e = lf->obj;
    if (Py_TYPE(v) != Py_TYPE(e) || PySet_GET_SIZE(v) != PySet_GET_SIZE(e))
        return 0;
    Py_ssize_t pos = 0;
    PyObject *item;
    Py_hash_t hash;
    while (_PySet_NextEntry(v, &pos, &item, &hash)) {
        if (fj_value_kind(item, 0) == EQ_NONE)
            return 0;
        PyObject *want = PyDict_GetItemWithError(lf->aux, item);
        if (want == NULL)
            return PyErr_Occurred() ? -1 : 0;
        int r = fj_value_same(want, item);
        if (r <= 0)
            return r;
    }
    return 1;
}

static int equals_check(Leaf *lf, PyObject *v)
{
    PyObject *e = lf->obj;
    if (v == e)
        return 1;
    switch (lf->eq_kind) {
    case EQ_INT: {
        if (Py_TYPE(v) != &PyLong_Type)
            return 0;
        long long small;
        if (fj_long_compact(v, &small))
            return small == lf->ival;
        int overflow = 0;
        long long x = PyLong_AsLongLongAndOverflow(v, &overflow);
        if (x == -1 && PyErr_Occurred())
            return -1;
        return !overflow && x == lf->ival;
    }
    case EQ_FLOAT:
        return Py_TYPE(v) == &PyFloat_Type && fj_double_same(PyFloat_AS_DOUBLE(v), lf->dval);
    case EQ_STR:
        return Py_TYPE(v) == &PyUnicode_Type && fj_unicode_eq(e, v);
    case EQ_IDENTITY:
        return 0;
    case EQ_BIGINT:
    case EQ_TUPLE:
    case EQ_VALUE:
        return fj_value_same(e, v);
    case EQ_SET:
        return set_same(lf, v);
    case EQ_NUMPY:
        return Py_TYPE(v) == Py_TYPE(e) && numpy_scalar_same(e, v);
    }
    PyErr_SetString(PyExc_SystemError, "framejit: bad EQUALS_MATCH kind");
    return -1;
}

/* DICT_KEYS: v is a dict whose keys, in order, match the KEY_* entries of
** the leaf.  No key's __eq__ or __hash__ runs.  1, 0 or -1. */
static int dict_keys_check(Leaf *lf, PyObject *v)
{
    if (!PyDict_Check(v))
        return 0;
    PyObject *keys = lf->obj;
    const char *modes = PyBytes_AS_STRING(lf->aux);
    Py_ssize_t n = PyTuple_GET_SIZE(keys);
    if (PyDict_GET_SIZE(v) != n)
        return 0;
    Py_ssize_t pos = 0, i = 0;
    PyObject *k, *val;
    while (PyDict_Next(v, &pos, &k, &val)) {
        if (i >= n)
            return 0; /* defensive: nothing that runs here can grow the dict */
        PyObject *e = PyTuple_GET_ITEM(keys, i);
        int r = modes[i] == KEY_VALUE ? fj_value_same(e, k)
                : modes[i] == KEY_WEAK ? k == fj_weakref_object(e) && k != Py_None
                                       : k == e;
        i++;
        if (r <= 0)
            return r;
    }
    return i == n;
}


/* Sets *reason (verbose checks) to "<src>: <what differed>". */
static void tensor_reason(PyObject **reason, PyObject *source, const char *fmt, ...)
{
    if (reason == NULL || *reason != NULL)
        return;
    va_list ap;
    va_start(ap, fmt);
    PyObject *what = PyUnicode_FromFormatV(fmt, ap);
    va_end(ap);
    if (what == NULL) {
        PyErr_Clear();
        return;
    }
    *reason = PyUnicode_FromFormat("%U: %U", source, what);
    if (*reason == NULL)
        PyErr_Clear();
    Py_DECREF(what);
}

/* 'reason' is NULL on the fast path. */
static int tensor_check(Leaf *lf, PyObject *v, PyObject *source, PyObject **reason)
{
    PyTypeObject *tp = (PyTypeObject *)leaf_target(lf);
    if (Py_TYPE(v) != tp) {
        tensor_reason(reason, source, "expected type %s, actual %s",
                      tp ? tp->tp_name : "(a class that died)", Py_TYPE(v)->tp_name);
        return 0;
    }
    PyArrayObject *a = (PyArrayObject *)v;
    PyArray_Descr *d = PyArray_DESCR(a), *want = (PyArray_Descr *)lf->aux;
    if ((const void *)d != lf->dtype_id && !PyArray_EquivTypes(d, want)) {
        tensor_reason(reason, source, "dtype mismatch. expected %S, actual %S", (PyObject *)want,
                      (PyObject *)d);
        return 0;
    }
    Py_ssize_t ndim = lf->n;
    if (PyArray_NDIM(a) != ndim) {
        tensor_reason(reason, source, "rank mismatch. expected %zd, actual %d", ndim,
                      PyArray_NDIM(a));
        return 0;
    }
    const npy_intp *shape = PyArray_DIMS(a), *strides = PyArray_STRIDES(a);
    if ((PyArray_ISWRITEABLE(a) != 0) != lf->ival) {
        tensor_reason(reason, source, "writeable flag differs (expected %s)",
                      lf->ival ? "writeable" : "read-only");
        return 0;
    }
    for (Py_ssize_t i = 0; i < ndim; i++) {
        if (lf->shape[i] >= 0 && shape[i] != lf->shape[i]) {
            tensor_reason(reason, source, "size mismatch at index %zd. expected %zd, actual %zd",
                          i, (Py_ssize_t)lf->shape[i], (Py_ssize_t)shape[i]);
            return 0;
        }
        if (lf->shape[i] < 0 && shape[i] < 2) {
            /* sizes 0 and 1 are specialized, never served by a dynamic dim */
            tensor_reason(reason, source, "size at index %zd is %zd; a dynamic dim needs >= 2", i,
                          (Py_ssize_t)shape[i]);
            return 0;
        }
    }
    if (lf->layout >= 0) {
        int flags = PyArray_FLAGS(a) & (NPY_ARRAY_C_CONTIGUOUS | NPY_ARRAY_F_CONTIGUOUS);
        if (flags != lf->layout) {
            tensor_reason(reason, source, "memory layout (contiguity) differs");
            return 0;
        }
        return 1;
    }
    for (Py_ssize_t i = 0; i < ndim; i++) {
        if (lf->shape[i] >= 0 && strides[i] != lf->strides[i]) {
            tensor_reason(reason, source,
                          "stride mismatch at index %zd. expected %zd, actual %zd", i,
                          (Py_ssize_t)lf->strides[i], (Py_ssize_t)strides[i]);
            return 0;
        }
    }
    return 1;
}

/*
** TENSOR_MATCH on a torch tensor.  Through the C reader (lf->ival): one
** read of the TensorImpl and integer compares.  Without it: torch's methods
** (size(), stride(), ...), the dtype by identity (torch's dtypes are
** singletons).  'reason' as for tensor_check.
*/
/*
** A torch leaf with dynamic dims (lf->layout 1): want->sizes[i] is -1 for
** a dynamic dim, which matches any size >= 2 (0 and 1 stay specialized);
** the other sizes match exactly, and the strides must be the contiguous
** ones of m's sizes (they follow the dynamic sizes).  -1 when 'm' matches,
** else the first failing dim (*what 1: a dynamic size under 2, 2: a fixed
** size) or m's ndim (*what 3: the strides).
*/
static int torch_dims_match(const fj_TensorMeta *want, const fj_TensorMeta *m, int *what)
{
    for (int i = 0; i < m->ndim; i++)
        if (want->sizes[i] < 0 ? m->sizes[i] < 2 : m->sizes[i] != want->sizes[i]) {
            if (what != NULL)
                *what = want->sizes[i] < 0 ? 1 : 2;
            return i;
        }
    if (fj_tensor_meta_contiguous(m))
        return -1;
    if (what != NULL)
        *what = 3;
    return m->ndim;
}

static int torch_check(Leaf *lf, PyObject *v, PyObject *source, PyObject **reason)
{
    PyTypeObject *tp = (PyTypeObject *)leaf_target(lf);
    if (Py_TYPE(v) != tp) {
        tensor_reason(reason, source, "expected type %s, actual %s",
                      tp ? tp->tp_name : "(a class that died)", Py_TYPE(v)->tp_name);
        return 0;
    }
    const fj_TensorMeta *want = lf->tm;
    fj_TensorMeta m;
    PyObject *dtype = NULL;
    int r;
    if (lf->ival && reason == NULL) {
        r = fj_tensor_meta(v, &m);
        if (r <= 0)
            return r;
        if (m.dtype != want->dtype || m.device_type != want->device_type ||
            m.device_index != want->device_index || m.requires_grad != want->requires_grad ||
            m.ndim != want->ndim || m.dispatch_keys != want->dispatch_keys)
            return 0;
        if (lf->layout > 0)
            return torch_dims_match(want, &m, NULL) < 0;
        size_t nb = sizeof(int64_t) * (size_t)m.ndim;
        return memcmp(m.sizes, want->sizes, nb) == 0 && memcmp(m.strides, want->strides, nb) == 0;
    }
    /* the slow path, and every failure message */
    if ((r = fj_torch_meta_slow(v, &m, &dtype)) < 0) {
        if (reason == NULL)
            return -1;
        PyErr_Clear();
        tensor_reason(reason, source, "its metadata could not be read");
        return 0;
    }
    int ok = 0;
    if (dtype != lf->aux) {
        PyObject *a = fj_torch_dtype_text(lf->aux), *b = a ? fj_torch_dtype_text(dtype) : NULL;
        if (b != NULL)
            tensor_reason(reason, source, "dtype mismatch. expected %U, actual %U", a, b);
        Py_XDECREF(a);
        Py_XDECREF(b);
        PyErr_Clear();
    }
    else if (m.device_type != FJ_TORCH_CPU)
        tensor_reason(reason, source, "device mismatch. expected cpu");
    else if (m.requires_grad != want->requires_grad)
        tensor_reason(reason, source, "requires_grad mismatch. expected %s, actual %s",
                      want->requires_grad ? "True" : "False", m.requires_grad ? "True" : "False");
    else if (m.ndim != want->ndim)
        tensor_reason(reason, source, "rank mismatch. expected %d, actual %d", (int)want->ndim,
                      (int)m.ndim);
    else if (lf->layout > 0) {
        int what = 0, d = torch_dims_match(want, &m, &what);
        ok = d < 0;
        if (!ok && what == 1)
            tensor_reason(reason, source, "size mismatch at index %d. expected a size >= 2, actual %lld", d,
                          (long long)m.sizes[d]);
        else if (!ok && what == 2)
            tensor_reason(reason, source, "size mismatch at index %d. expected %lld, actual %lld", d,
                          (long long)want->sizes[d], (long long)m.sizes[d]);
        else if (!ok)
            tensor_reason(reason, source, "not contiguous (a tensor with dynamic dims must be)");
        if (ok && m.dispatch_keys != want->dispatch_keys) {
            tensor_reason(reason, source, "dispatch key set mismatch");
            ok = 0;
        }
    }
    else {
        ok = 1;
        for (int i = 0; ok && i < m.ndim; i++)
            if (m.sizes[i] != want->sizes[i]) {
                tensor_reason(reason, source, "size mismatch at index %d. expected %lld, actual %lld", i,
                              (long long)want->sizes[i], (long long)m.sizes[i]);
                ok = 0;
            }
        for (int i = 0; ok && i < m.ndim; i++)
            if (m.strides[i] != want->strides[i]) {
                tensor_reason(reason, source, "stride mismatch at index %d. expected %lld, actual %lld",
                              i, (long long)want->strides[i], (long long)m.strides[i]);
                ok = 0;
            }
        if (ok && m.dispatch_keys != want->dispatch_keys) {
            tensor_reason(reason, source, "dispatch key set mismatch");
            ok = 0;
        }
    }
    Py_XDECREF(dtype);
    if (ok && !lf->ival && reason == NULL && fj_tensor_meta_ready()) {
        /* the C reader was installed after this guard was built: what it
           reads of this tensor (which matched) is what to match from now on */
        fj_TensorMeta fast;
        int fr = fj_tensor_meta(v, &fast);
        if (fr < 0)
            return -1;
        if (fr == 1 && fast.ndim == want->ndim && fast.requires_grad == want->requires_grad &&
            fast.dispatch_keys == want->dispatch_keys) {
            lf->tm->dtype = fast.dtype;
            lf->tm->device_type = fast.device_type;
            lf->tm->device_index = fast.device_index;
            lf->ival = 1;
        }
    }
    return ok;
}

/*
** NumPy's error state: each np.errstate(...) entered makes a new capsule of
** its numpy/_core/src/umath/extobj.h npy_extobj, so two states are the same
** when the capsules are, or when both hold equal fields (the handler
** function by identity).
*/
typedef struct {
    int errmask;
    Py_ssize_t bufsize; /* npy_intp */
    PyObject *pyfunc;
} fj_npy_extobj;

static int same_extobj(PyObject *a, PyObject *b)
{
    static const char name[] = "numpy.ufunc.extobj";
    if (a == b)
        return 1;
    if (a == NULL || b == NULL || !PyCapsule_CheckExact(a) || !PyCapsule_CheckExact(b) ||
        !PyCapsule_IsValid(a, name) || !PyCapsule_IsValid(b, name))
        return 0;
    const fj_npy_extobj *x = PyCapsule_GetPointer(a, name), *y = PyCapsule_GetPointer(b, name);
    return x->errmask == y->errmask && x->bufsize == y->bufsize && x->pyfunc == y->pyfunc;
}

static int global_state_check(Leaf *lf)
{
    PyObject *cur = NULL;
    if (lf->obj != NULL) {
        if (PyContextVar_Get(lf->obj, NULL, &cur) < 0)
            return -1;
        int ok = same_extobj(cur, lf->aux);
        Py_XDECREF(cur);
        if (!ok)
            return 0;
    }
    if (lf->torch_state == 0)
        return 1;
    int fast;
    uint64_t bits;
    PyObject *tuple;
    if (fj_torch_global_state(lf->torch_state == 1, &fast, &bits, &tuple) < 0)
        return -1;
    if (fast)
        return bits == lf->torch_bits;
    int ok = PyObject_RichCompareBool(tuple, lf->torch_tuple, Py_EQ);
    Py_DECREF(tuple);
    if (ok > 0 && fj_torch_state_reader_ready()) {
        /* the C reader was installed after this guard was built (torch_meta.py
           builds it in the background): from now on, read the state with it */
        if (fj_torch_global_state(1, &fast, &bits, &tuple) < 0)
            return -1;
        Py_XDECREF(tuple);
        if (fast) {
            lf->torch_bits = bits;
            lf->torch_state = 1;
        }
    }
    return ok;
}

/* Runs one leaf on 'v' (NULL at the root): 1 pass, 0 fail, -1 error.
** 'reason' is NULL on the fast path, else receives a detailed failure text
** when the leaf can give one (TENSOR_MATCH). */
static inline int leaf_check(Leaf *lf, PyObject *v, PyObject *source, PyObject **reason)
{
    switch (lf->kind) {
    case LEAF_TYPE_MATCH:
        /* a dead referent (NULL) fails: a new object at its address never passes */
        return (PyObject *)Py_TYPE(v) == leaf_target(lf);
    case LEAF_ID_MATCH:
        return v == leaf_target(lf);
    case LEAF_EQUALS_MATCH:
        return equals_check(lf, v);
    case LEAF_NONE_MATCH:
        return v == Py_None;
    case LEAF_SEQUENCE_LENGTH:
        return (PyList_CheckExact(v) || PyTuple_CheckExact(v)) && Py_SIZE(v) == lf->n;
    case LEAF_DICT_KEYS:
        return dict_keys_check(lf, v);
    case LEAF_DICT_VERSION:
        return PyDict_Check(v) && FJ_DICT_VERSION(v) == lf->version;
    case LEAF_TENSOR_MATCH:
        return tensor_check(lf, v, source, reason);
    case LEAF_TORCH_MATCH:
        return torch_check(lf, v, source, reason);
    case LEAF_GLOBAL_STATE:
        return global_state_check(lf);
    case LEAF_GLOBAL_ABSENT: {
        PyObject *found = NULL;
        if (v == NULL)
            return 0;
        int r = fj_dict_lookup(v, lf->obj, 0, &found);
        return r < 0 ? -1 : r == FJ_LOOKUP_ABSENT;
    }
    }
    PyErr_SetString(PyExc_SystemError, "framejit: unknown guard kind");
    return -1;
}

/* -------------------------------------------------------------- managers */

/* Recomputes m->skippable after a change to m, and forgets its tag. */
static void manager_changed(GuardManager *m)
{
    int ok = m->nchildren == 0 && m->nleaves > 0;
    for (Py_ssize_t i = 0; ok && i < m->nleaves; i++)
        ok = m->leaves[i]->immutable;
    m->skippable = ok;
    m->keys_pinned = 0;
    for (Py_ssize_t i = 0; i < m->nleaves; i++) {
        Leaf *lf = m->leaves[i];
        if (lf->kind == LEAF_DICT_KEYS &&
            strspn(PyBytes_AS_STRING(lf->aux), "v") == (size_t)PyBytes_GET_SIZE(lf->aux))
            m->keys_pinned = 1;
    }
    m->seen_version = 0;
}

/* Appends 'lf' to m (stealing it: freed on error).  0 or -1. */
static int manager_add_leaf(GuardManager *m, Leaf *lf)
{
    Leaf **leaves = fj_array_grow(m->leaves, m->nleaves, &m->leaves_cap, sizeof(*leaves), 2);
    if (leaves == NULL) {
        leaf_free(lf);
        return -1;
    }
    m->leaves = leaves;
    m->leaves[m->nleaves++] = lf;
    manager_changed(m);
    return 0;
}

/* The child of 'm' whose value is fetched by the last step of 'src'
** (borrowed; a frame-rooted step under the root, a step from a value under
** any other manager), created when missing.  Borrowed, NULL on error. */
static PyObject *manager_child(GuardManager *m, fj_Source *src)
{
    if ((src->parent == NULL) != IS_ROOT(m)) {
        PyErr_Format(PyExc_TypeError, "%U is not read %s", src->text,
                     IS_ROOT(m) ? "from a value" : "from the frame");
        return NULL;
    }
    for (Py_ssize_t i = 0; i < m->nchildren; i++) {
        int r = fj_source_same_step(m->children[i]->src, src);
        if (r != 0)
            return r < 0 ? NULL : (PyObject *)m->children[i];
    }
    if (m->depth + 1 > MAX_DEPTH) {
        PyErr_Format(PyExc_RecursionError, "guard tree deeper than %d at %U", MAX_DEPTH, src->text);
        return NULL;
    }
    GuardManager **children =
        fj_array_grow(m->children, m->nchildren, &m->children_cap, sizeof(*children), 4);
    if (children == NULL)
        return NULL;
    m->children = children;
    GuardManager *c = (GuardManager *)GuardManager_Type->tp_alloc(GuardManager_Type, 0);
    if (c == NULL)
        return NULL;
    c->depth = m->depth + 1;
    c->src = (fj_Source *)Py_NewRef((PyObject *)src);
    m->children[m->nchildren++] = c;
    manager_changed(m);
    return (PyObject *)c;
}

/* TypeError "<expected>, not <type of o>" (o may be NULL).  Returns -1. */
static int wrong_type(const char *expected, PyObject *o)
{
    PyErr_Format(PyExc_TypeError, "%s, not %.100s", expected, o ? Py_TYPE(o)->tp_name : "NULL");
    return -1;
}

static int check_root(PyObject *root)
{
    if (root == NULL || !fj_RootGuardManager_Check(root))
        return wrong_type("expected a RootGuardManager", root);
    return 0;
}

/* A non-root manager (one that has a value).  0 or -1. */
static int check_valued(PyObject *mgr)
{
    if (mgr == NULL || !IS_MANAGER(mgr))
        return wrong_type("expected a GuardManager", mgr);
    if (IS_ROOT((GuardManager *)mgr)) {
        PyErr_SetString(PyExc_TypeError, "the root guard manager has no value: add this guard "
                                         "under local(), global_(), builtin() or closure_cell()");
        return -1;
    }
    return 0;
}

static int check_name(PyObject *name)
{
    if (name == NULL || !PyUnicode_Check(name))
        return wrong_type("guard name must be a str", name);
    return 0;
}

/* ------------------------------------------------------------- accessors */

PyObject *fj_guard_root_new(void)
{
    GuardManager *r = NULL;
    if (fj_RootGuardManager_Type == NULL) {
        PyErr_SetString(PyExc_RuntimeError, "framejit guards are not initialized");
        return NULL;
    }
    r = (GuardManager *)fj_RootGuardManager_Type->tp_alloc(fj_RootGuardManager_Type, 0);
    return (PyObject *)r;
}

PyObject *fj_guard_manager(PyObject *root, fj_Source *src)
{
    if (check_root(root) < 0)
        return NULL;
    PyObject *parent = root;
    if (src->parent != NULL && (parent = fj_guard_manager(root, src->parent)) == NULL)
        return NULL;
    return manager_child((GuardManager *)parent, src);
}

/* The child of 'mgr' at 'src' (a new reference it consumes; NULL: the error
   is set), for the Python methods.  New reference, NULL on error. */
static PyObject *child_at(PyObject *mgr, fj_Source *src)
{
    if (src == NULL)
        return NULL;
    PyObject *c = manager_child((GuardManager *)mgr, src);
    Py_DECREF(src);
    return Py_XNewRef(c);
}

/* ---------------------------------------------------------------- adders */

/* Gives leaf 'lf' its text (a new reference it consumes; NULL: the error is
   set) and adds it to 'm'; frees the leaf when either fails.  0 or -1. */
static int add_leaf_text(GuardManager *m, Leaf *lf, PyObject *text)
{
    if (text == NULL) {
        leaf_free(lf);
        return -1;
    }
    lf->text = text;
    return manager_add_leaf(m, lf);
}

/*
** A leaf of 'kind' on 'obj' by identity, printed as 'fmt' of the source,
** id(obj) and 'comment' (borrowed).  It holds obj through a weak reference
** when obj takes one (leaf_hold): a guard does not keep a function, class or
** module alive (test_functools lru_cache weakrefs, test_unittest
** testAssertRaisesRefcount).  0 or -1.
*/
static int add_identity_leaf(GuardManager *m, int kind, PyObject *obj, int immutable,
                             const char *fmt, PyObject *comment)
{
    Leaf *lf = leaf_new(kind);
    if (lf == NULL)
        return -1;
    if (leaf_hold(lf, obj) < 0) {
        leaf_free(lf);
        return -1;
    }
    lf->immutable = immutable;
    return add_leaf_text(m, lf,
                         PyUnicode_FromFormat(fmt, MGR_TEXT(m), (size_t)(uintptr_t)obj, comment));
}

int fj_guard_add_type_match(PyObject *mgr, PyObject *tp)
{
    if (check_valued(mgr) < 0)
        return -1;
    if (!PyType_Check(tp))
        return wrong_type("TYPE_MATCH expects a type", tp);
    PyTypeObject *t = (PyTypeObject *)tp;
    PyObject *qual = PyType_GetQualName(t);
    if (qual == NULL)
        return -1;
    /* An object's __class__ can only be reassigned between heap types (and
    ** module subclasses): a static type stays put while the binding does. */
    int immutable = !(t->tp_flags & Py_TPFLAGS_HEAPTYPE) && !PyType_IsSubtype(t, &PyModule_Type);
    int r = add_identity_leaf((GuardManager *)mgr, LEAF_TYPE_MATCH, tp, immutable,
                              "___check_type_id(%U, %zu)  # type: %U", qual);
    Py_DECREF(qual);
    return r;
}

int fj_guard_add_id_match(PyObject *mgr, PyObject *obj)
{
    if (check_valued(mgr) < 0)
        return -1;
    PyObject *r = fj_guards_value_text(obj, 60);
    if (r == NULL)
        return -1;
    int ok = add_identity_leaf((GuardManager *)mgr, LEAF_ID_MATCH, obj, 1,
                               "___check_obj_id(%U, %zu)  # %U", r);
    Py_DECREF(r);
    return ok;
}

int fj_guard_add_equals_match(PyObject *mgr, PyObject *value)
{
    if (check_valued(mgr) < 0)
        return -1;
    GuardManager *m = (GuardManager *)mgr;
    int kind = eq_kind_of(value);
    if (kind == EQ_NONE) {
        PyErr_Format(PyExc_TypeError,
                     "EQUALS_MATCH compares builtin values (None, bool, int, float, str, bytes, "
                     "complex, tuples and sets of them) and NumPy scalars, not %.100s: comparing "
                     "it would run the program's code (use ID_MATCH)",
                     Py_TYPE(value)->tp_name);
        return -1;
    }
    PyObject *r = fj_guards_value_text(value, 0);
    if (r == NULL)
        return -1;
    Leaf *lf = leaf_new(LEAF_EQUALS_MATCH);
    if (lf == NULL) {
        Py_DECREF(r);
        return -1;
    }
    lf->obj = Py_NewRef(value);
    lf->eq_kind = kind;
    /* a set changes in place; a NumPy scalar is kept out as before */
    lf->immutable = kind != EQ_NUMPY && !(kind == EQ_SET && PySet_CheckExact(value));
    if (kind == EQ_SET) {
        lf->aux = PyDict_New();
        Py_ssize_t pos = 0;
        PyObject *item;
        Py_hash_t hash;
        while (lf->aux != NULL && _PySet_NextEntry(value, &pos, &item, &hash))
            if (PyDict_SetItem(lf->aux, item, item) < 0)
                Py_CLEAR(lf->aux);
        if (lf->aux == NULL) {
            Py_DECREF(r);
            leaf_free(lf);
            return -1;
        }
    }
    /* ints and floats are kept as C values, not as the program's objects:
       holding a small int would change what sys.getrefcount(1) says */
    if (lf->eq_kind == EQ_INT) {
        int overflow = 0;
        lf->ival = PyLong_AsLongLongAndOverflow(value, &overflow);
        Py_CLEAR(lf->obj);
    }
    else if (lf->eq_kind == EQ_FLOAT) {
        lf->dval = PyFloat_AS_DOUBLE(value);
        Py_CLEAR(lf->obj);
    }
    PyObject *text = PyUnicode_FromFormat("%U == %U", MGR_TEXT(m), r);
    Py_DECREF(r);
    return add_leaf_text(m, lf, text);
}

int fj_guard_add_none_match(PyObject *mgr)
{
    if (check_valued(mgr) < 0)
        return -1;
    GuardManager *m = (GuardManager *)mgr;
    Leaf *lf = leaf_new(LEAF_NONE_MATCH);
    if (lf == NULL)
        return -1;
    lf->immutable = 1;
    return add_leaf_text(m, lf, PyUnicode_FromFormat("%U is None", MGR_TEXT(m)));
}

int fj_guard_add_sequence_length(PyObject *mgr, Py_ssize_t n)
{
    if (check_valued(mgr) < 0)
        return -1;
    if (n < 0) {
        PyErr_SetString(PyExc_ValueError, "SEQUENCE_LENGTH expects a length >= 0");
        return -1;
    }
    GuardManager *m = (GuardManager *)mgr;
    Leaf *lf = leaf_new(LEAF_SEQUENCE_LENGTH);
    if (lf == NULL)
        return -1;
    lf->n = n;
    return add_leaf_text(m, lf, PyUnicode_FromFormat("len(%U) == %zd", MGR_TEXT(m), n));
}

/*
** Keys of builtin value kinds are matched by value (fj_value_same); any other key
** by identity, through a weak reference when it takes one.  (The tracer pins
** only dicts whose keys are plain constants.)
*/
int fj_guard_add_dict_keys(PyObject *mgr, PyObject *keys)
{
    PyObject *tuple = NULL, *list = NULL, *r = NULL;
    Leaf *lf = NULL;
    if (check_valued(mgr) < 0)
        return -1;
    GuardManager *m = (GuardManager *)mgr;
    list = PySequence_List(keys);
    if (list == NULL)
        goto error;
    r = fj_guards_value_text(list, 0);
    if (r == NULL)
        goto error;
    lf = leaf_new(LEAF_DICT_KEYS);
    if (lf == NULL)
        goto error;
    Py_ssize_t n = PyList_GET_SIZE(list);
    tuple = PyTuple_New(n);
    lf->aux = PyBytes_FromStringAndSize(NULL, n);
    if (tuple == NULL || lf->aux == NULL)
        goto error;
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *k = PyList_GET_ITEM(list, i), *e = k;
        char mode = KEY_VALUE;
        if (fj_value_kind(k, 0) == EQ_NONE) {
            mode = PyType_SUPPORTS_WEAKREFS(Py_TYPE(k)) ? KEY_WEAK : KEY_SAME;
            e = mode == KEY_WEAK ? PyWeakref_NewRef(k, NULL) : Py_NewRef(k);
            if (e == NULL)
                goto error;
        }
        else
            Py_INCREF(e);
        PyTuple_SET_ITEM(tuple, i, e);
        PyBytes_AS_STRING(lf->aux)[i] = mode;
    }
    lf->obj = Py_NewRef(tuple);
    lf->text = PyUnicode_FromFormat("list(%U.keys()) == %U", MGR_TEXT(m), r);
    if (lf->text == NULL)
        goto error;
    Py_DECREF(tuple);
    Py_DECREF(list);
    Py_DECREF(r);
    return manager_add_leaf(m, lf);
error:
    leaf_free(lf);
    Py_XDECREF(tuple);
    Py_XDECREF(list);
    Py_XDECREF(r);
    return -1;
}

int fj_guard_add_dict_version(PyObject *mgr, PyObject *d)
{
    if (check_valued(mgr) < 0)
        return -1;
    if (!PyDict_Check(d))
        return wrong_type("DICT_VERSION expects a dict", d);
    GuardManager *m = (GuardManager *)mgr;
    Leaf *lf = leaf_new(LEAF_DICT_VERSION);
    if (lf == NULL)
        return -1;
    lf->version = FJ_DICT_VERSION(d);
    return add_leaf_text(m, lf,
                         PyUnicode_FromFormat("___dict_version(%U) == %llu", MGR_TEXT(m),
                                              (unsigned long long)lf->version));
}

/* TENSOR_MATCH keeps the dtype by value, never the program's dtype object:
** a guard must not move sys.getrefcount of np.dtype('int32') or keep a
** structured dtype alive (NumPy's test___array___refcount counts it).  A
** builtin singleton is matched by address first (it lives as long as NumPy);
** any other dtype, and a mismatch, is compared for equivalence with a private
** copy.  A dtype NumPy cannot copy (a new-style user DType) is held. */
static int tensor_hold_dtype(Leaf *lf, PyArray_Descr *descr)
{
    lf->dtype_id = NULL;
#if NPY_ABI_VERSION >= 0x02000000
    const int builtin_types = NPY_NTYPES_LEGACY;
#else
    const int builtin_types = NPY_NTYPES;
#endif
    if (descr->type_num >= 0 && descr->type_num < builtin_types) {
        PyArray_Descr *canon = PyArray_DescrFromType(descr->type_num);
        if (canon == NULL)
            return -1;
        if (canon == descr)
            lf->dtype_id = descr;
        Py_DECREF(canon);
    }
#if NPY_ABI_VERSION >= 0x02000000
    if (!PyDataType_ISLEGACY(descr)) { /* PyArray_DescrNew refuses new-style DTypes */
        lf->aux = Py_NewRef((PyObject *)descr);
        return 0;
    }
#endif
    PyArray_Descr *copy = PyArray_DescrNew(descr);
    if (copy == NULL)
        return -1;
    lf->aux = (PyObject *)copy;
    return 0;
}

/* "[4, None]": the entries of 'v' (n of them), None where shape[i] < 0.
** New reference, NULL on error. */
static PyObject *dims_repr(const npy_intp *v, const npy_intp *shape, Py_ssize_t n)
{
    PyObject *list = PyList_New(n), *r = NULL;
    if (list == NULL)
        return NULL;
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *x = shape[i] < 0 ? Py_NewRef(Py_None) : PyLong_FromSsize_t((Py_ssize_t)v[i]);
        if (x == NULL)
            goto done;
        PyList_SET_ITEM(list, i, x);
    }
    r = PyObject_Repr(list);
done:
    Py_DECREF(list);
    return r;
}

int fj_guard_add_tensor_match(PyObject *mgr, PyObject *example, PyObject *dynamic_dims)
{
    PyObject *dyn = NULL, *qual = NULL, *dtype = NULL, *size = NULL, *stride = NULL;
    Leaf *lf = NULL;
    if (check_valued(mgr) < 0)
        return -1;
    GuardManager *m = (GuardManager *)mgr;
    if (!PyArray_Check(example))
        return wrong_type("TENSOR_MATCH expects a numpy.ndarray", example);
    PyArrayObject *a = (PyArrayObject *)example;
    Py_ssize_t ndim = PyArray_NDIM(a);
    lf = leaf_new(LEAF_TENSOR_MATCH);
    if (lf == NULL)
        goto error;
    lf->n = ndim;
    lf->shape = PyMem_Malloc((ndim ? ndim : 1) * sizeof(npy_intp));
    lf->strides = PyMem_Malloc((ndim ? ndim : 1) * sizeof(npy_intp));
    if (lf->shape == NULL || lf->strides == NULL) {
        PyErr_NoMemory();
        goto error;
    }
    for (Py_ssize_t i = 0; i < ndim; i++) {
        lf->shape[i] = PyArray_DIMS(a)[i];
        lf->strides[i] = PyArray_STRIDES(a)[i];
    }
    if (dynamic_dims != NULL && dynamic_dims != Py_None) {
        dyn = PySequence_Fast(dynamic_dims, "dynamic_dims must be a sequence of ints");
        if (dyn == NULL)
            goto error;
        for (Py_ssize_t j = 0; j < PySequence_Fast_GET_SIZE(dyn); j++) {
            Py_ssize_t d = PyNumber_AsSsize_t(PySequence_Fast_GET_ITEM(dyn, j), PyExc_OverflowError);
            if (d == -1 && PyErr_Occurred())
                goto error;
            if (d < 0)
                d += ndim;
            if (d < 0 || d >= ndim) {
                PyErr_Format(PyExc_ValueError, "dynamic dim out of range for a %zd-d array", ndim);
                goto error;
            }
            lf->shape[d] = -1;
        }
    }
    lf->layout = -1;
    lf->ival = PyArray_ISWRITEABLE(a) != 0; /* in-place graph ops write into it */
    for (Py_ssize_t i = 0; i < ndim; i++) {
        if (lf->shape[i] < 0) {
            /* other dims' strides follow a dynamic size: match the layout instead */
            lf->layout = PyArray_FLAGS(a) & (NPY_ARRAY_C_CONTIGUOUS | NPY_ARRAY_F_CONTIGUOUS);
            for (Py_ssize_t j = 0; j < ndim; j++)
                lf->strides[j] = -1;
            break;
        }
    }
    if (leaf_hold(lf, (PyObject *)Py_TYPE(example)) < 0)
        goto error;
    if (tensor_hold_dtype(lf, PyArray_DESCR(a)) < 0)
        goto error;
    qual = PyType_GetQualName(Py_TYPE(example));
    /* a builtin dtype is named after its scalar type (float64): str(dtype) is
       NumPy's Python code, which uses builtins the program may have patched */
    PyArray_Descr *descr = PyArray_DESCR(a);
    /* a user dtype (NumPy's new DType API) may have no scalar type */
    const char *tn = descr->typeobj != NULL ? descr->typeobj->tp_name : "";
    if (qual != NULL && PyTypeNum_ISNUMBER(descr->type_num) && PyArray_ISNBO(descr->byteorder) &&
        strncmp(tn, "numpy.", 6) == 0)
        dtype = PyUnicode_FromString(tn + 6);
    else
        dtype = qual ? PyObject_Str(lf->aux) : NULL;
    size = dtype ? dims_repr(lf->shape, lf->shape, ndim) : NULL;
    stride = size ? dims_repr(lf->strides, lf->layout >= 0 ? lf->strides : lf->shape, ndim) : NULL;
    if (stride == NULL)
        goto error;
    lf->text = PyUnicode_FromFormat("check_tensor(%U, %U, dtype=%U, size=%U, stride=%U)",
                                    MGR_TEXT(m), qual, dtype, size, stride);
    if (lf->text == NULL)
        goto error;
    Py_XDECREF(dyn);
    Py_DECREF(qual);
    Py_DECREF(dtype);
    Py_DECREF(size);
    Py_DECREF(stride);
    return manager_add_leaf(m, lf);
error:
    leaf_free(lf);
    Py_XDECREF(dyn);
    Py_XDECREF(qual);
    Py_XDECREF(dtype);
    Py_XDECREF(size);
    Py_XDECREF(stride);
    return -1;
}

int fj_guard_add_global_state(PyObject *root)
{
    PyObject *mod = NULL, *var = NULL, *cur = NULL;
    Leaf *lf = NULL;
    /* NumPy's error-state context variable, found once: later lookups would
       go through builtins.__import__, which programs patch (test_unittest) */
    static PyObject *extobj_var = NULL; /* strong, kept */
    if (check_root(root) < 0)
        return -1;
    if (extobj_var == NULL) {
        PyObject *name = PyUnicode_FromString("numpy._core._ufunc_config");
        mod = name ? PyImport_GetModule(name) : NULL;
        if (mod == NULL && !PyErr_Occurred())
            mod = PyImport_Import(name);
        Py_XDECREF(name);
        if (mod == NULL)
            goto error;
        var = PyObject_GetAttrString(mod, "_extobj_contextvar");
        if (var == NULL)
            goto error;
        if (!PyContextVar_CheckExact(var)) {
            PyErr_SetString(PyExc_TypeError, "numpy's _extobj_contextvar is not a ContextVar");
            goto error;
        }
        extobj_var = Py_NewRef(var);
    }
    else
        var = Py_NewRef(extobj_var);
    if (PyContextVar_Get(var, NULL, &cur) < 0)
        goto error;
    lf = leaf_new(LEAF_GLOBAL_STATE);
    if (lf == NULL)
        goto error;
    lf->obj = var;
    var = NULL;
    lf->aux = cur; /* NULL when unset without default: then "still unset" */
    cur = NULL;
    lf->text = PyUnicode_FromString("___check_global_state()");
    if (lf->text == NULL)
        goto error;
    Py_XDECREF(mod);
    return manager_add_leaf((GuardManager *)root, lf);
error:
    leaf_free(lf);
    Py_XDECREF(mod);
    Py_XDECREF(var);
    Py_XDECREF(cur);
    return -1;
}

int fj_guard_add_torch_match(PyObject *mgr, PyObject *example, PyObject *dynamic_dims)
{
    PyObject *qual = NULL, *dtype = NULL, *size = NULL, *stride = NULL, *dtxt = NULL;
    PyObject *sz = NULL, *st = NULL;
    Leaf *lf = NULL;
    if (check_valued(mgr) < 0)
        return -1;
    GuardManager *m = (GuardManager *)mgr;
    if (!fj_torch_is_tensor(example))
        return wrong_type("TENSOR_MATCH expects a torch.Tensor", example);
    lf = leaf_new(LEAF_TORCH_MATCH);
    if (lf == NULL || (lf->tm = PyMem_Calloc(1, sizeof(fj_TensorMeta))) == NULL) {
        if (lf != NULL)
            PyErr_NoMemory();
        goto error;
    }
    /* the reader's metadata and the dtype object of its code; else (no
       reader, or a tensor it does not read) the slow read through torch */
    int r = fj_tensor_meta(example, lf->tm);
    if (r < 0)
        goto error;
    if (r == 1 && fj_torch_dtype_of(lf->tm->dtype) != NULL) {
        lf->ival = 1;
        dtype = Py_NewRef(fj_torch_dtype_of(lf->tm->dtype));
    }
    else {
        fj_TensorMeta fast = *lf->tm;
        if (fj_torch_meta_slow(example, lf->tm, &dtype) < 0)
            goto error;
        if (r == 1) {
            lf->ival = 1;
            *lf->tm = fast;
        }
    }
    lf->aux = Py_NewRef(dtype);
    if (dynamic_dims != NULL && dynamic_dims != Py_None && PyObject_Length(dynamic_dims) != 0) {
        /* dynamic dims: their sizes are -1 (any size >= 2), and the strides
           must be the contiguous ones, as they are now */
        PyObject *dyn = PySequence_Fast(dynamic_dims, "dynamic_dims must be a sequence of ints");
        if (dyn == NULL)
            goto error;
        int bad = torch_dims_match(lf->tm, lf->tm, NULL) >= 0;
        for (Py_ssize_t j = 0; !bad && j < PySequence_Fast_GET_SIZE(dyn); j++) {
            Py_ssize_t d = PyNumber_AsSsize_t(PySequence_Fast_GET_ITEM(dyn, j), PyExc_OverflowError);
            if (d == -1 && PyErr_Occurred()) {
                Py_DECREF(dyn);
                goto error;
            }
            bad = d < 0 || d >= lf->tm->ndim || lf->tm->sizes[d] < 2;
            if (!bad)
                lf->tm->sizes[d] = -1;
        }
        Py_DECREF(dyn);
        if (bad) {
            PyErr_SetString(PyExc_ValueError, "framejit: dynamic dims of a torch tensor must be in range, of "
                                              "sizes >= 2, on a contiguous tensor");
            goto error;
        }
        for (int i = 0; i < lf->tm->ndim; i++)
            lf->tm->strides[i] = -1;
        lf->layout = 1;
    }
    if (leaf_hold(lf, (PyObject *)Py_TYPE(example)) < 0)
        goto error;
    qual = PyType_GetQualName(Py_TYPE(example));
    dtxt = qual ? fj_torch_dtype_text(dtype) : NULL;
    sz = dtxt ? PyList_New(lf->tm->ndim) : NULL;
    st = sz ? PyList_New(lf->tm->ndim) : NULL;
    for (int i = 0; st != NULL && i < lf->tm->ndim; i++) {
        /* torch prints a dynamic size, and the strides that follow it, as None */
        PyList_SET_ITEM(sz, i, lf->tm->sizes[i] < 0 ? Py_NewRef(Py_None) : PyLong_FromLongLong(lf->tm->sizes[i]));
        PyList_SET_ITEM(st, i, lf->tm->strides[i] < 0 ? Py_NewRef(Py_None)
                                                       : PyLong_FromLongLong(lf->tm->strides[i]));
    }
    size = st && !PyErr_Occurred() ? PyObject_Repr(sz) : NULL;
    stride = size ? PyObject_Repr(st) : NULL;
    if (stride == NULL)
        goto error;
    /* device=None: torch prints the CPU's (absent) index so */
    lf->text = PyUnicode_FromFormat("check_tensor(%U, %U, dtype=%U, device=None, requires_grad=%s, "
                                    "size=%U, stride=%U)",
                                    MGR_TEXT(m), qual, dtxt, lf->tm->requires_grad ? "True" : "False",
                                    size, stride);
    if (lf->text == NULL)
        goto error;
    Py_XDECREF(qual);
    Py_XDECREF(dtype);
    Py_XDECREF(dtxt);
    Py_XDECREF(sz);
    Py_XDECREF(st);
    Py_XDECREF(size);
    Py_XDECREF(stride);
    return manager_add_leaf(m, lf);
error:
    leaf_free(lf);
    Py_XDECREF(qual);
    Py_XDECREF(dtype);
    Py_XDECREF(dtxt);
    Py_XDECREF(sz);
    Py_XDECREF(st);
    Py_XDECREF(size);
    Py_XDECREF(stride);
    return -1;
}

int fj_guard_add_torch_state(PyObject *root)
{
    if (check_root(root) < 0)
        return -1;
    GuardManager *m = (GuardManager *)root;
    Leaf *lf = NULL;
    for (Py_ssize_t i = 0; i < m->nleaves; i++)
        if (m->leaves[i]->kind == LEAF_GLOBAL_STATE)
            lf = m->leaves[i];
    int fresh = lf == NULL;
    if (fresh) {
        if ((lf = leaf_new(LEAF_GLOBAL_STATE)) == NULL)
            return -1;
        if ((lf->text = PyUnicode_FromString("___check_global_state()")) == NULL) {
            leaf_free(lf);
            return -1;
        }
    }
    if (lf->torch_state != 0)
        return 0;
    int fast;
    if (fj_torch_global_state(1, &fast, &lf->torch_bits, &lf->torch_tuple) < 0) {
        if (fresh)
            leaf_free(lf);
        return -1;
    }
    lf->torch_state = fast ? 1 : 2;
    return fresh ? manager_add_leaf(m, lf) : 0;
}

/* GLOBAL_ABSENT on manager 'm' (the root: the frame's globals; another: the
   dict at its source), printed 'text' (stolen).  0 or -1. */
static int add_absent(GuardManager *m, PyObject *name, PyObject *text)
{
    Leaf *lf = text != NULL ? leaf_new(LEAF_GLOBAL_ABSENT) : NULL;
    if (lf == NULL) {
        Py_XDECREF(text);
        return -1;
    }
    lf->obj = Py_NewRef(name);
    return add_leaf_text(m, lf, text);
}

int fj_guard_add_global_absent(PyObject *root, PyObject *name)
{
    if (check_root(root) < 0 || check_name(name) < 0)
        return -1;
    return add_absent((GuardManager *)root, name, PyUnicode_FromFormat("%R not in G", name));
}

int fj_guard_add_key_absent(PyObject *mgr, PyObject *name)
{
    if (check_valued(mgr) < 0 || check_name(name) < 0)
        return -1;
    return add_absent((GuardManager *)mgr, name,
                      PyUnicode_FromFormat("%R not in %U", name, MGR_TEXT((GuardManager *)mgr)));
}

int fj_guard_add_no_aliasing(PyObject *root, PyObject *sources)
{
    if (check_root(root) < 0)
        return -1;
    if (!PyTuple_Check(sources) || PyTuple_GET_SIZE(sources) < 2 ||
        PyTuple_GET_SIZE(sources) > 16) {
        PyErr_SetString(PyExc_ValueError, "NO_ALIASING takes a tuple of 2 to 16 sources");
        return -1;
    }
    for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(sources); i++)
        if (!fj_source_check(PyTuple_GET_ITEM(sources, i)))
            return wrong_type("NO_ALIASING takes sources", PyTuple_GET_ITEM(sources, i));
    Leaf *lf = leaf_new(LEAF_NO_ALIASING);
    if (lf == NULL)
        return -1;
    lf->obj = Py_NewRef(sources);
    PyObject *sep = PyUnicode_FromString(", ");
    PyObject *strs = PyList_New(0);
    for (Py_ssize_t i = 0; strs && i < PyTuple_GET_SIZE(sources); i++) {
        PyObject *t = PyObject_Str(PyTuple_GET_ITEM(sources, i));
        if (t == NULL || PyList_Append(strs, t) < 0)
            Py_CLEAR(strs);
        Py_XDECREF(t);
    }
    PyObject *joined = sep && strs ? PyUnicode_Join(sep, strs) : NULL;
    PyObject *text = joined ? PyUnicode_FromFormat("___check_no_aliasing(%U)", joined) : NULL;
    Py_XDECREF(sep);
    Py_XDECREF(strs);
    Py_XDECREF(joined);
    return add_leaf_text((GuardManager *)root, lf, text);
}

int fj_guard_add_dims_equal(PyObject *root, PyObject *src_a, int dim_a, PyObject *src_b, int dim_b)
{
    if (check_root(root) < 0)
        return -1;
    if (!fj_source_check(src_a) || !fj_source_check(src_b))
        return wrong_type("DIMS_EQUAL takes two sources", fj_source_check(src_a) ? src_b : src_a);
    PyObject *text = PyUnicode_FromFormat("%S.shape[%d] == %S.shape[%d]", src_a, dim_a, src_b, dim_b);
    if (text == NULL)
        return -1;
    GuardManager *m = (GuardManager *)root;
    for (Py_ssize_t i = 0; i < m->nleaves; i++) {
        if (m->leaves[i]->kind == LEAF_DIMS_EQUAL &&
            PyUnicode_Compare(m->leaves[i]->text, text) == 0) {
            Py_DECREF(text); /* already there */
            return 0;
        }
    }
    Leaf *lf = leaf_new(LEAF_DIMS_EQUAL);
    if (lf == NULL) {
        Py_DECREF(text);
        return -1;
    }
    lf->text = text;
    lf->ival = dim_a;
    lf->n = dim_b;
    lf->obj = PyTuple_Pack(2, src_a, src_b);
    if (lf->obj == NULL) {
        leaf_free(lf);
        return -1;
    }
    return manager_add_leaf(m, lf);
}

static int relation_check(Leaf *lf, const fj_FrameView *view);

int fj_guard_add_relation(PyObject *root, PyObject *syms, PyObject *prog, int expect, PyObject *text,
                          const fj_FrameView *view)
{
    if (check_root(root) < 0)
        return -1;
    if (!PyTuple_Check(syms) || !PyTuple_Check(prog) || PyTuple_GET_SIZE(prog) % 2 != 0 ||
        PyTuple_GET_SIZE(prog) == 0 || !PyUnicode_Check(text))
        return wrong_type("RELATION takes a tuple of symbols, a tuple of (opcode, operand) words and a text",
                          prog);
    for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(syms); i++) {
        PyObject *s = PyTuple_GET_ITEM(syms, i);
        if (!PyTuple_Check(s) || PyTuple_GET_SIZE(s) != 2 || !fj_source_check(PyTuple_GET_ITEM(s, 0)) ||
            !PyLong_Check(PyTuple_GET_ITEM(s, 1)))
            return wrong_type("a RELATION symbol is (source, dim or -1)", s);
    }
    GuardManager *m = (GuardManager *)root;
    for (Py_ssize_t i = 0; i < m->nleaves; i++)
        if (m->leaves[i]->kind == LEAF_RELATION && PyUnicode_Compare(m->leaves[i]->text, text) == 0)
            return 1; /* already there */
    Leaf *lf = leaf_new(LEAF_RELATION);
    if (lf == NULL)
        return -1;
    lf->nprog = PyTuple_GET_SIZE(prog);
    lf->prog = PyMem_Calloc((size_t)lf->nprog, sizeof(long long));
    lf->obj = Py_NewRef(syms);
    lf->text = Py_NewRef(text);
    lf->n = expect != 0;
    if (lf->prog == NULL) {
        leaf_free(lf);
        PyErr_NoMemory();
        return -1;
    }
    for (Py_ssize_t i = 0; i < lf->nprog; i++) {
        lf->prog[i] = PyLong_AsLongLong(PyTuple_GET_ITEM(prog, i));
        if (lf->prog[i] == -1 && PyErr_Occurred()) {
            leaf_free(lf);
            return -1;
        }
    }
    for (Py_ssize_t i = 0; i < lf->nprog; i += 2)
        if (lf->prog[i] < FJ_REL_SYM || lf->prog[i] > FJ_REL_GE ||
            (lf->prog[i] == FJ_REL_SYM && (lf->prog[i + 1] < 0 || lf->prog[i + 1] >= PyTuple_GET_SIZE(syms)))) {
            leaf_free(lf);
            return wrong_type("a RELATION program word is out of range", prog);
        }
    if (view != NULL) {
        /* a relation the check cannot compute for the values now (past int64,
           too deep) would fail on every call: not added */
        int now = relation_check(lf, view);
        if (now <= 0) {
            leaf_free(lf);
            return now;
        }
    }
    return manager_add_leaf(m, lf) < 0 ? -1 : 1;
}

/* ----------------------------------------------------------------- check */

typedef struct {
    const fj_FrameView *view;
    GuardManager *root;
    PyObject **reason; /* NULL on the fast path; verbose: receives a new str */
} CheckCtx;

/* Stable sort of m's accessors by fail count, most failures first. */
static void reorder(GuardManager *m)
{
    GuardManager **a = m->children;
    for (Py_ssize_t i = 1; i < m->nchildren; i++) {
        GuardManager *x = a[i];
        Py_ssize_t j = i;
        while (j > 0 && a[j - 1]->fail_count < x->fail_count) {
            a[j] = a[j - 1];
            j--;
        }
        a[j] = x;
    }
}

/*
** The dict whose version tag vouches for child 'c' of the root, or NULL.
** On 3.11 every dict creation and every change of a binding takes a fresh
** tag from one global counter, so an equal tag means the same dict with the
** same bindings: a subtree of leaves on an immutable value passes again.
*/
/*
** The dict whose version tag vouches for child 'c' of a parent whose value
** is 'parent': the globals or builtins for their accessors, and a module's
** __dict__ for an attribute of a module (np.sin).  NULL when none.
*/
static inline PyObject *tag_dict(GuardManager *c, const fj_FrameView *view, PyObject *parent)
{
    if (!c->skippable)
        return NULL;
    if (c->src->kind == FJ_SRC_GLOBAL)
        return view->globals;
    if (c->src->kind == FJ_SRC_BUILTIN)
        return view->builtins;
    if (c->src->kind == FJ_SRC_ATTR && parent != NULL && PyModule_CheckExact(parent))
        return PyModule_GetDict(parent);
    return NULL;
}

static void set_missing_reason(GuardManager *c, PyObject **reason)
{
    if (*reason != NULL)
        return;
    const char *what = c->src->kind == FJ_SRC_GLOBAL    ? "missing global"
                       : c->src->kind == FJ_SRC_BUILTIN ? "missing builtin"
                                                        : "missing";
    *reason = PyUnicode_FromFormat("%U (%s)", MGR_TEXT(c), what);
    if (*reason == NULL)
        PyErr_Clear(); /* fj_guards_check_verbose falls back to a generic text */
}

/* Runs m's leaves on 'v': 1, 0 or -1. */
/*
** NO_ALIASING: evaluates each source of the tuple lf->obj on the frame and
** passes when they are pairwise distinct objects (a missing value fails).
*/
static int no_aliasing_check(Leaf *lf, const fj_FrameView *view)
{
    Py_ssize_t n = PyTuple_GET_SIZE(lf->obj);
    PyObject *vals[16];
    if (n > 16)
        n = 16;
    int r = 1;
    Py_ssize_t got = 0;
    for (; got < n; got++) {
        r = fj_source_fetch((fj_Source *)PyTuple_GET_ITEM(lf->obj, got), view, &vals[got]);
        if (r <= 0)
            break;
        for (Py_ssize_t j = 0; j < got && r == 1; j++)
            if (vals[j] == vals[got])
                r = 0;
        if (r != 1) {
            got++;
            break;
        }
    }
    for (Py_ssize_t j = 0; j < got; j++)
        Py_XDECREF(vals[j]);
    return r;
}

/* The size of dim 'd' of an array or torch tensor: 1, 0 (neither, or too
   few dims), -1 on error. */
static int dim_size(PyObject *o, Py_ssize_t d, int64_t *out)
{
    if (PyArray_Check(o)) {
        if (PyArray_NDIM((PyArrayObject *)o) <= d)
            return 0;
        *out = PyArray_DIM((PyArrayObject *)o, (int)d);
        return 1;
    }
    if (!fj_torch_is_tensor(o))
        return 0;
    fj_TensorMeta m;
    int r = fj_torch_meta_read(o, &m);
    if (r <= 0)
        return r;
    if (m.ndim <= d)
        return 0;
    *out = m.sizes[d];
    return 1;
}

int fj_source_size(PyObject *o, Py_ssize_t d, PyObject **out)
{
    int64_t s = 0;
    int r = dim_size(o, d, &s);
    if (r <= 0)
        return r;
    *out = PyLong_FromLongLong((long long)s);
    return *out != NULL ? 1 : -1;
}

/*
** DIMS_EQUAL: two dynamic dims the trace saw meet in broadcasting are still
** equal (torch's symbolic shape guard s0 == s1).  Anything else fails.
*/
static int dims_equal_check(Leaf *lf, const fj_FrameView *view)
{
    PyObject *a = NULL, *b = NULL;
    int r = fj_source_fetch((fj_Source *)PyTuple_GET_ITEM(lf->obj, 0), view, &a);
    if (r > 0)
        r = fj_source_fetch((fj_Source *)PyTuple_GET_ITEM(lf->obj, 1), view, &b);
    if (r > 0) {
        int64_t sa = -1, sb = -2;
        int ka = dim_size(a, lf->ival, &sa), kb = ka > 0 ? dim_size(b, lf->n, &sb) : 0;
        r = ka < 0 || kb < 0 ? -1 : ka > 0 && kb > 0 && sa == sb;
    }
    Py_XDECREF(a);
    Py_XDECREF(b);
    return r;
}

/* Python's floor division and modulo of int64 (b != 0, no overflow: checked by the caller). */
static long long floor_div(long long a, long long b)
{
    long long q = a / b;
    return (a % b != 0 && ((a < 0) != (b < 0))) ? q - 1 : q;
}

static long long floor_mod(long long a, long long b)
{
    long long r = a % b;
    return (r != 0 && ((r < 0) != (b < 0))) ? r + b : r;
}

/*
** RELATION: the relation the trace branched on (shape_env.c) has the truth
** it had then.  Each symbol is read from the frame: an input array's size
** (source, dim) or an exact int input (source, -1).  The program runs on a
** stack of int64 as Python would on ints; a value that is not there, not an
** int, past int64, a division by zero or an overflow fails the guard (a
** recompile: never a wrong answer).
*/
static int relation_check(Leaf *lf, const fj_FrameView *view)
{
    long long vals[16], stack[16];
    Py_ssize_t nsym = PyTuple_GET_SIZE(lf->obj), sp = 0;
    if (nsym > 16)
        return 0;
    for (Py_ssize_t i = 0; i < nsym; i++) {
        PyObject *sym = PyTuple_GET_ITEM(lf->obj, i), *v = NULL;
        long dim = PyLong_AsLong(PyTuple_GET_ITEM(sym, 1));
        int r = fj_source_fetch((fj_Source *)PyTuple_GET_ITEM(sym, 0), view, &v);
        if (r <= 0)
            return r;
        if (dim >= 0) {
            int64_t s = 0;
            r = dim_size(v, dim, &s);
            vals[i] = s;
        }
        else if (PyLong_CheckExact(v)) {
            int ovf = 0;
            vals[i] = PyLong_AsLongLongAndOverflow(v, &ovf);
            r = ovf == 0;
            if (vals[i] == -1 && PyErr_Occurred())
                r = -1;
        }
        else
            r = 0;
        Py_DECREF(v);
        if (r <= 0)
            return r;
    }
    for (Py_ssize_t i = 0; i < lf->nprog; i += 2) {
        long long op = lf->prog[i], arg = lf->prog[i + 1], a, b, c = 0;
        if (op == FJ_REL_SYM || op == FJ_REL_CONST) {
            if (sp == 16)
                return 0;
            stack[sp++] = op == FJ_REL_SYM ? vals[arg] : arg;
            continue;
        }
        if (op == FJ_REL_NEG) {
            if (sp < 1 || stack[sp - 1] == LLONG_MIN)
                return 0;
            stack[sp - 1] = -stack[sp - 1];
            continue;
        }
        if (sp < 2)
            return 0;
        b = stack[--sp];
        a = stack[sp - 1];
        switch (op) {
        case FJ_REL_ADD: if (__builtin_add_overflow(a, b, &c)) return 0; break;
        case FJ_REL_SUB: if (__builtin_sub_overflow(a, b, &c)) return 0; break;
        case FJ_REL_MUL: if (__builtin_mul_overflow(a, b, &c)) return 0; break;
        case FJ_REL_FLOORDIV:
        case FJ_REL_MOD:
            if (b == 0 || (a == LLONG_MIN && b == -1))
                return 0;
            c = op == FJ_REL_FLOORDIV ? floor_div(a, b) : floor_mod(a, b);
            break;
        case FJ_REL_LT: c = a < b; break;
        case FJ_REL_LE: c = a <= b; break;
        case FJ_REL_EQ: c = a == b; break;
        case FJ_REL_NE: c = a != b; break;
        case FJ_REL_GT: c = a > b; break;
        case FJ_REL_GE: c = a >= b; break;
        default: return 0;
        }
        stack[sp - 1] = c;
    }
    return sp == 1 && (stack[0] != 0) == (lf->n != 0);
}

static inline int check_leaves(GuardManager *m, PyObject *v, CheckCtx *ctx)
{
    for (Py_ssize_t i = 0; i < m->nleaves; i++) {
        Leaf *lf = m->leaves[i];
        int r = lf->kind == LEAF_NO_ALIASING  ? no_aliasing_check(lf, ctx->view)
                : lf->kind == LEAF_DIMS_EQUAL ? dims_equal_check(lf, ctx->view)
                : lf->kind == LEAF_RELATION   ? relation_check(lf, ctx->view)
                                              : leaf_check(lf, v, MGR_TEXT(m), ctx->reason);
        if (r <= 0) {
            if (r == 0 && ctx->reason != NULL && *ctx->reason == NULL)
                *ctx->reason = Py_NewRef(lf->text);
            return r;
        }
    }
    return 1;
}

static int manager_check(GuardManager *m, PyObject *v, CheckCtx *ctx);

/* Runs m's accessors (m's value is 'v'), reordering them after a failure
** of one that is not first: 1, 0 or -1. */
static int check_children(GuardManager *m, PyObject *v, CheckCtx *ctx)
{
    int r = 1;
    m->busy++;
    for (Py_ssize_t i = 0; i < m->nchildren; i++) {
        GuardManager *c = m->children[i];
        PyObject *d = NULL, *cv = NULL;
        uint64_t tag = 0;
        if (ctx->reason == NULL && (d = tag_dict(c, ctx->view, v)) != NULL) {
            tag = FJ_DICT_VERSION(d);
            if (tag == c->seen_version) {
                ctx->root->skipped_checks++;
                continue;
            }
        }
        r = fj_source_fetch_step(c->src, v, m->keys_pinned, ctx->view, &cv);
        if (r > 0) {
            r = manager_check(c, cv, ctx);
            /* a module attribute vouched for by its __dict__ only when it came
               from that dict (not from the module's __getattr__) */
            if (r > 0 && d != NULL) {
                PyObject *in_dict = NULL;
                if (c->src->kind != FJ_SRC_ATTR ||
                    (fj_dict_lookup(d, c->src->key, 0, &in_dict) == 1 && in_dict == cv))
                    c->seen_version = tag;
                PyErr_Clear(); /* not in the dict, or an odd key: just no skip */
            }
            Py_DECREF(cv);
        }
        else if (r == 0 && ctx->reason == NULL)
            c->fail_count++;
        else if (r == 0)
            set_missing_reason(c, ctx->reason);
        if (r <= 0) {
            if (r == 0 && ctx->reason == NULL && i > 0 && m->busy == 1)
                reorder(m);
            break;
        }
    }
    m->busy--;
    return r;
}

/*
** Checks m, whose value is 'v': 1, 0 or -1.  A manager runs its leaves,
** then its accessors.  The root has no value: its leaves (GLOBAL_STATE) are
** epilogue guards run after the accessors, as the printer shows them.
*/
static int manager_check(GuardManager *m, PyObject *v, CheckCtx *ctx)
{
    int r;
    if (IS_ROOT(m)) {
        r = check_children(m, v, ctx);
        if (r > 0) /* root leaves see the globals dict (GLOBAL_ABSENT) */
            r = check_leaves(m, ctx->view->globals, ctx);
    }
    else {
        r = check_leaves(m, v, ctx);
        if (r > 0 && m->nchildren > 0)
            r = check_children(m, v, ctx);
    }
    if (r == 0 && ctx->reason == NULL)
        m->fail_count++;
    return r;
}

/* One manager of the tree and its subtree (fj_guards_verify). */
static const char *manager_verify(GuardManager *m, GuardManager *parent, int depth)
{
    if (!IS_MANAGER((PyObject *)m))
        return "a child is not a guard manager";
    if (m->depth != depth)
        return "a manager's depth is not its parent's plus one";
    if ((m->src == NULL) != (depth == 0))
        return "a manager without its access path, or a root with one";
    if (m->src != NULL && (m->src->text == NULL || !PyUnicode_Check(m->src->text)))
        return "a manager without its source text";
    if (depth == 1 && m->src->parent != NULL)
        return "a child of the root that is not read from the frame";
    if (depth > 1 && (m->src->parent == NULL || fj_source_same(m->src->parent, parent->src) != 1))
        return "a manager whose access path does not continue its parent's";
    if (m->nleaves > m->leaves_cap || m->nchildren > m->children_cap)
        return "more leaves or children than allocated";
    if (m->busy != 0)
        return "a manager still marked busy after its checks";
    int immutable = m->nchildren == 0 && m->nleaves > 0;
    for (Py_ssize_t i = 0; i < m->nleaves; i++) {
        Leaf *lf = m->leaves[i];
        if (lf == NULL || lf->kind < LEAF_TYPE_MATCH || lf->kind > LEAF_RELATION)
            return "a leaf of no known kind";
        if (lf->kind == LEAF_RELATION && (parent != NULL || lf->prog == NULL || lf->nprog < 2))
            return "a RELATION leaf off the root or without its program";
        if (lf->text == NULL || !PyUnicode_Check(lf->text))
            return "a leaf without its printed text";
        immutable &= lf->immutable;
    }
    if (m->skippable != immutable)
        return "'skippable' disagrees with the leaves and children";
    for (Py_ssize_t i = 0; i < m->nchildren; i++) {
        const char *bad = manager_verify(m->children[i], m, depth + 1);
        if (bad != NULL)
            return bad;
    }
    return NULL;
}

int fj_guards_verify(PyObject *root)
{
    if (!PyObject_TypeCheck(root, fj_RootGuardManager_Type)) {
        PyErr_SetString(PyExc_SystemError, "framejit: guard tree root is not a RootGuardManager");
        return -1;
    }
    const char *bad = manager_verify((GuardManager *)root, NULL, 0);
    if (bad == NULL)
        return 0;
    PyErr_Format(PyExc_SystemError, "framejit: guard tree invariant broken: %s", bad);
    return -1;
}

int fj_guards_check(PyObject *root, const fj_FrameView *view)
{
    if (check_root(root) < 0)
        return -1;
    CheckCtx ctx = {view, (GuardManager *)root, NULL};
    return manager_check((GuardManager *)root, NULL, &ctx);
}

PyObject *fj_guards_check_verbose(PyObject *root, const fj_FrameView *view)
{
    PyObject *reason = NULL;
    if (check_root(root) < 0)
        return NULL;
    CheckCtx ctx = {view, (GuardManager *)root, &reason};
    int r = manager_check((GuardManager *)root, NULL, &ctx);
    if (r < 0) {
        Py_XDECREF(reason);
        return NULL;
    }
    if (r > 0) {
        Py_XDECREF(reason);
        Py_RETURN_NONE;
    }
    if (reason == NULL && !PyErr_Occurred())
        reason = PyUnicode_FromString("(guard failed)");
    return reason;
}

/* --------------------------------------------------------------- printer */

static int format_leaves(GuardManager *m, PyObject *lines)
{
    for (Py_ssize_t i = 0; i < m->nleaves; i++) {
        Leaf *lf = m->leaves[i];
        PyObject *s = PyUnicode_FromFormat("  %s: %U", leaf_names[lf->kind], lf->text);
        if (s == NULL)
            return -1;
        int r = PyList_Append(lines, s);
        Py_DECREF(s);
        if (r < 0)
            return -1;
    }
    return 0;
}

/* Appends m's lines to 'lines', in check order (see manager_check). */
static int format_into(GuardManager *m, PyObject *lines)
{
    if (!IS_ROOT(m) && format_leaves(m, lines) < 0)
        return -1;
    for (Py_ssize_t i = 0; i < m->nchildren; i++)
        if (format_into(m->children[i], lines) < 0)
            return -1;
    if (IS_ROOT(m) && format_leaves(m, lines) < 0)
        return -1;
    return 0;
}

PyObject *fj_guards_format(PyObject *root)
{
    PyObject *lines = NULL, *sep = NULL, *res = NULL;
    if (check_root(root) < 0)
        return NULL;
    lines = Py_BuildValue("[s]", "GUARDS:");
    if (lines == NULL || format_into((GuardManager *)root, lines) < 0)
        goto done;
    sep = PyUnicode_FromString("\n");
    if (sep != NULL)
        res = PyUnicode_Join(sep, lines);
done:
    Py_XDECREF(lines);
    Py_XDECREF(sep);
    return res;
}

static Py_ssize_t count_leaves(GuardManager *m)
{
    Py_ssize_t n = m->nleaves;
    for (Py_ssize_t i = 0; i < m->nchildren; i++)
        n += count_leaves(m->children[i]);
    return n;
}

Py_ssize_t fj_guards_num_leaves(PyObject *root)
{
    if (check_root(root) < 0)
        return -1;
    return count_leaves((GuardManager *)root);
}

/* ----------------------------------------------------- type: GC, dealloc */

static int manager_traverse(GuardManager *self, visitproc visit, void *arg)
{
    Py_VISIT(Py_TYPE(self));
    Py_VISIT(self->src);
    for (Py_ssize_t i = 0; i < self->nleaves; i++) {
        Py_VISIT(self->leaves[i]->obj);
        Py_VISIT(self->leaves[i]->ref);
        Py_VISIT(self->leaves[i]->aux);
    }
    for (Py_ssize_t i = 0; i < self->nchildren; i++)
        Py_VISIT(self->children[i]);
    return 0;
}

void fj_guards_untrack(PyObject *root)
{
    if (root == NULL || !IS_MANAGER(root))
        return;
    GuardManager *m = (GuardManager *)root;
    PyObject_GC_UnTrack(root);
    if (m->src != NULL && PyObject_GC_IsTracked((PyObject *)m->src))
        PyObject_GC_UnTrack(m->src); /* an object item key (tests only) */
    for (Py_ssize_t i = 0; i < m->nleaves; i++)
        if (m->leaves[i]->ref != NULL && PyObject_GC_IsTracked(m->leaves[i]->ref))
            PyObject_GC_UnTrack(m->leaves[i]->ref);
    for (Py_ssize_t i = 0; i < m->nchildren; i++)
        fj_guards_untrack((PyObject *)m->children[i]);
}

static int manager_clear(GuardManager *self)
{
    /* Detach the arrays first: freeing a value may run user code. */
    Leaf **leaves = self->leaves;
    Py_ssize_t nleaves = self->nleaves;
    GuardManager **children = self->children;
    Py_ssize_t nchildren = self->nchildren;
    self->leaves = NULL;
    self->nleaves = self->leaves_cap = 0;
    self->children = NULL;
    self->nchildren = self->children_cap = 0;
    self->skippable = 0;
    for (Py_ssize_t i = 0; i < nleaves; i++)
        leaf_free(leaves[i]);
    PyMem_Free(leaves);
    for (Py_ssize_t i = 0; i < nchildren; i++)
        Py_DECREF(children[i]);
    PyMem_Free(children);
    return 0;
}

static void manager_dealloc(GuardManager *self)
{
    PyTypeObject *tp = Py_TYPE(self);
    PyObject_GC_UnTrack(self);
    manager_clear(self);
    Py_CLEAR(self->src);
    tp->tp_free((PyObject *)self);
    Py_DECREF(tp);
}

/* --------------------------------------------------- Python: managers */
/* Python methods: each returns a new reference, NULL on error. */

static PyObject *mgr_attr(PyObject *self, PyObject *name)
{
    return check_valued(self) < 0 ? NULL
                                  : child_at(self, fj_source_attr(((GuardManager *)self)->src, name));
}

static PyObject *mgr_item(PyObject *self, PyObject *key)
{
    return check_valued(self) < 0 ? NULL
                                  : child_at(self, fj_source_item(((GuardManager *)self)->src, key));
}

static PyObject *mgr_index(PyObject *self, PyObject *arg)
{
    Py_ssize_t i = PyNumber_AsSsize_t(arg, PyExc_OverflowError);
    if (i == -1 && PyErr_Occurred())
        return NULL;
    return check_valued(self) < 0 ? NULL
                                  : child_at(self, fj_source_index(((GuardManager *)self)->src, i));
}

static PyObject *mgr_type_of(PyObject *self, PyObject *unused)
{
    return check_valued(self) < 0 ? NULL
                                  : child_at(self, fj_source_type_of(((GuardManager *)self)->src));
}

#define RETURN_STATUS(expr) return (expr) < 0 ? NULL : Py_NewRef(Py_None)

static PyObject *mgr_add_type_match(PyObject *self, PyObject *tp)
{
    RETURN_STATUS(fj_guard_add_type_match(self, tp));
}
static PyObject *mgr_add_id_match(PyObject *self, PyObject *obj)
{
    RETURN_STATUS(fj_guard_add_id_match(self, obj));
}
static PyObject *mgr_add_equals_match(PyObject *self, PyObject *value)
{
    RETURN_STATUS(fj_guard_add_equals_match(self, value));
}
static PyObject *mgr_add_none_match(PyObject *self, PyObject *unused)
{
    RETURN_STATUS(fj_guard_add_none_match(self));
}
static PyObject *mgr_add_sequence_length(PyObject *self, PyObject *arg)
{
    Py_ssize_t n = PyNumber_AsSsize_t(arg, PyExc_OverflowError);
    if (n == -1 && PyErr_Occurred())
        return NULL;
    RETURN_STATUS(fj_guard_add_sequence_length(self, n));
}
static PyObject *mgr_add_dict_keys(PyObject *self, PyObject *keys)
{
    RETURN_STATUS(fj_guard_add_dict_keys(self, keys));
}
static PyObject *mgr_add_dict_version(PyObject *self, PyObject *d)
{
    RETURN_STATUS(fj_guard_add_dict_version(self, d));
}
static PyObject *mgr_add_tensor_match(PyObject *self, PyObject *args, PyObject *kwds)
{
    if (fj_numpy_ensure() < 0) /* fj_numpy.h: loaded lazily */
        return NULL;
    static char *kwlist[] = {"example", "dynamic_dims", NULL};
    PyObject *example, *dyn = NULL;
    if (!PyArg_ParseTupleAndKeywords(args, kwds, "O|O:add_tensor_match", kwlist, &example, &dyn))
        return NULL;
    (void)fj_torch_ready();
    const fj_ArrayLib *lib = fj_arraylib_of(example);
    RETURN_STATUS((lib ? lib : &fj_numpy_lib)->add_tensor_match(self, example, dyn));
}

static PyObject *mgr_accessors(GuardManager *self, PyObject *unused)
{
    PyObject *list = PyList_New(self->nchildren);
    if (list == NULL)
        return NULL;
    for (Py_ssize_t i = 0; i < self->nchildren; i++)
        PyList_SET_ITEM(list, i, Py_NewRef(self->children[i]));
    return list;
}

static PyObject *mgr_leaves(GuardManager *self, PyObject *unused)
{
    PyObject *list = PyList_New(self->nleaves);
    if (list == NULL)
        return NULL;
    for (Py_ssize_t i = 0; i < self->nleaves; i++) {
        Leaf *lf = self->leaves[i];
        PyObject *s = PyUnicode_FromFormat("%s: %U", leaf_names[lf->kind], lf->text);
        if (s == NULL) {
            Py_DECREF(list);
            return NULL;
        }
        PyList_SET_ITEM(list, i, s);
    }
    return list;
}

static PyObject *mgr_get_source(GuardManager *self, void *c)
{
    return Py_NewRef(MGR_TEXT(self));
}
static PyObject *mgr_get_fail_count(GuardManager *self, void *c)
{
    return PyLong_FromSsize_t(self->fail_count);
}
static PyObject *mgr_repr(GuardManager *self)
{
    return PyUnicode_FromFormat("<%s %R: %zd leaves, %zd accessors>", Py_TYPE(self)->tp_name,
                                MGR_TEXT(self), self->nleaves, self->nchildren);
}

static PyMethodDef mgr_methods[] = {
    {"attr", mgr_attr, METH_O, "attr(name) -> child manager for <src>.name"},
    {"item", mgr_item, METH_O, "item(key) -> child manager for <src>[key]"},
    {"index", mgr_index, METH_O, "index(i) -> child manager for <src>[i]"},
    {"type_of", mgr_type_of, METH_NOARGS, "type_of() -> child manager for type(<src>)"},
    {"add_type_match", mgr_add_type_match, METH_O, "TYPE_MATCH: type(v) is tp"},
    {"add_id_match", mgr_add_id_match, METH_O, "ID_MATCH: v is obj"},
    {"add_equals_match", mgr_add_equals_match, METH_O, "EQUALS_MATCH: same type and v == value"},
    {"add_none_match", mgr_add_none_match, METH_NOARGS, "NONE_MATCH: v is None"},
    {"add_sequence_length", mgr_add_sequence_length, METH_O,
     "SEQUENCE_LENGTH: exact list/tuple of length n"},
    {"add_dict_keys", mgr_add_dict_keys, METH_O, "DICT_KEYS: dict whose keys equal keys, in order"},
    {"add_dict_version", mgr_add_dict_version, METH_O, "DICT_VERSION: dict unchanged since"},
    {"add_tensor_match", (PyCFunction)(void (*)(void))mgr_add_tensor_match,
     METH_VARARGS | METH_KEYWORDS,
     "add_tensor_match(example, dynamic_dims=()): TENSOR_MATCH on a numpy.ndarray or a torch.Tensor"},
    {"accessors", (PyCFunction)mgr_accessors, METH_NOARGS, "child managers in check order"},
    {"leaves", (PyCFunction)mgr_leaves, METH_NOARGS, "leaf texts, 'KIND: text'"},
    {NULL},
};

static PyGetSetDef mgr_getset[] = {
    {"source", (getter)mgr_get_source, NULL, "the access path, as printed", NULL},
    {"fail_count", (getter)mgr_get_fail_count, NULL, "failures of this subtree", NULL},
    {NULL},
};

static PyType_Slot mgr_slots[] = {
    {Py_tp_dealloc, manager_dealloc},
    {Py_tp_traverse, manager_traverse},
    {Py_tp_clear, manager_clear},
    {Py_tp_repr, mgr_repr},
    {Py_tp_methods, mgr_methods},
    {Py_tp_getset, mgr_getset},
    {Py_tp_doc, "A node of a guard tree: leaves on one value, accessors to children."},
    {0, NULL},
};
static PyType_Spec mgr_spec = {
    "framejit._C.GuardManager", sizeof(GuardManager), 0,
    Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC | Py_TPFLAGS_BASETYPE |
        Py_TPFLAGS_DISALLOW_INSTANTIATION,
    mgr_slots};

/* ------------------------------------------------------ Python: the root */

/* A frame view built from Python arguments (for tests and benchmarks). */
typedef struct {
    fj_FrameView view;
    PyObject *seq;      /* strong */
    PyObject **slots;   /* small or PyMem */
    PyObject *small[16];
} PyView;

static void pyview_release(PyView *pv)
{
    if (pv->slots != pv->small)
        PyMem_Free(pv->slots);
    Py_CLEAR(pv->seq);
}

/* Fills 'pv' from (localsplus, closure, globals, builtins).  0 or -1. */
static int pyview_init(PyView *pv, PyObject *localsplus, PyObject *closure, PyObject *globals,
                       PyObject *builtins)
{
    memset(pv, 0, sizeof(*pv));
    pv->slots = pv->small;
    if (closure == Py_None)
        closure = NULL;
    if (globals == Py_None)
        globals = NULL;
    if (builtins == Py_None)
        builtins = NULL;
    if (closure != NULL && !PyTuple_Check(closure)) {
        PyErr_SetString(PyExc_TypeError, "closure must be a tuple of cells or None");
        return -1;
    }
    if ((globals != NULL && !PyDict_Check(globals)) ||
        (builtins != NULL && !PyDict_Check(builtins))) {
        PyErr_SetString(PyExc_TypeError, "globals and builtins must be dicts or None");
        return -1;
    }
    pv->seq = PySequence_Fast(localsplus, "localsplus must be a list");
    if (pv->seq == NULL)
        return -1;
    Py_ssize_t n = PySequence_Fast_GET_SIZE(pv->seq);
    if (n > (Py_ssize_t)(sizeof(pv->small) / sizeof(pv->small[0]))) {
        pv->slots = PyMem_Malloc(n * sizeof(PyObject *));
        if (pv->slots == NULL) {
            pv->slots = pv->small;
            Py_CLEAR(pv->seq);
            PyErr_NoMemory();
            return -1;
        }
    }
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *o = PySequence_Fast_GET_ITEM(pv->seq, i);
        pv->slots[i] = o == null_slot ? NULL : o;
    }
    pv->view.localsplus = pv->slots;
    pv->view.nlocalsplus = n;
    pv->view.closure = closure;
    pv->view.globals = globals;
    pv->view.builtins = builtins;
    return 0;
}

static char *check_kwlist[] = {"localsplus", "closure", "globals", "builtins", NULL};

static PyObject *root_check(PyObject *self, PyObject *args, PyObject *kwds)
{
    PyObject *ls, *cl = NULL, *g = NULL, *b = NULL;
    PyView pv;
    if (!PyArg_ParseTupleAndKeywords(args, kwds, "O|OOO:check", check_kwlist, &ls, &cl, &g, &b))
        return NULL;
    if (pyview_init(&pv, ls, cl, g, b) < 0)
        return NULL;
    int r = fj_guards_check(self, &pv.view);
    pyview_release(&pv);
    return r < 0 ? NULL : PyBool_FromLong(r);
}

static PyObject *root_check_verbose(PyObject *self, PyObject *args, PyObject *kwds)
{
    PyObject *ls, *cl = NULL, *g = NULL, *b = NULL;
    PyView pv;
    if (!PyArg_ParseTupleAndKeywords(args, kwds, "O|OOO:check_verbose", check_kwlist, &ls, &cl,
                                     &g, &b))
        return NULL;
    if (pyview_init(&pv, ls, cl, g, b) < 0)
        return NULL;
    PyObject *r = fj_guards_check_verbose(self, &pv.view);
    pyview_release(&pv);
    return r;
}

static double now_seconds(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static PyObject *root_bench(PyObject *self, PyObject *args)
{
    PyObject *ls, *cl, *g, *b;
    Py_ssize_t n;
    PyView pv;
    if (!PyArg_ParseTuple(args, "OOOOn:_bench", &ls, &cl, &g, &b, &n))
        return NULL;
    if (pyview_init(&pv, ls, cl, g, b) < 0)
        return NULL;
    double t0 = now_seconds();
    for (Py_ssize_t i = 0; i < n; i++) {
        if (fj_guards_check(self, &pv.view) < 0) {
            pyview_release(&pv);
            return NULL;
        }
    }
    double t1 = now_seconds();
    pyview_release(&pv);
    return PyFloat_FromDouble(t1 - t0);
}

static PyObject *root_local(PyObject *self, PyObject *args)
{
    Py_ssize_t index;
    PyObject *name;
    if (!PyArg_ParseTuple(args, "nO:local", &index, &name))
        return NULL;
    return child_at(self, fj_source_local(index, name));
}

static PyObject *root_global(PyObject *self, PyObject *name)
{
    return child_at(self, fj_source_global(name));
}

static PyObject *root_builtin(PyObject *self, PyObject *name)
{
    return child_at(self, fj_source_builtin(name));
}

static PyObject *root_closure_cell(PyObject *self, PyObject *args)
{
    Py_ssize_t index;
    PyObject *name;
    if (!PyArg_ParseTuple(args, "nO:closure_cell", &index, &name))
        return NULL;
    return child_at(self, fj_source_closure(index, name));
}

static PyObject *root_add_global_state(PyObject *self, PyObject *unused)
{
    RETURN_STATUS(fj_guard_add_global_state(self));
}

static PyObject *root_format(PyObject *self, PyObject *unused)
{
    return fj_guards_format(self);
}

static PyObject *root_num_leaves(PyObject *self, PyObject *unused)
{
    Py_ssize_t n = fj_guards_num_leaves(self);
    return n < 0 ? NULL : PyLong_FromSsize_t(n);
}

static PyObject *root_get_skipped(GuardManager *self, void *c)
{
    return PyLong_FromSsize_t(self->skipped_checks);
}

static PyObject *root_new(PyTypeObject *type, PyObject *args, PyObject *kwds)
{
    if (PyTuple_GET_SIZE(args) != 0 || (kwds != NULL && PyDict_GET_SIZE(kwds) != 0)) {
        PyErr_SetString(PyExc_TypeError, "RootGuardManager() takes no arguments");
        return NULL;
    }
    return fj_guard_root_new();
}

static PyMethodDef root_methods[] = {
    {"local", root_local, METH_VARARGS, "local(index, name) -> manager for frame slot index"},
    {"global_", root_global, METH_O, "global_(name) -> manager for G['name']"},
    {"builtin", root_builtin, METH_O, "builtin(name) -> manager for a builtin"},
    {"closure_cell", root_closure_cell, METH_VARARGS,
     "closure_cell(index, name) -> manager for the contents of closure cell index"},
    {"add_global_state", root_add_global_state, METH_NOARGS,
     "GLOBAL_STATE: numpy's floating-point error state (np.errstate) unchanged"},
    {"check", (PyCFunction)(void (*)(void))root_check, METH_VARARGS | METH_KEYWORDS,
     "check(localsplus, closure=None, globals=None, builtins=None) -> bool"},
    {"check_verbose", (PyCFunction)(void (*)(void))root_check_verbose,
     METH_VARARGS | METH_KEYWORDS,
     "check_verbose(localsplus, closure=None, globals=None, builtins=None) -> None or str"},
    {"format", root_format, METH_NOARGS, "the printer: 'GUARDS:' and one line per leaf"},
    {"num_leaves", root_num_leaves, METH_NOARGS, "number of leaves in the tree"},
    {"_bench", root_bench, METH_VARARGS,
     "_bench(localsplus, closure, globals, builtins, n) -> seconds for n checks"},
    {NULL},
};

static PyGetSetDef root_getset[] = {
    {"skipped_checks", (getter)root_get_skipped, NULL,
     "global subtrees skipped because the globals dict's version tag was unchanged", NULL},
    {NULL},
};

static PyType_Slot root_slots[] = {
    {Py_tp_new, root_new},
    {Py_tp_dealloc, manager_dealloc},
    {Py_tp_traverse, manager_traverse},
    {Py_tp_clear, manager_clear},
    {Py_tp_methods, root_methods},
    {Py_tp_getset, root_getset},
    {Py_tp_doc, "RootGuardManager(): the root of a guard tree, checked against a frame."},
    {0, NULL},
};
static PyType_Spec root_spec = {"framejit._C.RootGuardManager", sizeof(GuardManager), 0,
                                Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC, root_slots};

/* ------------------------------------------------------------------ init */

static PyObject *nullslot_repr(PyObject *self)
{
    return PyUnicode_FromString("NULL_SLOT");
}
static PyType_Slot nullslot_slots[] = {
    {Py_tp_repr, nullslot_repr},
    {Py_tp_doc, "The type of NULL_SLOT: marks an empty frame slot in check(localsplus)."},
    {0, NULL},
};
static PyType_Spec nullslot_spec = {"framejit._C.NullSlotType", sizeof(PyObject), 0,
                                    Py_TPFLAGS_DEFAULT | Py_TPFLAGS_DISALLOW_INSTANTIATION,
                                    nullslot_slots};

int fj_guards_init(PyObject *module)
{
    PyObject *nullslot_type = NULL;
    GuardManager_Type = (PyTypeObject *)PyType_FromSpec(&mgr_spec);
    if (GuardManager_Type == NULL)
        return -1;
    fj_RootGuardManager_Type =
        (PyTypeObject *)PyType_FromSpecWithBases(&root_spec, (PyObject *)GuardManager_Type);
    if (fj_RootGuardManager_Type == NULL)
        return -1;
    nullslot_type = PyType_FromSpec(&nullslot_spec);
    if (nullslot_type == NULL)
        return -1;
    /* The type cannot be called: the sentinel stays unique. */
    null_slot = PyType_GenericAlloc((PyTypeObject *)nullslot_type, 0);
    Py_DECREF(nullslot_type);
    if (null_slot == NULL || (root_text = PyUnicode_FromString("")) == NULL)
        return -1;
    if (PyModule_AddObjectRef(module, "GuardManager", (PyObject *)GuardManager_Type) < 0 ||
        PyModule_AddObjectRef(module, "RootGuardManager", (PyObject *)fj_RootGuardManager_Type) <
            0 ||
        PyModule_AddObjectRef(module, "NULL_SLOT", null_slot) < 0)
        return -1;
    return 0;
}
