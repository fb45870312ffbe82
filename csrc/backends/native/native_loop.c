/*
** native_loop.c: captured loops compiled to C loops (native_loop.h).
*/
#include "builtin_ops.h"
#include "fj_numpy.h"
#include "loop.h"
#include "native_loop.h"

#include <fenv.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

/* ---- value classes ---------------------------------------------------------- */

/* What a body value is, in C: a Python int (int64), float or bool, or a NumPy
   scalar of an FJT type. */
typedef struct {
    int kind; /* FJL_PY_INT, FJL_PY_FLOAT, FJL_PY_BOOL, FJL_NP, FJL_ARRAY; 0: not compiled */
    int type; /* FJT_* for FJL_NP / FJL_ARRAY */
} VClass;

static int np_type_ok(int t)
{
    return t == FJT_F64 || t == FJT_F32 || t == FJT_I64 || t == FJT_I32 || t == FJT_BOOL;
}

/* The class of node 'n' (a placeholder or a computed value of the body). */
static VClass node_class(fj_Node *n)
{
    VClass c = {0, 0};
    if (n->vkind == FJ_VAL_PYSCALAR && n->example != NULL) {
        if (PyBool_Check(n->example))
            c.kind = FJL_PY_BOOL;
        else if (PyLong_CheckExact(n->example))
            c.kind = FJL_PY_INT;
        else if (PyFloat_CheckExact(n->example))
            c.kind = FJL_PY_FLOAT;
        return c;
    }
    if ((n->vkind == FJ_VAL_NPSCALAR || n->vkind == FJ_VAL_ARRAY) && n->dtype != NULL &&
        PyArray_ISNBO(n->dtype->byteorder)) {
        int t = fjn_type_of_descr(n->dtype);
        if (!np_type_ok(t))
            return c;
        if (n->vkind == FJ_VAL_ARRAY && (n->ndim < 1 || n->ndim > 2))
            return c;
        c.kind = n->vkind == FJ_VAL_ARRAY ? FJL_ARRAY : FJL_NP;
        c.type = t;
    }
    return c;
}

/* The class of a constant operand (0 when not a plain number). */
static VClass const_class(PyObject *o)
{
    VClass c = {0, 0};
    if (PyBool_Check(o))
        c.kind = FJL_PY_BOOL;
    else if (PyLong_CheckExact(o)) {
        int overflow;
        long long v = PyLong_AsLongLongAndOverflow(o, &overflow);
        if (!overflow && !(v == -1 && PyErr_Occurred()))
            c.kind = FJL_PY_INT;
        PyErr_Clear();
    }
    else if (PyFloat_CheckExact(o))
        c.kind = FJL_PY_FLOAT;
    else if (PyArray_IsScalar(o, Generic)) {
        PyArray_Descr *d = PyArray_DescrFromScalar(o);
        int t = d != NULL && PyArray_ISNBO(d->byteorder) && Py_TYPE(o) == d->typeobj ? fjn_type_of_descr(d) : 0;
        Py_XDECREF(d);
        if (np_type_ok(t)) {
            c.kind = FJL_NP;
            c.type = t;
        }
    }
    return c;
}

static const char *ctype_of(VClass c)
{
    if (c.kind == FJL_PY_INT)
        return "long long";
    if (c.kind == FJL_PY_FLOAT)
        return "double";
    if (c.kind == FJL_PY_BOOL)
        return "int";
    switch (c.type) {
    case FJT_F64:
        return "double";
    case FJT_F32:
        return "float";
    case FJT_I64:
        return "long long";
    case FJT_I32:
        return "int";
    case FJT_BOOL:
        return "unsigned char";
    }
    return NULL;
}

static int is_float_class(VClass c)
{
    return c.kind == FJL_PY_FLOAT || (c.kind == FJL_NP && (c.type == FJT_F64 || c.type == FJT_F32));
}

static int is_int_class(VClass c)
{
    return c.kind == FJL_PY_INT || c.kind == FJL_PY_BOOL ||
           (c.kind == FJL_NP && (c.type == FJT_I64 || c.type == FJT_I32 || c.type == FJT_BOOL));
}

/* ---- emitting ----------------------------------------------------------------- */

/*
** One body's C text.  Bodies nest (a captured loop inside a captured loop's
** body is a C loop inside the outer one): each level names its values with
** its own prefix ('pfx': n<pfx><k> for node k), reads its placeholders
** through 'expr' (a C expression of its class: the kernel's arguments at the
** top, the enclosing level's values and the inner loop's state below) and
** its arrays through 'arr' (the top level's placeholder that holds them).
*/
typedef struct {
    PyObject *nodes;    /* strong: the body's nodes */
    PyObject *src;      /* borrowed list of str: the function's statements */
    VClass *cls;        /* per body node */
    PyObject **expr;    /* per placeholder: strong str, or NULL for arrays */
    int *arr;           /* per placeholder: the top-level placeholder of an array, or -1 */
    const char *pfx;
    fjn_LoopPlan *top;  /* marks the arrays stored into */
    int depth;
    int *npfloat;       /* set when a NumPy float operation may raise a condition NumPy checks
                           (Python's float arithmetic checks none: its overflow is inf) */
    int top_stores;     /* stores of the top level (an iteration's undo entries, inner loops' aside) */
    /* bounds checks hoisted out of this level's loop: 'hs' (a C int set before
       the loop) is true when every index of the form index + c, or constant,
       is in bounds for every iteration; 'hoist' collects its conditions */
    PyObject *hoist;    /* borrowed list of str, or NULL (no hoisting) */
    const char *hs;
    const char *first, *last; /* C names of the level's first and last index values */
    int ninv;           /* placeholders from this one on hold values fixed during the level's loop */
    unsigned char *keep; /* per body node: FJL_KEEP after it (nothing else forces its computation) */
    /* the level's range saves: one undo entry per store site for the loop's whole run
       (or the top level's block), made before the loop in the version without checks,
       whose stores then log nothing ('logtag': their "if (!logtag) {" lines) */
    PyObject *saves;    /* borrowed list of str, or NULL */
    const char *save_first, *save_count, *save_step, *logtag;
    int *nsites;        /* shared: save sites of the whole function */
    int leaf;           /* the level has no inner loop */
    /* an inner level's chunk version (emit_inner_loop): 'chunk_first' the C name of a
       chunk's first index (NULL: none at this level), 'csites' per store site
       (its line, the line storing into the chunk's buffer, the buffer's
       declaration, its commit), 'chunk_bad' set by a store it cannot take */
    const char *chunk_first;
    PyObject *csites;
    int chunk_bad;
    /* an inner for loop's state (counter_slot): its body's outputs and carried
       slots (borrowed), the C name of its iteration count; NULL elsewhere */
    PyObject *louts, *lcarried;
    const char *lcount;
    VClass *scls;       /* an inner loop's state slots' classes (its S<pfx>v<s>), or NULL */
    /* store-to-load forwarding in the top level's step-1 version (forward_analysis):
       the only store's node (-1: none), per load node its distance back to the
       store (0: loads from memory), the largest distance */
    Py_ssize_t fw_store;
    unsigned char *fw_dist;
    int fw_max;
    int fw_pre;         /* registers loaded before the step-1 loop: fw1_..fw<fw_pre>_, the
                           elements between the store's and the farthest load's (in bounds
                           where those are); the rest get their values from the shift first */
    long long fw_cs;    /* the store's index is i + fw_cs */
    fj_Node *fw_arr;    /* the array stored (a top-level placeholder) */
} Emit;

/* Appends a formatted line to e->src.  0 or -1. */
static int line(Emit *e, const char *fmt, ...)
{
    va_list va;
    va_start(va, fmt);
    PyObject *s = PyUnicode_FromFormatV(fmt, va);
    va_end(va);
    if (s == NULL)
        return -1;
    int r = PyList_Append(e->src, s);
    Py_DECREF(s);
    return r;
}

/* The C expression of a value of class 'c' held in fjl_v expression 'v'. */
static PyObject *field_expr(const char *v, VClass c)
{
    if (c.kind == FJL_PY_FLOAT || (c.kind == FJL_NP && c.type == FJT_F64))
        return PyUnicode_FromFormat("%s.d", v);
    if (c.kind == FJL_NP && c.type == FJT_F32)
        return PyUnicode_FromFormat("%s.f", v);
    return PyUnicode_FromFormat("((%s)%s.i)", ctype_of(c), v);
}

/* The fjl_v member a value of class 'c' is kept in. */
/* whether state 'st' is the loop's index as the last iteration left it: not
   copied per iteration (a register move in loops whose time is their
   instructions: histogram 0.60 -> 0.53 ms at 1e6) but written back as i - step,
   the last iteration's index wherever the loop ends or stops (iterations run
   in order from start; the write-back runs only when one was done) */
static int index_out(const fjn_LoopPlan *lp, int st)
{
    if (lp->out_src[st] != 0 || lp->out[st].kind == FJL_ARRAY)
        return 0;
    for (int k = 0; k < lp->ncarried; k++)
        if (lp->carried_slot[k] == st)
            return 0;
    return 1;
}

static const char *field_of(VClass c)
{
    if (c.kind == FJL_PY_FLOAT || (c.kind == FJL_NP && c.type == FJT_F64))
        return "d";
    if (c.kind == FJL_NP && c.type == FJT_F32)
        return "f";
    return "i";
}

/* An operand as a C expression with its class: a node of the body or a
   constant.  New reference str; NULL with no error when it does not compile,
   with one on error. */
static PyObject *operand(Emit *e, PyObject *a, VClass *c)
{
    if (fj_Node_Check(a)) {
        fj_Node *n = (fj_Node *)a;
        *c = e->cls[n->index];
        if (c->kind == 0 || c->kind == FJL_ARRAY)
            return NULL;
        if (n->kind != FJ_NODE_PLACEHOLDER)
            return PyUnicode_FromFormat("n%s%zd", e->pfx, n->index);
        return Py_XNewRef(e->expr[n->index]);
    }
    *c = const_class(a);
    if (c->kind == FJL_PY_BOOL)
        return PyUnicode_FromString(a == Py_True ? "1" : "0");
    if (c->kind == FJL_PY_INT) {
        long long v = PyLong_AsLongLong(a);
        return PyUnicode_FromFormat("(%lldLL)", v);
    }
    char text[64];
    if (c->kind == FJL_NP) {
        /* a NumPy scalar constant: its value in its C type */
        if (c->type == FJT_F64) {
            double d;
            unsigned long long u;
            PyArray_ScalarAsCtype(a, &d);
            memcpy(&u, &d, 8);
            snprintf(text, sizeof text, "fj_f64(0x%llxULL)", u);
        }
        else if (c->type == FJT_F32) {
            float f;
            unsigned int w;
            PyArray_ScalarAsCtype(a, &f);
            memcpy(&w, &f, 4);
            snprintf(text, sizeof text, "fj_f32(0x%xU)", w);
        }
        else if (c->type == FJT_I64) {
            long long v;
            PyArray_ScalarAsCtype(a, &v);
            snprintf(text, sizeof text, "((long long)%lldLL)", v);
        }
        else if (c->type == FJT_I32) {
            int v;
            PyArray_ScalarAsCtype(a, &v);
            snprintf(text, sizeof text, "((int)%d)", v);
        }
        else {
            unsigned char v;
            PyArray_ScalarAsCtype(a, &v);
            snprintf(text, sizeof text, "((unsigned char)%d)", v != 0);
        }
        return PyUnicode_FromString(text);
    }
    if (c->kind == FJL_PY_FLOAT) {
        double d = PyFloat_AS_DOUBLE(a);
        unsigned long long u;
        memcpy(&u, &d, 8);
        snprintf(text, sizeof text, "fj_f64(0x%llxULL)", u);
        return PyUnicode_FromString(text);
    }
    return NULL;
}

/* Converts expression 'x' of class 'from' to the C type of class 'to'
   exactly as NumPy (or Python) converts it for the operation, with the
   checks that stop the iteration where it would not be exact.  New str. */
static PyObject *convert(Emit *e, PyObject *x, VClass from, VClass to)
{
    const char *ct = ctype_of(to);
    if (is_float_class(to)) {
        if (is_int_class(from) && from.kind != FJL_PY_BOOL && !(from.kind == FJL_NP && from.type != FJT_I64)) {
            /* a Python or int64 value as a float: exact below 2**53 (2**24 for float32);
               NumPy converts larger ones the same way, Python ints more carefully */
            long lim = to.type == FJT_F32 && to.kind == FJL_NP ? 24 : 53;
            if (line(e, "    if (%U > (1LL << %ld) || %U < -(1LL << %ld)) goto stop;", x, lim, x, lim) < 0)
                return NULL;
        }
        if (to.kind == FJL_NP && to.type == FJT_F32 && is_float_class(from) &&
            !(from.kind == FJL_NP && from.type == FJT_F32) &&
            line(e, "    if (fj_fin64(%U) && !fj_fin32((float)(%U))) goto stop; /* NumPy's cast warns */", x, x) < 0)
            return NULL; /* a Python float meeting float32 (NEP 50): its cast overflows to inf */
        return PyUnicode_FromFormat("((%s)(%U))", ct, x);
    }
    if (to.kind == FJL_NP && (to.type == FJT_I32) && from.type != FJT_I32 && from.kind != FJL_PY_BOOL &&
        !(from.kind == FJL_NP && from.type == FJT_BOOL)) {
        if (line(e, "    if (%U > 2147483647LL || %U < -2147483648LL) goto stop;", x, x) < 0)
            return NULL;
    }
    return PyUnicode_FromFormat("((%s)(%U))", ct, x);
}

static int emit_body(Emit *e, Py_ssize_t nph);

/* Node 'n' (a '+' or '-' of int64 type 'ct') a counter of an inner for loop:
   the carried value of a state slot whose next value is 'n' itself, plus or
   minus a bool or an int constant below 2**20 (the counter first).  Its C
   name (borrowed), or NULL. */
static PyObject *counter_slot(Emit *e, fj_Node *n, int code, const char *ct)
{
    if (e->lcarried == NULL || e->hoist == NULL || (code != '+' && code != '-') || strcmp(ct, "long long") != 0)
        return NULL;
    Py_ssize_t nc = PyTuple_GET_SIZE(e->lcarried);
    for (int side = 0; side < (code == '+' ? 2 : 1); side++) {
        PyObject *s = PyTuple_GET_ITEM(n->args, side), *o = PyTuple_GET_ITEM(n->args, 1 - side);
        fj_Node *sn = fj_Node_Check(s) ? (fj_Node *)s : NULL;
        if (sn == NULL || sn->kind != FJ_NODE_PLACEHOLDER || sn->index < 1 || sn->index > nc)
            continue;
        Py_ssize_t slot = PyLong_AsSsize_t(PyTuple_GET_ITEM(e->lcarried, sn->index - 1));
        if (slot < 0 || slot >= PyTuple_GET_SIZE(e->louts) || PyTuple_GET_ITEM(e->louts, slot) != (PyObject *)n) {
            PyErr_Clear();
            continue;
        }
        int small = 0;
        if (PyLong_CheckExact(o)) {
            int overflow;
            long long v = PyLong_AsLongLongAndOverflow(o, &overflow);
            PyErr_Clear();
            small = !overflow && v > -(1LL << 20) && v < (1LL << 20);
        }
        else if (PyBool_Check(o))
            small = 1;
        else if (fj_Node_Check(o)) {
            VClass oc = e->cls[((fj_Node *)o)->index];
            small = oc.kind == FJL_PY_BOOL || (oc.kind == FJL_NP && oc.type == FJT_BOOL);
        }
        if (small && e->expr[sn->index] != NULL)
            return e->expr[sn->index];
    }
    return NULL;
}

/* A store just emitted (its line the last of e->src) at a level with a chunk
   version: its site (the buffer it stores into there, the commit after a
   chunk) when its range is saved ('caddr' its address at the chunk's first
   index), or the level's chunk version given up ('chunk_bad': a store at a
   fixed element, an index not hoisted, a second site of the same array).
   0 or -1. */
static int chunk_site(Emit *e, PyObject *caddr, int site, int A, const char *et, int size, PyObject *sstep, PyObject *cx)
{
    if (e->chunk_first == NULL || e->chunk_bad)
        return 0;
    int taken = caddr != NULL && site >= 0;
    for (Py_ssize_t k = 0; taken && k < PyList_GET_SIZE(e->csites); k++)
        taken = PyLong_AsLong(PyTuple_GET_ITEM(PyList_GET_ITEM(e->csites, k), 4)) != A;
    if (!taken) {
        e->chunk_bad = 1;
        return 0;
    }
    PyObject *orig = PyList_GET_ITEM(e->src, PyList_GET_SIZE(e->src) - 1);
    PyObject *to = PyUnicode_FromFormat("    { char *p = (char *)&cb%s%d[%U - %s]; %s t = %U;", e->pfx, site, e->expr[0],
                                        e->chunk_first, et, cx);
    PyObject *decl = PyUnicode_FromFormat("    %s cb%s%d[FJL_CK];", et, e->pfx, site);
    PyObject *commit = PyUnicode_FromFormat(
        "    { char *d_ = %U; long long sd_ = (%s) * (%U); if (sd_ == %d) memcpy(d_, cb%s%d, (size_t)ck%s * %d);"
        " else for (long long k_ = 0; k_ < ck%s; k_++) memcpy(d_ + k_ * sd_, (char *)cb%s%d + k_ * %d, %d); }",
        caddr, e->save_step, sstep, size, e->pfx, site, e->pfx, size, e->pfx, e->pfx, site, size, size);
    PyObject *fence = PyUnicode_FromFormat("    FJL_FENCE(cb%s%d);", e->pfx, site);
    PyObject *t = to && decl && commit && fence ? Py_BuildValue("(OOOOiO)", orig, to, decl, commit, A, fence) : NULL;
    Py_XDECREF(fence);
    int r = t == NULL || PyList_Append(e->csites, t) < 0 ? -1 : 0;
    Py_XDECREF(to);
    Py_XDECREF(decl);
    Py_XDECREF(commit);
    Py_XDECREF(t);
    return r;
}
static PyObject *without_checks(PyObject *lines, Py_ssize_t from, Py_ssize_t to, const char *hs);

/* The lines of the undo log's calls (fjl_save, fjl_log1: they take the log first). */
#define FJL_LOGGED "(&lg, "

/* lines[from:to] without those holding 'tag'.  New list, NULL on error. */
static PyObject *without_tag(PyObject *lines, Py_ssize_t from, Py_ssize_t to, const char *tag)
{
    PyObject *out = PyList_New(0), *t = PyUnicode_FromString(tag);
    for (Py_ssize_t k = from; out != NULL && t != NULL && k < to; k++) {
        PyObject *l = PyList_GET_ITEM(lines, k);
        if (PyUnicode_Find(l, t, 0, PyUnicode_GET_LENGTH(l), 1) < 0 && PyList_Append(out, l) < 0)
            Py_CLEAR(out);
    }
    if (t == NULL)
        Py_CLEAR(out);
    Py_XDECREF(t);
    return out;
}

/* 1 when a line of 'lines' holds 's' (0 on error: an error is found by the caller's next call). */
static int has_line_with(PyObject *lines, const char *s)
{
    PyObject *t = PyUnicode_FromString(s);
    int has = 0;
    for (Py_ssize_t k = 0; t != NULL && !has && k < PyList_GET_SIZE(lines); k++) {
        PyObject *l = PyList_GET_ITEM(lines, k);
        has = PyUnicode_Find(l, t, 0, PyUnicode_GET_LENGTH(l), 1) >= 0;
    }
    Py_XDECREF(t);
    return has;
}

/* cw_, the chunk versions' condition (chunk_version, top_chunks), as C: no array
   they store is read, none overlaps another array of the kernel.  New str. */
static PyObject *cw_text(fjn_LoopPlan *lp)
{
    PyObject *cw = PyUnicode_FromString("    int cw_ = 1; (void)cw_;");
    for (int ca = 0; cw != NULL && ca < lp->nph; ca++) {
        if (lp->ph[ca].kind != FJL_ARRAY || !lp->ph[ca].chunked)
            continue;
        if (lp->ph[ca].loaded)
            Py_SETREF(cw, PyUnicode_FromFormat("%U cw_ = 0;", cw));
        for (int cb = 0; cw != NULL && cb < lp->nph; cb++)
            if (cb != ca && lp->ph[cb].kind == FJL_ARRAY)
                Py_SETREF(cw, PyUnicode_FromFormat("%U\n    cw_ = cw_ && fjl_disj(&v[%d], %d, %d, &v[%d], %d, %d);", cw, ca,
                                                   lp->ph[ca].ndim, fjn_type_size(lp->ph[ca].type), cb, lp->ph[cb].ndim,
                                                   fjn_type_size(lp->ph[cb].type)));
    }
    return cw;
}

/* Whether str l starts with 'prefix'. */
static int starts_with(PyObject *l, const char *prefix)
{
    PyObject *t = PyUnicode_FromString(prefix);
    int r = t != NULL && PyUnicode_Tailmatch(l, t, 0, PY_SSIZE_T_MAX, -1) == 1;
    Py_XDECREF(t);
    PyErr_Clear();
    return r;
}

/* A chunk's body: lines[from:to] appended to 'out', each store of a chunk
   site storing into its buffer (counted in *found); with 'cm' (an inner
   level's prefix) the sticky overflow ORed into the chunk's own cm<pfx>.
   0, or -1 on error. */
static int chunk_body(PyObject *out, PyObject *lines, Py_ssize_t from, Py_ssize_t to, PyObject *csites, int *found,
                      const char *cm)
{
    for (Py_ssize_t k = from; k < to; k++) {
        PyObject *x = PyList_GET_ITEM(lines, k), *y = NULL;
        for (Py_ssize_t s = 0; y == NULL && s < PyList_GET_SIZE(csites); s++) {
            PyObject *cs = PyList_GET_ITEM(csites, s);
            if (PyUnicode_Compare(x, PyTuple_GET_ITEM(cs, 0)) == 0) {
                y = Py_NewRef(PyTuple_GET_ITEM(cs, 1));
                (*found)++;
            }
        }
        if (y == NULL && cm != NULL && starts_with(x, "    ovf_ |= ")) { /* no dependence across chunks */
            PyObject *v = PyUnicode_Substring(x, 12, PyUnicode_GET_LENGTH(x));
            y = v != NULL ? PyUnicode_FromFormat("    cm%s |= %U", cm, v) : NULL;
            Py_XDECREF(v);
            if (y == NULL)
                return -1;
        }
        if (y == NULL)
            y = Py_NewRef(x);
        int bad = PyList_Append(out, y) < 0;
        Py_DECREF(y);
        if (bad)
            return -1;
    }
    return 0;
}

/* A chunk's end, appended to 'out': its buffers fenced, its conditions' test
   'test' (new ref, taken), its commits (a whole chunk's count 'ck' is the
   constant 'ckw'). 0, or -1 on error. */
static int chunk_end(PyObject *out, PyObject *csites, PyObject *test, const char *ck, const char *ckw, int whole)
{
    Py_ssize_t ns = PyList_GET_SIZE(csites);
    int bad = test == NULL;
    for (Py_ssize_t k = 0; !bad && k < ns; k++)
        bad = PyList_Append(out, PyTuple_GET_ITEM(PyList_GET_ITEM(csites, k), 5)) < 0;
    bad = bad || PyList_Append(out, test) < 0;
    Py_XDECREF(test);
    PyObject *ckn = PyUnicode_FromFormat("(size_t)%s *", ck), *ckc = PyUnicode_FromFormat("(size_t)%s *", ckw);
    for (Py_ssize_t k = 0; !bad && k < ns; k++) {
        PyObject *c = PyTuple_GET_ITEM(PyList_GET_ITEM(csites, k), 3);
        PyObject *l = whole ? (ckn && ckc ? PyUnicode_Replace(c, ckn, ckc, -1) : NULL) : Py_NewRef(c);
        bad = l == NULL || PyList_Append(out, l) < 0;
        Py_XDECREF(l);
    }
    Py_XDECREF(ckn);
    Py_XDECREF(ckc);
    return bad ? -1 : 0;
}

/* The step-1 version's forwarding registers loaded from memory before its loop
   (forward_analysis: the elements before the store's, the ones the loads
   further back read first).  New str ("" without forwarding), NULL on error. */
static PyObject *fw_preload(Emit *e)
{
    PyObject *pre = PyUnicode_FromString("");
    for (int k = 1; pre != NULL && e->fw_store >= 0 && k <= e->fw_pre; k++) {
        int sz = fjn_type_size(e->cls[e->fw_arr->index].type);
        Py_SETREF(pre, PyUnicode_FromFormat("%U        memcpy(&fw%d_, A%d + (i + %lld) * %d, %d);\n", pre, k,
                                            e->arr[e->fw_arr->index], e->fw_cs - k, sz, sz));
    }
    return pre;
}

/*
** The top level's chunk version (a level without inner loops, its step-1
** version; chunk_version's for the top level): the block's iterations in
** chunks of FJL_CK storing into buffers, committed after the chunk's
** conditions are tested (noundo: each iteration stops before its store, so a
** stop commits the chunk's iterations before it), instead of saving the
** block's ranges first (ema: the save, a read of the output from memory
** before the block, cost about a tenth of its time).  'ucl' the body's lines
** without checks (as emitted: the stores' lines match csites), 'ttext' the
** state's update after an iteration.  Its text (the stores' gotos already
** aimed), or Py_None when the level has none; NULL on error.
*/
static PyObject *top_chunks(Emit *e, PyObject *ucl, PyObject *ttext, int noundo, int keeps)
{
    Py_ssize_t ns = e->csites ? PyList_GET_SIZE(e->csites) : 0;
    if (e->chunk_first == NULL || e->chunk_bad || ns == 0 || ttext == NULL || (noundo && keeps))
        return Py_NewRef(Py_None);
    /* (noundo: the flags tested instead of the values, as the block's test
       would; a NumPy float operation whose value nothing uses would need its
       FJL_KEEP, which noundo dropped: 'keeps', no chunks then) */
    PyObject *body = noundo ? without_tag(ucl, 0, PyList_GET_SIZE(ucl), "/*fpv*/") : Py_NewRef(ucl);
    if (body == NULL)
        return NULL;
    Py_ssize_t nf = PyList_GET_SIZE(body);
    PyObject *out = PyList_New(0), *l;
    int bad = out == NULL, found = 0;
#define TC_ADD(x) do { l = (x); bad = bad || l == NULL || PyList_Append(out, l) < 0; Py_XDECREF(l); } while (0)
    /* forwarding (its array's loads all read registers here, or cw_ is 0): the
       registers from memory first, as the step-1 version's (the elements before
       the block's, committed) */
    TC_ADD(fw_preload(e));
    TC_ADD(PyUnicode_FromString("        while (ran < bc_) {"));
    TC_ADD(PyUnicode_FromString("        long long jc_ = i, ck = bc_ - ran < FJL_CKT ? bc_ - ran : FJL_CKT;"));
    PyObject *cks = PyUnicode_FromString("[FJL_CK]"), *ckt = PyUnicode_FromString("[FJL_CKT]");
    for (Py_ssize_t k = 0; !bad && k < ns; k++)
        TC_ADD(cks && ckt ? PyUnicode_Replace(PyTuple_GET_ITEM(PyList_GET_ITEM(e->csites, k), 2), cks, ckt, -1) : NULL);
    Py_XDECREF(cks);
    Py_XDECREF(ckt);
    for (int whole = 1; whole >= 0; whole--) {
        TC_ADD(whole ? PyUnicode_FromString("        if (ck == FJL_CKT) {") : PyUnicode_FromString("        } else {"));
        TC_ADD(PyUnicode_FromFormat("        for (long long ie_ = jc_ + %s; i < ie_; i++) {", whole ? "FJL_CKT" : "ck"));
        bad = bad || chunk_body(out, body, 0, nf, e->csites, &found, NULL) < 0;
        TC_ADD(Py_NewRef(ttext));
        TC_ADD(PyUnicode_FromString("        }"));
        /* the chunk's conditions, then its commit (a whole chunk's copy of a constant size) */
        bad = bad || chunk_end(out, e->csites,
                               PyUnicode_FromString("        if (ovf_ < 0 || (FJL_NPF && (fj_fetest(FJ_FPE) & ~ignore))) goto slow;"),
                               "ck", "FJL_CKT", whole) < 0;
    }
    TC_ADD(PyUnicode_FromString("        }"));
    TC_ADD(PyUnicode_FromString("        ran += (int)ck;\n        }"));
#undef TC_ADD
    Py_DECREF(body);
    if (bad) {
        Py_XDECREF(out);
        return NULL;
    }
    if (found != 2 * ns) {
        Py_DECREF(out);
        return Py_NewRef(Py_None);
    }
    PyObject *sep = PyUnicode_FromString("\n"), *text = sep ? PyUnicode_Join(sep, out) : NULL;
    Py_XDECREF(sep);
    Py_DECREF(out);
    /* the body's stops: the block again (a chunk's stores are exact: cw_), or
       (noundo) the chunk's iterations before the stop kept */
    PyObject *gs = PyUnicode_FromString("goto stop;"), *to = PyUnicode_FromString("goto slow;");
    PyObject *on = PyUnicode_FromString("fwon_"), *one = PyUnicode_FromString("1");
    Py_XSETREF(text, text && gs && to ? PyUnicode_Replace(text, gs, to, -1) : NULL);
    Py_XSETREF(text, text && on && one ? PyUnicode_Replace(text, on, one, -1) : NULL);
    Py_XDECREF(gs);
    Py_XDECREF(to);
    Py_XDECREF(on);
    Py_XDECREF(one);
    if (text != NULL)
        for (Py_ssize_t k = 0; k < ns; k++)
            e->top->ph[PyLong_AsLong(PyTuple_GET_ITEM(PyList_GET_ITEM(e->csites, k), 4))].chunked = 1;
    return text;
}

/*
** An inner level's chunk version (the first of its versions: 'hs' and cw_
** hold).  A chunk of at most FJL_CK iterations stores into buffers; its
** conditions (a sticky int overflow, a NumPy float condition, FJL_NPF) are
** tested before it commits them to the arrays, so nothing is stored past the
** iteration that raised one and no range is saved first (a row's save cost a
** stencil over rows a third of its time: life_step, conv2d3x3, jacobi2d).
** Sound where cw_ holds (the top level's declarations): no array it stores is
** read by the kernel or overlaps another array of the kernel, so the chunks
** committed before a stop hold what the eager loop stores there again.  Taken
** for a level without inner loops, a step of 1, every store of a moving saved
** range (a site per array).  'fast' is the level's version without checks:
** its first line the loop's head, its last two the loop's end and the sticky
** overflow's test.  New list; Py_None when the level has none; NULL on error.
*/
static PyObject *chunk_version(Emit *in, PyObject *fast, const char *hs)
{
    Py_ssize_t nf = PyList_GET_SIZE(fast), ns = in->csites ? PyList_GET_SIZE(in->csites) : 0;
    if (in->chunk_first == NULL || in->chunk_bad || !in->leaf || ns == 0 || nf < 3 ||
        PyUnicode_CompareWithASCIIString(PyList_GET_ITEM(fast, nf - 2), "    }") != 0 ||
        !starts_with(PyList_GET_ITEM(fast, 0), "    for (long long j"))
        return Py_NewRef(Py_None);
    const char *p = in->pfx, *jc = in->chunk_first;
    PyObject *out = PyList_New(0), *l;
    int bad = out == NULL;
#define CV_ADD(x) do { l = (x); bad = bad || l == NULL || PyList_Append(out, l) < 0; Py_XDECREF(l); } while (0)
    CV_ADD(PyUnicode_FromFormat("    if (%s && cw_) {", hs));
    CV_ADD(PyUnicode_FromFormat("    for (long long %s = hf%s, ce%s = hf%s + hn%s; %s < ce%s; %s += FJL_CK) {", jc, p, p, p, p,
                                jc, p, jc));
    CV_ADD(PyUnicode_FromFormat("    long long ck%s = ce%s - %s < FJL_CK ? ce%s - %s : FJL_CK, cm%s = 0;", p, p, jc, p, jc, p));
    for (Py_ssize_t k = 0; !bad && k < ns; k++)
        CV_ADD(Py_NewRef(PyTuple_GET_ITEM(PyList_GET_ITEM(in->csites, k), 2)));
    /* a whole chunk (its count a constant: its loop vectorized without a remainder,
       its commit an inline copy), or the last, shorter one */
    int found = 0;
    for (int whole = 1; whole >= 0; whole--) {
        CV_ADD(whole ? PyUnicode_FromFormat("    if (ck%s == FJL_CK) {", p) : PyUnicode_FromString("    } else {"));
        CV_ADD(whole ? PyUnicode_FromFormat("    for (long long j%s = %s; j%s < %s + FJL_CK; j%s++) {", p, jc, p, jc, p)
                     : PyUnicode_FromFormat("    for (long long j%s = %s; j%s < %s + ck%s; j%s++) {", p, jc, p, jc, p, p));
        bad = bad || chunk_body(out, fast, 1, nf - 2, in->csites, &found, p) < 0;
        CV_ADD(PyUnicode_FromString("    }"));
        char ck[48];
        snprintf(ck, sizeof ck, "ck%s", p);
        bad = bad || chunk_end(out, in->csites,
                               PyUnicode_FromFormat("    if ((ovf_ | cm%s) < 0 || (FJL_NPF && (fj_fetest(FJ_FPE) & ~ignore))) goto stop;", p),
                               ck, "FJL_CK", whole) < 0;
    }
    CV_ADD(PyUnicode_FromString("    }"));
    CV_ADD(PyUnicode_FromString("    }"));
#undef CV_ADD
    if (bad) {
        Py_XDECREF(out);
        return NULL;
    }
    if (found != 2 * ns) { /* a store line not found as emitted: no chunk version */
        Py_DECREF(out);
        return Py_NewRef(Py_None);
    }
    for (Py_ssize_t k = 0; k < ns; k++)
        in->top->ph[PyLong_AsLong(PyTuple_GET_ITEM(PyList_GET_ITEM(in->csites, k), 4))].chunked = 1;
    return out;
}

/* 1 when a body's nodes hold a loop's break (a loop_exit node with slots). */
static int has_breaks(PyObject *nodes)
{
    for (Py_ssize_t k = 0; nodes != NULL && k < PyList_GET_SIZE(nodes); k++) {
        fj_Node *m = (fj_Node *)PyList_GET_ITEM(nodes, k);
        if (m->kind == FJ_NODE_CALL && m->op == &fj_loop_exit_row && PyTuple_GET_SIZE(m->args) > 3)
            return 1;
    }
    return 0;
}

/*
** A captured loop inside the body: its own body as a C loop at the next
** level, its state in S<pfx><k>[] (read by the loop_item nodes after it).
** 1, 0 when it does not compile, -1 on error.
*/
static int emit_inner_loop(Emit *e, fj_Node *n)
{
    PyObject *body = fj_loop_body(n->target);
    PyObject *outs = body ? fj_graph_outputs(body) : NULL;
    PyObject *carried = body ? PyObject_GetAttrString(n->target, "carried") : NULL;
    Emit in;
    int r = 0;
    char pfx[32];
    memset(&in, 0, sizeof in);
    int wneg0 = 0, wnegs = 0, wl = fj_loop_while(n->target, &wneg0, &wnegs);
    PyObject *wc0 = NULL; /* a while loop: its test's first value (C) */
    if (body == NULL || outs == NULL || carried == NULL || e->depth > 6)
        goto out;
    Py_ssize_t nph = fj_graph_nplaceholders(body), nstate = PyTuple_GET_SIZE(outs) - wl;
    Py_ssize_t ncarried = PyTuple_GET_SIZE(carried), na = PyTuple_GET_SIZE(n->args);
    if (na != 3 + nstate + (nph - 1 - ncarried) + wl)
        goto out;
    if (wl) {
        VClass cc;
        wc0 = operand(e, PyTuple_GET_ITEM(n->args, na - 1), &cc);
        if (wc0 == NULL) {
            r = PyErr_Occurred() ? -1 : 0;
            goto out;
        }
        if (cc.kind == 0 || cc.kind == FJL_ARRAY)
            goto out;
    }
    snprintf(pfx, sizeof pfx, "%s%zd_", e->pfx, n->index);
    in.nodes = PyObject_GetAttrString(body, "nodes");
    in.src = e->src;
    in.pfx = pfx;
    in.top = e->top;
    in.depth = e->depth + 1;
    in.npfloat = e->npfloat;
    Py_ssize_t nn = in.nodes ? PyList_GET_SIZE(in.nodes) : 0;
    in.cls = PyMem_Calloc((size_t)(nn ? nn : 1), sizeof(VClass));
    in.expr = PyMem_Calloc((size_t)(nph ? nph : 1), sizeof(PyObject *));
    in.arr = PyMem_Calloc((size_t)(nph ? nph : 1), sizeof(int));
    if (in.nodes == NULL || in.cls == NULL || in.expr == NULL || in.arr == NULL) {
        r = -1;
        goto out;
    }
    for (Py_ssize_t k = 0; k < nn; k++)
        in.cls[k] = node_class((fj_Node *)PyList_GET_ITEM(in.nodes, k));
    /* the bounds: Python ints */
    PyObject *bound[3] = {NULL, NULL, NULL};
    for (int k = 0; k < 3; k++) {
        VClass bc;
        bound[k] = operand(e, PyTuple_GET_ITEM(n->args, k), &bc);
        if (bound[k] == NULL || bc.kind != FJL_PY_INT) {
            for (int j = 0; j <= k; j++)
                Py_XDECREF(bound[j]);
            r = PyErr_Occurred() ? -1 : 0;
            goto out;
        }
    }
    /* the state: every slot's class (from the body's outputs), initialized from
       the arguments (a slot the body sets before it reads may start unset) */
    VClass *scls = PyMem_Calloc((size_t)(nstate ? nstate : 1), sizeof(VClass));
    if (scls == NULL)
        r = -1;
    in.scls = scls; /* (its breaks set them) */
    for (Py_ssize_t s = 0; r == 0 && s < nstate; s++) {
        PyObject *o = PyTuple_GET_ITEM(outs, s);
        scls[s] = fj_Node_Check(o) ? in.cls[((fj_Node *)o)->index] : const_class(o);
        if (scls[s].kind == 0 || scls[s].kind == FJL_ARRAY)
            r = 2; /* not compiled */
    }
    /* the state in scalars of their C types (S<pfx>v<slot>; T the next values): a
       union array copied each iteration kept it in memory, where every carried
       value's update waited on a store and a load (mandelbrot's x, y) */
    for (Py_ssize_t s = 0; r == 0 && s < nstate; s++)
        if (line(e, "    %s S%sv%zd = 0, T%sv%zd;", ctype_of(scls[s]), pfx, s, pfx, s) < 0)
            r = -1;
    for (Py_ssize_t s = 0; r == 0 && s < nstate; s++) {
        PyObject *init = PyTuple_GET_ITEM(n->args, 3 + s);
        if (init == Py_None)
            continue;
        VClass ic;
        PyObject *x = operand(e, init, &ic), *cx = NULL;
        if (x == NULL) {
            r = PyErr_Occurred() ? -1 : 2;
            break;
        }
        cx = convert(e, x, ic, scls[s]);
        if (cx == NULL || line(e, "    S%sv%zd = %U;", pfx, s, cx) < 0)
            r = -1;
        Py_DECREF(x);
        Py_XDECREF(cx);
    }
    /* the placeholders: the index, the carried state, the enclosing values */
    for (Py_ssize_t k = 0; r == 0 && k < nph; k++) {
        fj_Node *ph = (fj_Node *)PyList_GET_ITEM(in.nodes, k);
        in.arr[k] = -1;
        if (k == 0) {
            in.expr[k] = PyUnicode_FromFormat("j%s", pfx);
        }
        else if (k <= ncarried) {
            Py_ssize_t slot = PyLong_AsSsize_t(PyTuple_GET_ITEM(carried, k - 1));
            if (in.cls[k].kind == FJL_ARRAY || in.cls[k].kind != scls[slot].kind || in.cls[k].type != scls[slot].type)
                r = 2;
            else if ((in.expr[k] = PyUnicode_FromFormat("S%sv%zd", pfx, slot)) == NULL)
                r = -1;
        }
        else {
            PyObject *arg = PyTuple_GET_ITEM(n->args, 3 + nstate + (k - 1 - ncarried));
            if (in.cls[k].kind == FJL_ARRAY) {
                fj_Node *an = fj_Node_Check(arg) ? (fj_Node *)arg : NULL;
                if (an == NULL || an->kind != FJ_NODE_PLACEHOLDER || e->arr[an->index] < 0)
                    r = 2;
                else
                    in.arr[k] = e->arr[an->index];
                continue;
            }
            VClass ac;
            in.expr[k] = operand(e, arg, &ac);
            if (in.expr[k] != NULL && (ac.kind != in.cls[k].kind || ac.type != in.cls[k].type))
                Py_CLEAR(in.expr[k]);
            if (in.expr[k] == NULL)
                r = PyErr_Occurred() ? -1 : 2;
        }
        if (r == 0 && k == 0 && in.expr[k] == NULL)
            r = -1;
        (void)ph;
    }
    if (r == 0 && in.cls[0].kind != FJL_PY_INT)
        r = 2;
    /* the range's first and last index, for the bounds checks hoisted out */
    char hs[48], hf[48], hl[48];
    snprintf(hs, sizeof hs, "hs%s", pfx);
    snprintf(hf, sizeof hf, "hf%s", pfx);
    snprintf(hl, sizeof hl, "hl%s", pfx);
    in.hs = hs;
    in.first = hf;
    in.last = hl;
    in.hoist = PyList_New(0);
    if (in.hoist == NULL)
        r = -1;
    /* bounds that change with the loop (a symbolic range): within 2**62 (a step
       within 2**30), so the count and the index cannot overflow; else the eager
       loop runs this iteration of the enclosing loop on */
    if (r == 0 && line(e, "    if (!(%U > -(1LL << 62) && %U < (1LL << 62) && %U > -(1LL << 62) && %U < (1LL << 62) && "
                          "%U > -(1LL << 30) && %U < (1LL << 30) && %U != 0)) goto stop;",
                       bound[0], bound[0], bound[1], bound[1], bound[2], bound[2], bound[2]) < 0)
        r = -1;
    if (r == 0 && line(e, "    long long %s = %U, hn%s = %U > 0 ? (%U < %U ? (%U - %U - 1) / %U + 1 : 0) : "
                          "(%U > %U ? (%U - %U - 1) / (-%U) + 1 : 0), %s = %s + (hn%s - 1) * %U; int %s = hn%s > 0;",
                       hf, bound[0], pfx, bound[2], bound[0], bound[1], bound[1], bound[0], bound[2], bound[0],
                       bound[1], bound[0], bound[1], bound[2], hl, hf, pfx, bound[2], hs, pfx) < 0)
        r = -1;
    /* indices within 2**62: an index plus a constant below 2**40 cannot overflow */
    if (r == 0) {
        PyObject *cond = PyUnicode_FromFormat("    %s = %s && %s > -(1LL << 62) && %s < (1LL << 62) && %s > -(1LL << 62) && "
                                              "%s < (1LL << 62);", hs, hs, hf, hf, hl, hl);
        if (cond == NULL || PyList_Append(in.hoist, cond) < 0)
            r = -1;
        Py_XDECREF(cond);
    }
    char hn[48];
    snprintf(hn, sizeof hn, "hn%s", pfx);
    in.saves = PyList_New(0);
    in.save_first = hf;
    in.save_count = hn;
    in.save_step = bound[2] ? PyUnicode_AsUTF8(bound[2]) : NULL;
    in.logtag = hs;
    in.nsites = e->nsites;
    /* counters (counter_slot): a for loop runs hn iterations; a while loop here at
       most 2**26 (more stop the kernel, below) */
    in.louts = outs;
    in.lcarried = carried;
    in.lcount = wl ? "(1LL << 26)" : hn;
    /* a chunk version for a step of 1 (see below) */
    char jc[48];
    snprintf(jc, sizeof jc, "jc%s", pfx);
    if (r == 0 && !wl && bound[2] != NULL && PyUnicode_CompareWithASCIIString(bound[2], "(1LL)") == 0 &&
        !has_breaks(in.nodes)) {
        in.chunk_first = jc;
        if ((in.csites = PyList_New(0)) == NULL)
            r = -1;
    }
    in.ninv = (int)(1 + ncarried);
    if (in.saves == NULL || in.save_step == NULL)
        r = -1;
    /* a while loop: no iteration unless its test's first value lets it; at most 2**26
       iterations here (more stop the kernel: the eager loop takes over, where a
       signal is seen) */
    if (r == 0 && wl && line(e, "    if ((%U != 0) != %d) {", wc0, wneg0) < 0)
        r = -1;
    Py_ssize_t at = PyList_GET_SIZE(e->src);
    if (r == 0 && !wl &&
        line(e, "    for (long long j%s = %U; %U > 0 ? j%s < %U : j%s > %U; j%s += %U) {", pfx, bound[0], bound[2], pfx,
             bound[1], pfx, bound[1], pfx, bound[2]) < 0)
        r = -1;
    if (r == 0 && wl &&
        line(e, "    for (long long j%s = 0;; j%s++) { if (j%s >= (1LL << 26)) goto stop;", pfx, pfx, pfx) < 0)
        r = -1;
    if (r == 0) {
        int b = emit_body(&in, nph);
        r = b < 0 ? -1 : b == 0 ? 2 : 0;
    }
    Py_ssize_t hoisted_n = 0;
    for (Py_ssize_t k = 0; r == 0 && k < PyList_GET_SIZE(in.hoist); k++, hoisted_n++)
        if (PyList_Insert(e->src, at + k, PyList_GET_ITEM(in.hoist, k)) < 0)
            r = -1;
    Py_CLEAR(in.hoist);
    /* the state after the iteration, through T (a swap reads the old values) */
    for (Py_ssize_t s = 0; r == 0 && s < nstate; s++) {
        PyObject *o = PyTuple_GET_ITEM(outs, s);
        VClass oc;
        PyObject *x = operand(&in, o, &oc);
        PyObject *cx = x != NULL ? convert(&in, x, oc, scls[s]) : NULL;
        if (x == NULL || cx == NULL || line(e, "    T%sv%zd = %U;", pfx, s, cx) < 0)
            r = x == NULL && !PyErr_Occurred() ? 2 : -1;
        Py_XDECREF(x);
        Py_XDECREF(cx);
    }
    for (Py_ssize_t s = 0; r == 0 && s < nstate; s++)
        if (line(e, "    S%sv%zd = T%sv%zd;", pfx, s, pfx, s) < 0)
            r = -1;
    if (r == 0 && wl) {
        /* the test after the iteration */
        VClass sc;
        PyObject *x = operand(&in, PyTuple_GET_ITEM(outs, nstate), &sc);
        if (x == NULL || sc.kind == 0 || sc.kind == FJL_ARRAY)
            r = x == NULL && PyErr_Occurred() ? -1 : 2;
        else if (line(e, "    if ((%U != 0) == %d) break;", x, wnegs) < 0)
            r = -1;
        Py_XDECREF(x);
    }
    if (r == 0 && (line(e, "    }") < 0 ||
                   line(e, "    if (ovf_ < 0) goto stop; /* a wrapped int of the loop's version without checks */") < 0))
        r = -1;
    if (r == 0) {
        /* two versions of the loop: without the hoisted checks when they hold */
        Py_ssize_t from = at + hoisted_n, to = PyList_GET_SIZE(e->src);
        PyObject *fast = without_checks(e->src, from, to, hs);
        PyObject *slow = PyList_GetSlice(e->src, from, to);
        PyObject *chunk = fast != NULL ? chunk_version(&in, fast, hs) : NULL;
        PyObject *head = chunk != NULL && chunk != Py_None ? PyUnicode_FromFormat("    } else if (%s) {", hs)
                                                            : PyUnicode_FromFormat("    if (%s) {", hs);
        PyObject *mid = PyUnicode_FromString("    } else {"), *tail = PyUnicode_FromString("    }");
        PyObject *all = fast && slow && chunk && head && mid && tail ? PyList_New(0) : NULL;
        int bad = all == NULL;
        for (Py_ssize_t k = 0; !bad && chunk != Py_None && k < PyList_GET_SIZE(chunk); k++)
            bad = PyList_Append(all, PyList_GET_ITEM(chunk, k)) < 0;
        bad = bad || PyList_Append(all, head) < 0;
        for (Py_ssize_t k = 0; !bad && k < PyList_GET_SIZE(in.saves); k++)
            bad = PyList_Append(all, PyList_GET_ITEM(in.saves, k)) < 0;
        for (Py_ssize_t k = 0; !bad && k < PyList_GET_SIZE(fast); k++)
            bad = PyList_Append(all, PyList_GET_ITEM(fast, k)) < 0;
        bad = bad || PyList_Append(all, mid) < 0;
        for (Py_ssize_t k = 0; !bad && k < PyList_GET_SIZE(slow); k++)
            bad = PyList_Append(all, PyList_GET_ITEM(slow, k)) < 0;
        bad = bad || PyList_Append(all, tail) < 0 || PyList_SetSlice(e->src, from, to, all) < 0;
        Py_XDECREF(fast);
        Py_XDECREF(slow);
        Py_XDECREF(chunk);
        Py_XDECREF(head);
        Py_XDECREF(mid);
        Py_XDECREF(tail);
        Py_XDECREF(all);
        if (bad)
            r = -1;
    }
    if (r == 0 && wl && line(e, "    }") < 0) /* the test's first value's block */
        r = -1;
    for (int k = 0; k < 3; k++)
        Py_XDECREF(bound[k]);
    PyMem_Free(scls);
    r = r == 0 ? 1 : r == 2 ? 0 : -1;
out:
    Py_XDECREF(wc0);
    Py_XDECREF(carried);
    Py_XDECREF(in.saves);
    Py_XDECREF(in.csites);
    Py_XDECREF(in.nodes);
    PyMem_Free(in.cls);
    if (in.expr != NULL) {
        for (Py_ssize_t k = 0; body != NULL && k < fj_graph_nplaceholders(body); k++)
            Py_XDECREF(in.expr[k]);
        PyMem_Free(in.expr);
    }
    PyMem_Free(in.arr);
    return r;
}

/* 'lines' (a list of str) without the bounds checks hoisted into flag 'hs'
   (the lines "if (!hs) { ... }"): the loop's version for when they hold.
   New list, NULL on error. */
static PyObject *without_checks(PyObject *lines, Py_ssize_t from, Py_ssize_t to, const char *hs)
{
    char tag[64];
    snprintf(tag, sizeof tag, "if (!%s) {", hs);
    return without_tag(lines, from, to, tag);
}

/* The form of int operand 'o' for hoisting: 1 a constant c, 2 this level's
   loop index plus c, 3 a value fixed during the level's loop plus c (an
   invariant Python int placeholder, *root); 0 none.  Sums and differences of
   such a value and constants nest ((i + di) - 1); every partial constant
   stays below 2**40 in magnitude. */
static int affine_form(Emit *e, PyObject *o, long long *c, fj_Node **root, int depth)
{
    fj_Node *ix0 = e->nodes ? (fj_Node *)PyList_GET_ITEM(e->nodes, 0) : NULL;
    *root = NULL;
    if (PyLong_CheckExact(o)) {
        int overflow;
        *c = PyLong_AsLongLongAndOverflow(o, &overflow);
        PyErr_Clear();
        return !overflow && *c > -(1LL << 40) && *c < (1LL << 40) ? 1 : 0;
    }
    if (!fj_Node_Check(o) || ix0 == NULL)
        return 0;
    fj_Node *n = (fj_Node *)o;
    if (n == ix0) {
        *c = 0;
        *root = n;
        return 2;
    }
    if (n->kind == FJ_NODE_PLACEHOLDER) {
        if (n->index < e->ninv || e->cls[n->index].kind != FJL_PY_INT || e->expr[n->index] == NULL)
            return 0;
        *c = 0;
        *root = n;
        return 3;
    }
    if (depth > 8 || n->kind != FJ_NODE_CALL || n->op == NULL || PyTuple_GET_SIZE(n->args) != 2 ||
        !(n->op->kind == FJ_OP_BINOP || n->op->kind == FJ_OP_INPLACE))
        return 0;
    int add = n->op->code == NB_ADD || n->op->code == NB_INPLACE_ADD;
    int subtract = n->op->code == NB_SUBTRACT || n->op->code == NB_INPLACE_SUBTRACT;
    PyObject *a = PyTuple_GET_ITEM(n->args, 0), *b = PyTuple_GET_ITEM(n->args, 1);
    PyObject *k = fj_Node_Check(a) && PyLong_CheckExact(b) ? b : add && fj_Node_Check(b) && PyLong_CheckExact(a) ? a : NULL;
    if (k == NULL || !(add || subtract))
        return 0;
    long long inner;
    int f = affine_form(e, k == b ? a : b, &inner, root, depth + 1);
    if (f != 2 && f != 3)
        return 0;
    int overflow;
    long long v = PyLong_AsLongLongAndOverflow(k, &overflow);
    PyErr_Clear();
    if (overflow || v <= -(1LL << 40) || v >= (1LL << 40))
        return 0;
    *c = subtract ? inner - v : inner + v;
    return *c > -(1LL << 40) && *c < (1LL << 40) ? f : 0;
}

/* 1 when a line of 'lines' starts with 'prefix'. */
static int has_line_starting(PyObject *lines, const char *prefix)
{
    size_t n = strlen(prefix);
    for (Py_ssize_t k = 0; k < PyList_GET_SIZE(lines); k++) {
        const char *l = PyUnicode_AsUTF8(PyList_GET_ITEM(lines, k));
        if (l == NULL) {
            PyErr_Clear();
            return 0;
        }
        if (strncmp(l, prefix, n) == 0)
            return 1;
    }
    return 0;
}

/* 1 when no line of a body (the top level's, without inner loops) after its
   first store can stop the iteration (a check, a sticky overflow): an
   iteration that stops has stored nothing, so a block needs no undo log (the
   iterations before it are final). */
static int stops_before_stores(PyObject *lines)
{
    PyObject *st = PyUnicode_FromString("memcpy(p, &t"), *g = PyUnicode_FromString("goto"),
             *g2 = PyUnicode_FromString("ovf_ |="), *lg = PyUnicode_FromString(FJL_LOGGED);
    int ok = st != NULL && g != NULL && g2 != NULL && lg != NULL, stored = 0;
    for (Py_ssize_t k = 0; ok && k < PyList_GET_SIZE(lines); k++) {
        PyObject *l = PyList_GET_ITEM(lines, k);
        Py_ssize_t len = PyUnicode_GET_LENGTH(l);
        if (PyUnicode_Find(l, lg, 0, len, 1) >= 0)
            continue; /* the undo log's own lines */
        if (stored && (PyUnicode_Find(l, g, 0, len, 1) >= 0 || PyUnicode_Find(l, g2, 0, len, 1) >= 0))
            ok = 0;
        stored |= PyUnicode_Find(l, st, 0, len, 1) >= 0;
    }
    Py_XDECREF(st);
    Py_XDECREF(g);
    Py_XDECREF(g2);
    Py_XDECREF(lg);
    return ok;
}

/* 'lines' for a block without an undo log (stops_before_stores): no log
   entries, no saves, a sticky overflow tested where it happens.  New list,
   NULL on error. */
static PyObject *without_undo(PyObject *lines)
{
    PyObject *out = PyList_New(0), *lg = PyUnicode_FromString(FJL_LOGGED), *g2 = PyUnicode_FromString("ovf_ |= ");
    for (Py_ssize_t k = 0; out != NULL && lg != NULL && g2 != NULL && k < PyList_GET_SIZE(lines); k++) {
        PyObject *l = PyList_GET_ITEM(lines, k);
        Py_ssize_t len = PyUnicode_GET_LENGTH(l), at;
        if (PyUnicode_Find(l, lg, 0, len, 1) >= 0)
            continue;
        if ((at = PyUnicode_Find(l, g2, 0, len, 1)) >= 0) {
            /* "ovf_ |= oX;" -> "if (oX < 0) goto stop;" */
            PyObject *v = PyUnicode_Substring(l, at + 8, len - 1);
            PyObject *n = v ? PyUnicode_FromFormat("    if (%U < 0) goto stop;", v) : NULL;
            if (n == NULL || PyList_Append(out, n) < 0)
                Py_CLEAR(out);
            Py_XDECREF(v);
            Py_XDECREF(n);
            continue;
        }
        if (PyList_Append(out, l) < 0)
            Py_CLEAR(out);
    }
    if (lg == NULL || g2 == NULL)
        Py_CLEAR(out);
    Py_XDECREF(lg);
    Py_XDECREF(g2);
    return out;
}

/* When index operand 'o' is this level's loop index plus a constant c, or a
   constant: 1 with *c (and *is_const for a constant); else 0. */
static int affine_index(Emit *e, PyObject *o, long long *c, int *is_const)
{
    fj_Node *root;
    int f = affine_form(e, o, c, &root, 0);
    *is_const = f == 1;
    return f == 1 || f == 2;
}

/* affine_form with the C expression of a form-3 root (*base, a new reference). */
static int index_form(Emit *e, PyObject *o, long long *c, PyObject **base)
{
    fj_Node *root;
    *base = NULL;
    int f = affine_form(e, o, c, &root, 0);
    if (f == 3)
        *base = Py_NewRef(e->expr[root->index]);
    return f;
}

/* Which NumPy float values of the body need FJL_KEEP: a value whose every use
   is dropped (an unused operation, one a later store of the same element
   overwrites, one only the loop's state keeps) would let the compiler drop
   the operation and the conditions it raises.  A value is forced when a
   store at an address that changes with the loop's index (no store later in
   the body writes the same place), or a forced or kept operation, uses it.
   Fills e->keep; -1 on error. */
static int keep_analysis(Emit *e, Py_ssize_t nph)
{
    Py_ssize_t nn = PyList_GET_SIZE(e->nodes);
    unsigned char *forced = PyMem_Calloc((size_t)(nn ? nn : 1), 1);
    if (forced == NULL)
        return -1;
    for (Py_ssize_t k = nn - 1; k >= nph; k--) {
        fj_Node *m = (fj_Node *)PyList_GET_ITEM(e->nodes, k);
        if (m->kind != FJ_NODE_CALL || m->op == NULL || m->op == &fj_loop_row)
            continue;
        VClass mc = e->cls[k];
        if (m->op == fj_ops_for_setitem() && PyTuple_GET_SIZE(m->args) == 3) {
            PyObject *ix = PyTuple_GET_ITEM(m->args, 1);
            PyObject *const *it = PyTuple_Check(ix) ? &PyTuple_GET_ITEM(ix, 0) : &ix;
            Py_ssize_t ni = PyTuple_Check(ix) ? PyTuple_GET_SIZE(ix) : 1;
            int moves = 0;
            for (Py_ssize_t q = 0; q < ni; q++) {
                long long c;
                int is_const;
                moves |= affine_index(e, it[q], &c, &is_const) && !is_const;
            }
            /* a later store of the same array at the same index operands */
            for (Py_ssize_t l = k + 1; moves && l < nn; l++) {
                fj_Node *o = (fj_Node *)PyList_GET_ITEM(e->nodes, l);
                if (o->kind != FJ_NODE_CALL || o->op != fj_ops_for_setitem() || PyTuple_GET_SIZE(o->args) != 3 ||
                    PyTuple_GET_ITEM(o->args, 0) != PyTuple_GET_ITEM(m->args, 0))
                    continue;
                PyObject *ox = PyTuple_GET_ITEM(o->args, 1);
                PyObject *const *ot = PyTuple_Check(ox) ? &PyTuple_GET_ITEM(ox, 0) : &ox;
                Py_ssize_t on = PyTuple_Check(ox) ? PyTuple_GET_SIZE(ox) : 1;
                int same = on == ni;
                for (Py_ssize_t q = 0; same && q < ni; q++) {
                    long long c1, c2;
                    PyObject *b1, *b2;
                    int f1 = index_form(e, it[q], &c1, &b1), f2 = index_form(e, ot[q], &c2, &b2);
                    same = ot[q] == it[q] || (f1 != 0 && f1 == f2 && c1 == c2 &&
                                              (b1 == NULL || PyUnicode_Compare(b1, b2) == 0));
                    Py_XDECREF(b1);
                    Py_XDECREF(b2);
                }
                if (same)
                    moves = 0;
            }
            if (moves) {
                for (Py_ssize_t q = 1; q < 3; q++) {
                    PyObject *a = PyTuple_GET_ITEM(m->args, q);
                    if (fj_Node_Check(a))
                        forced[((fj_Node *)a)->index] = 1;
                    for (Py_ssize_t r = 0; q == 1 && r < ni; r++)
                        if (fj_Node_Check(it[r]))
                            forced[((fj_Node *)it[r])->index] = 1;
                }
            }
            continue;
        }
        e->keep[k] = mc.kind == FJL_NP && is_float_class(mc) && !forced[k];
        if (!forced[k] && !e->keep[k])
            continue;
        for (Py_ssize_t q = 0; q < PyTuple_GET_SIZE(m->args); q++) {
            PyObject *a = PyTuple_GET_ITEM(m->args, q);
            if (fj_Node_Check(a))
                forced[((fj_Node *)a)->index] = 1;
        }
    }
    PyMem_Free(forced);
    return 0;
}

/* After the forwarded store (forward_analysis): the registers shifted one
   iteration on, the value stored the newest.  Written into 'buf'; "" for
   other stores. */
#define FJL_FW_BUF 192
static const char *fw_shift(const Emit *e, const fj_Node *n, char *buf)
{
    buf[0] = '\0';
    if (e->fw_store < 0 || n->index != e->fw_store)
        return buf;
    int at = snprintf(buf, FJL_FW_BUF, " if (fwon_) {");
    for (int k = e->fw_max; k >= 2; k--)
        at += snprintf(buf + at, (size_t)(FJL_FW_BUF - at), " fw%d_ = fw%d_;", k, k - 1);
    snprintf(buf + at, (size_t)(FJL_FW_BUF - at), " fw1_ = t; }");
    return buf;
}

/* The class of the result of body node 'n' and its C statements; 0 when it
   does not compile, 1 when it does, -1 on error. */
static int emit_node(Emit *e, fj_Node *n)
{
    const fj_OpDef *op = n->op;
    VClass rc = node_class(n);
    Py_ssize_t na = PyTuple_GET_SIZE(n->args);
    PyObject *x = NULL, *y = NULL, *cx = NULL, *cy = NULL;
    const char *P = e->pfx;
    VClass a, b;
    int r = 0;
    if (op == &fj_loop_row)
        return emit_inner_loop(e, n);
    if (op == &fj_loop_item_row) {
        /* an entry of an inner loop's final state */
        fj_Node *ln = na == 2 ? (fj_Node *)PyTuple_GET_ITEM(n->args, 0) : NULL;
        PyObject *k = na == 2 ? PyTuple_GET_ITEM(n->args, 1) : NULL;
        if (ln == NULL || !fj_Node_Check((PyObject *)ln) || ln->op != &fj_loop_row || !PyLong_Check(k) ||
            rc.kind == 0 || rc.kind == FJL_ARRAY)
            return 0;
        x = PyUnicode_FromFormat("S%s%zd_v%ld", P, ln->index, PyLong_AsLong(k));
        r = x == NULL || line(e, "    %s n%s%zd = (%s)(%U);", ctype_of(rc), P, n->index, ctype_of(rc), x) < 0 ? -1 : 1;
        Py_XDECREF(x);
        return r;
    }
    if (op == &fj_builtin_pick_row) {
        /* max(a, b, ...) / min(...) of one type (trace_call.c, builtin_pick): a later
           argument taken when it compares greater (less) than the one held, as
           CPython's builtin does (a quiet comparison: NaN never taken unless first) */
        int is_max = PyUnicode_Check(n->label) && PyUnicode_CompareWithASCIIString(n->label, "max") == 0;
        if (na < 2 || rc.kind == 0 || rc.kind == FJL_ARRAY || rc.kind == FJL_PY_BOOL ||
            (rc.kind == FJL_NP && rc.type == FJT_BOOL))
            return 0;
        const char *ct = ctype_of(rc);
        for (Py_ssize_t k = 0; k < na; k++) {
            VClass ac;
            PyObject *ax = operand(e, PyTuple_GET_ITEM(n->args, k), &ac);
            if (ax == NULL)
                return PyErr_Occurred() ? -1 : 0;
            if (ac.kind != rc.kind || (ac.kind == FJL_NP && ac.type != rc.type)) { /* (one type: no conversion) */
                Py_DECREF(ax);
                return 0;
            }
            if (k == 0)
                r = line(e, "    %s n%s%zd = %U;", ct, P, n->index, ax);
            else if (is_float_class(rc))
                r = line(e, "    if (%s(%U, n%s%zd)) n%s%zd = %U;", is_max ? "__builtin_isgreater" : "__builtin_isless", ax,
                         P, n->index, P, n->index, ax);
            else
                r = line(e, "    if (%U %c n%s%zd) n%s%zd = %U;", ax, is_max ? '>' : '<', P, n->index, P, n->index, ax);
            Py_DECREF(ax);
            if (r < 0)
                return -1;
        }
        return 1;
    }
    if (op == &fj_loop_pick_row) {
        /* a for loop's return (trace_loops.c, fj_trace_loop_return): the value it
           returned where it did, else the one after it (both of one class) */
        if (na != 3 || rc.kind == 0 || rc.kind == FJL_ARRAY)
            return 0;
        VClass fc, ac, bc;
        PyObject *fx = operand(e, PyTuple_GET_ITEM(n->args, 0), &fc);
        PyObject *ax = fx ? operand(e, PyTuple_GET_ITEM(n->args, 1), &ac) : NULL;
        PyObject *bx = ax ? operand(e, PyTuple_GET_ITEM(n->args, 2), &bc) : NULL;
        if (bx == NULL)
            r = PyErr_Occurred() ? -1 : 0;
        else if (fc.kind == 0 || fc.kind == FJL_ARRAY || ac.kind != rc.kind || bc.kind != rc.kind ||
                 (rc.kind == FJL_NP && (ac.type != rc.type || bc.type != rc.type)))
            r = 0;
        else
            r = line(e, "    %s n%s%zd = (%U != 0) ? %U : %U;", ctype_of(rc), P, n->index, fx, ax, bx) < 0 ? -1 : 1;
        Py_XDECREF(fx);
        Py_XDECREF(ax);
        Py_XDECREF(bx);
        return r;
    }
    if (op == &fj_loop_exit_row && na > 3) {
        /* a loop's break (trace_loops.c, for_exit; docs/loops.md, "Breaks").  At
           the top level the kernel stops at that iteration (its stores undone, its
           state the iteration's start) and the eager loop runs it, which breaks with
           the locals the iteration left.  In an inner loop, its state slots the
           break sets take their values and the C loop ends (its conditions are
           tested after it, as a compound test's exit's) */
        VClass cc;
        int leave = PyObject_IsTrue(PyTuple_GET_ITEM(n->args, 1));
        PyObject *slots = PyTuple_GET_ITEM(n->args, 3);
        if ((e->depth == 0 ? e->top == NULL : e->scls == NULL) || rc.kind != FJL_PY_BOOL || leave < 0 ||
            !PyTuple_Check(slots) || PyTuple_GET_SIZE(slots) != na - 4)
            return leave < 0 ? -1 : 0;
        if ((x = operand(e, PyTuple_GET_ITEM(n->args, 0), &cc)) == NULL)
            return PyErr_Occurred() ? -1 : 0;
        PyObject *sets = PyUnicode_FromString("");
        r = cc.kind == 0 || cc.kind == FJL_ARRAY || sets == NULL ? (sets == NULL ? -1 : 0) : 1;
        for (Py_ssize_t k = 0; r == 1 && e->depth != 0 && k < na - 4; k++) {
            Py_ssize_t s = PyLong_AsSsize_t(PyTuple_GET_ITEM(slots, k));
            VClass vc;
            PyObject *vx = s < 0 ? NULL : operand(e, PyTuple_GET_ITEM(n->args, 4 + k), &vc);
            PyObject *sx = vx == NULL || vc.kind == 0 || vc.kind == FJL_ARRAY || e->scls[s].kind == FJL_ARRAY
                               ? NULL
                               : convert(e, vx, vc, e->scls[s]);
            /* (through T, then into S: a value may read a slot set before it, `q = k;
               k = j`) */
            if (sx == NULL)
                r = PyErr_Occurred() ? -1 : 0;
            else
                Py_SETREF(sets, PyUnicode_FromFormat("%UT%sv%zd = %U; ", sets, e->pfx, s, sx));
            Py_XDECREF(vx);
            Py_XDECREF(sx);
            if (sets == NULL)
                r = -1;
        }
        for (Py_ssize_t k = 0; r == 1 && e->depth != 0 && k < na - 4; k++) {
            Py_ssize_t s = PyLong_AsSsize_t(PyTuple_GET_ITEM(slots, k));
            Py_SETREF(sets, PyUnicode_FromFormat("%US%sv%zd = T%sv%zd; ", sets, e->pfx, s, e->pfx, s));
            if (sets == NULL)
                r = -1;
        }
        if (r == 1 && e->depth == 0)
            e->top->breaks = 1;
        if (r == 1)
            r = (e->depth == 0 ? line(e, "    if ((%U != 0) == %d) { xit_ = 1; goto stop; }", x, leave)
                               : line(e, "    if ((%U != 0) == %d) { %Ubreak; }", x, leave, sets)) < 0 ||
                        line(e, "    %s n%s%zd = 1;", ctype_of(rc), P, n->index) < 0
                    ? -1
                    : 1;
        Py_XDECREF(sets);
        Py_DECREF(x);
        return r;
    }
    if (op == &fj_loop_exit_row) {
        /* a compound while test's exit (trace_loops.c, and_shape): it comes before
           anything the iteration stores or sets, so the loop ends there with the
           state the iteration began with (the top level's wexit_ ends its blocks) */
        VClass cc;
        int leave = na == 3 ? PyObject_IsTrue(PyTuple_GET_ITEM(n->args, 1)) : 0;
        if (na != 3 || rc.kind != FJL_PY_BOOL || leave < 0)
            return leave < 0 ? -1 : 0;
        if ((x = operand(e, PyTuple_GET_ITEM(n->args, 0), &cc)) == NULL)
            return PyErr_Occurred() ? -1 : 0;
        if (cc.kind == 0 || cc.kind == FJL_ARRAY)
            r = 0;
        else
            /* (at the top level the iteration's conditions first: a part of the test
               may have wrapped an int or raised a float condition, which the eager
               loop then meets again; a nested loop's are tested after it) */
            r = line(e, "    if ((%U != 0) == %d) { %sbreak; }", x, leave,
                     e->depth == 0 ? "if (ovf_ < 0 || (FJL_NPF && (fj_fetest(FJ_FPE) & ~ignore))) goto stop; wexit_ = 1; "
                                   : "") < 0 ||
                        line(e, "    %s n%s%zd = 1;", ctype_of(rc), P, n->index) < 0
                    ? -1
                    : 1;
        Py_DECREF(x);
        return r;
    }
    if (op == NULL || n->kwargs != NULL || n->deep > 1)
        return 0;
    const char *ct = rc.kind ? ctype_of(rc) : NULL;
    /* element reads and stores */
    if (op->kind == FJ_OP_GETITEM || op == fj_ops_for_setitem()) {
        int store = op != fj_ops_for_getitem();
        if (na != (store ? 3 : 2) || !fj_Node_Check(PyTuple_GET_ITEM(n->args, 0)))
            return 0;
        fj_Node *arr = (fj_Node *)PyTuple_GET_ITEM(n->args, 0);
        VClass ac = e->cls[arr->index];
        if (ac.kind != FJL_ARRAY || arr->kind != FJ_NODE_PLACEHOLDER || e->arr[arr->index] < 0)
            return 0;
        int A = e->arr[arr->index];
        PyObject *index = PyTuple_GET_ITEM(n->args, 1);
        PyObject *const *items = &index;
        Py_ssize_t ni = 1;
        if (PyTuple_Check(index)) {
            items = &PyTuple_GET_ITEM(index, 0);
            ni = PyTuple_GET_SIZE(index);
        }
        if (ni != arr->ndim || (!store && rc.kind != FJL_NP))
            return 0;
        PyObject *addr = PyUnicode_FromFormat("A%d", A);
        /* the address at the loop's first index and the step between iterations,
           for a range save: every index hoisted */
        PyObject *saddr = addr != NULL ? PyUnicode_FromFormat("A%d", A) : NULL, *sstep = PyUnicode_FromString("0");
        /* the same at a chunk's first index (chunk_first) */
        PyObject *caddr = e->chunk_first != NULL && store ? PyUnicode_FromFormat("A%d", A) : NULL;
        int all_hoisted = saddr != NULL && sstep != NULL && e->saves != NULL, moves = 0;
        for (Py_ssize_t k = 0; addr != NULL && k < ni; k++) {
            VClass ic;
            PyObject *ix = operand(e, items[k], &ic), *base = NULL;
            if (ix == NULL || !(ic.kind == FJL_PY_INT || (ic.kind == FJL_NP && (ic.type == FJT_I64 || ic.type == FJT_I32)))) {
                Py_XDECREF(ix);
                Py_CLEAR(addr);
                break;
            }
            long long c = 0;
            int form = e->hoist != NULL ? index_form(e, items[k], &c, &base) : 0;
            int hoisted = form != 0;
            if (hoisted) {
                /* in bounds for the loop's whole range: checked once, before it */
                PyObject *cond = form == 1 ? PyUnicode_FromFormat("    %s = %s && %lld >= 0 && %lld < A%dn%zd;", e->hs, e->hs,
                                                                  c, c, A, k)
                                 : form == 2 ? PyUnicode_FromFormat("    %s = %s && (%s < %s ? %s : %s) + %lld >= 0 && "
                                                                    "(%s < %s ? %s : %s) + %lld < A%dn%zd;",
                                                                    e->hs, e->hs, e->first, e->last, e->first, e->last, c,
                                                                    e->first, e->last, e->last, e->first, c, A, k)
                                 : PyUnicode_FromFormat("    %s = %s && (%U) > -(1LL << 62) && (%U) < (1LL << 62) && "
                                                        "(%U) + %lld >= 0 && (%U) + %lld < A%dn%zd;",
                                                        e->hs, e->hs, base, base, base, c, base, c, A, k);
                int bad = cond == NULL || PyList_Append(e->hoist, cond) < 0;
                Py_XDECREF(cond);
                if (!bad && all_hoisted) {
                    if (form == 2) {
                        moves = 1;
                        Py_SETREF(saddr, PyUnicode_FromFormat("%U + (%s + %lld) * A%ds%zd", saddr, e->save_first, c, A, k));
                        Py_SETREF(sstep, PyUnicode_FromFormat("%U + A%ds%zd", sstep, A, k));
                        if (caddr != NULL)
                            Py_SETREF(caddr, PyUnicode_FromFormat("%U + (%s + %lld) * A%ds%zd", caddr, e->chunk_first, c, A, k));
                    }
                    else if (form == 1) {
                        Py_SETREF(saddr, PyUnicode_FromFormat("%U + %lld * A%ds%zd", saddr, c, A, k));
                        if (caddr != NULL)
                            Py_SETREF(caddr, PyUnicode_FromFormat("%U + %lld * A%ds%zd", caddr, c, A, k));
                    }
                    else {
                        Py_SETREF(saddr, PyUnicode_FromFormat("%U + ((%U) + %lld) * A%ds%zd", saddr, base, c, A, k));
                        if (caddr != NULL)
                            Py_SETREF(caddr, PyUnicode_FromFormat("%U + ((%U) + %lld) * A%ds%zd", caddr, base, c, A, k));
                    }
                    bad = saddr == NULL || sstep == NULL || (e->chunk_first != NULL && store && caddr == NULL);
                }
                Py_XDECREF(base);
                if (bad) {
                    Py_DECREF(ix);
                    Py_DECREF(addr);
                    Py_XDECREF(saddr);
                Py_XDECREF(caddr);
                    Py_XDECREF(sstep);
                    return -1;
                }
            }
            else
                all_hoisted = 0;
            if (line(e, "    long long i%s%zd_%zd = (long long)(%U);", P, n->index, k, ix) < 0 ||
                (hoisted
                     /* a check the level's hoisted test covers: a negative index wraps
                        without a branch (an inner level's loop is unswitched on the
                        test, and the branchy form below made gcc give that up:
                        life_step 0.55 -> 0.73 ms) */
                     ? line(e, "    if (!%s) { i%s%zd_%zd += A%dn%zd & -(long long)(i%s%zd_%zd < 0); "
                               "if ((unsigned long long)i%s%zd_%zd >= (unsigned long long)A%dn%zd) goto stop; }",
                            e->hs, P, n->index, k, A, k, P, n->index, k, P, n->index, k, A, k)
                     /* a data index: one unsigned compare where it is within the dim; a
                        negative one wraps (in unsigned arithmetic: no overflow) and is
                        compared again.  Indices of both signs mispredict it; the
                        branchless wrap cost a grouping loop a fifth of its time on
                        indices all in range, the common case */
                     : line(e, "    if ((unsigned long long)i%s%zd_%zd >= (unsigned long long)A%dn%zd) { "
                               "i%s%zd_%zd = (long long)((unsigned long long)i%s%zd_%zd + (unsigned long long)A%dn%zd); "
                               "if ((unsigned long long)i%s%zd_%zd >= (unsigned long long)A%dn%zd) goto stop; }",
                            P, n->index, k, A, k, P, n->index, k, P, n->index, k, A, k, P, n->index, k, A, k)) < 0) {
                Py_DECREF(ix);
                Py_DECREF(addr);
                Py_XDECREF(saddr);
                Py_XDECREF(caddr);
                Py_XDECREF(sstep);
                return -1;
            }
            Py_DECREF(ix);
            Py_SETREF(addr, PyUnicode_FromFormat("%U + i%s%zd_%zd * A%ds%zd", addr, P, n->index, k, A, k));
        }
        if (addr == NULL || !store || !all_hoisted) {
            Py_CLEAR(saddr);
            Py_CLEAR(sstep);
        }
        if (saddr == NULL || !moves)
            Py_CLEAR(caddr);
        if (addr == NULL)
            return PyErr_Occurred() ? -1 : 0;
        VClass ec = {FJL_NP, ac.type};
        const char *et = ctype_of(ec);
        if (!store) {
            int d = e->fw_dist != NULL && e->fw_store >= 0 ? e->fw_dist[n->index] : 0;
            if (d == 0) /* (a forwarded load reads a register in the step-1 version, the
                           only one with chunks at the top level: top_chunks) */
                e->top->ph[A].loaded = 1;
            if (d > 0) /* forward_analysis: fwon_ is 1 in the step-1 version only */
                r = line(e, "    %s n%s%zd; if (fwon_) n%s%zd = fw%d_; else memcpy(&n%s%zd, %U, sizeof n%s%zd);", et, P,
                         n->index, P, n->index, d, P, n->index, addr, P, n->index) < 0
                        ? -1
                        : 1;
            else
                r = line(e, "    %s n%s%zd; memcpy(&n%s%zd, %U, sizeof n%s%zd);", et, P, n->index, P, n->index, addr, P,
                         n->index) < 0 ||
                            /* a bool element read as its truth: NumPy reads a byte other than 0 or 1
                               (a view of uint8 as bool) as True */
                            (ac.type == FJT_BOOL && line(e, "    n%s%zd = n%s%zd != 0;", P, n->index, P, n->index) < 0)
                        ? -1
                        : 1;
            Py_DECREF(addr);
            return r;
        }
        PyObject *val = PyTuple_GET_ITEM(n->args, 2);
        x = operand(e, val, &a);
        if (x == NULL) {
            Py_DECREF(addr);
            Py_XDECREF(saddr);
                Py_XDECREF(caddr);
            Py_XDECREF(sstep);
            return PyErr_Occurred() ? -1 : 0;
        }
        if (ac.type == FJT_BOOL && !(a.kind == FJL_PY_BOOL || (a.kind == FJL_NP && a.type == FJT_BOOL))) {
            Py_DECREF(addr);
            Py_XDECREF(saddr);
                Py_XDECREF(caddr);
            Py_XDECREF(sstep);
            goto no;
        }
        if ((ac.type == FJT_I64 || ac.type == FJT_I32) && is_float_class(a)) {
            /* a float into an int array: truncated, when finite and in range */
            if (line(e, "    if (!(%U > -9223372036854775808.0 && %U < 9223372036854775808.0)) goto stop;", x, x) < 0) {
                Py_DECREF(addr);
                Py_XDECREF(saddr);
                Py_XDECREF(caddr);
                Py_XDECREF(sstep);
                goto error;
            }
            Py_SETREF(x, PyUnicode_FromFormat("((long long)(%U))", x));
            a.kind = FJL_PY_INT;
        }
        /* the store, its old value logged for an undo; a store of a saved range
           logs nothing in the version without checks (the range's entry, made
           before the loop, holds its old values) */
        int site = -1;
        if (saddr != NULL) {
            site = (*e->nsites)++;
            PyObject *sv = PyUnicode_FromFormat("    if (fjl_save(&lg, &rp%d, &rc%d, &rs%d, %U, %s, (%s) * (%U), %d)) goto stop;",
                                                site, site, site, saddr, moves ? e->save_count : "1", e->save_step, sstep,
                                                fjn_type_size(ac.type));
            int bad = sv == NULL || PyList_Append(e->saves, sv) < 0;
            Py_XDECREF(sv);
            if (bad) {
                Py_DECREF(addr);
                Py_DECREF(saddr);
                Py_XDECREF(caddr);
                Py_DECREF(sstep);
                goto error;
            }
        }
        if (ec.type == FJT_F32 && is_float_class(a) && !(a.kind == FJL_NP && a.type == FJT_F32)) {
            /* a float64 stored into a float32 array: NumPy's cast reports overflow (a finite
               value to inf) and underflow; tested at the block's end, or from the values */
            *e->npfloat = 1;
            if (line(e, "    /*fpv*/ /*fpu*/ if ((fj_fin64(%U) && !fj_fin32((float)(%U))) || (%U != 0 && fabsf((float)(%U)) <= "
                        "1.17549435082228750797e-38f)) goto stop;",
                     x, x, x, x) < 0) {
                Py_DECREF(addr);
                Py_XDECREF(saddr);
                Py_XDECREF(caddr);
                Py_XDECREF(sstep);
                goto error;
            }
        }
        if ((cx = convert(e, x, a, ec)) == NULL || line(e, "    { char *p = %U; %s t = %U;", addr, et, cx) < 0 ||
            chunk_site(e, caddr, site, A, et, fjn_type_size(ac.type), sstep, cx) < 0 ||
            (saddr != NULL ? line(e, "    if (!%s) { if (fjl_log1(&lg, p, sizeof t)) goto stop; }", e->logtag)
                           : line(e, "    if (fjl_log1(&lg, p, sizeof t)) goto stop;")) < 0 ||
            line(e, "    memcpy(p, &t, sizeof t);%s }", fw_shift(e, n, (char[FJL_FW_BUF]){0})) < 0) {
            Py_DECREF(addr);
            Py_XDECREF(saddr);
            Py_XDECREF(caddr);
            Py_XDECREF(sstep);
            goto error;
        }
        Py_XDECREF(saddr);
        Py_XDECREF(caddr);
        Py_XDECREF(sstep);
        e->top->ph[A].stored = 1;
        if (e->depth == 0)
            e->top_stores++;
        Py_DECREF(addr);
        r = 1;
        goto done;
    }
    if (ct == NULL || rc.kind == FJL_ARRAY)
        return 0;
    int code = 0;
    if ((op->kind == FJ_OP_BINOP || op->kind == FJ_OP_INPLACE) && na == 2) {
        switch (op->code) {
        case NB_ADD: case NB_INPLACE_ADD: code = '+'; break;
        case NB_SUBTRACT: case NB_INPLACE_SUBTRACT: code = '-'; break;
        case NB_MULTIPLY: case NB_INPLACE_MULTIPLY: code = '*'; break;
        case NB_TRUE_DIVIDE: case NB_INPLACE_TRUE_DIVIDE: code = '/'; break;
        case NB_FLOOR_DIVIDE: case NB_INPLACE_FLOOR_DIVIDE: code = 'f'; break;
        case NB_REMAINDER: case NB_INPLACE_REMAINDER: code = 'm'; break;
        case NB_AND: case NB_INPLACE_AND: code = '&'; break;
        case NB_OR: case NB_INPLACE_OR: code = '|'; break;
        case NB_XOR: case NB_INPLACE_XOR: code = '^'; break;
        default: return 0;
        }
    }
    else if ((op->kind == FJ_OP_FUNC || op->kind == FJ_OP_UNARY) && na == 1 &&
             (op->fused == FJN_SQRT || op->fused == FJN_ABS || op->fused == FJN_NEG || op->fused == FJN_POS)) {
        code = op->fused == FJN_SQRT ? 's' : op->fused == FJN_ABS ? 'a' : op->fused == FJN_NEG ? 'n' : 'p';
    }
    else if (op->kind == FJ_OP_COMPARE && na == 2) {
        code = 'c';
    }
    else
        return 0;
    x = operand(e, PyTuple_GET_ITEM(n->args, 0), &a);
    if (x == NULL)
        return PyErr_Occurred() ? -1 : 0;
    if (na == 2 && (y = operand(e, PyTuple_GET_ITEM(n->args, 1), &b)) == NULL)
        goto no;
    if (code == 'c') {
        /* the loop type: both operands' common NumPy type, or a Python number
           taking the other's (NEP 50); quiet comparisons (NaN raises nothing) */
        static const char *cmp[] = {"__builtin_isless", "__builtin_islessequal", NULL, NULL, "__builtin_isgreater",
                                    "__builtin_isgreaterequal"};
        VClass lt;
        if (a.kind == FJL_NP && b.kind == FJL_NP && a.type == b.type)
            lt = a;
        else if (a.kind == FJL_NP && b.kind != FJL_NP && !(is_int_class(a) && is_float_class(b)))
            lt = a;
        else if (b.kind == FJL_NP && a.kind != FJL_NP && !(is_int_class(b) && is_float_class(a)))
            lt = b;
        else if (a.kind != FJL_NP && b.kind != FJL_NP)
            lt = is_float_class(a) || is_float_class(b) ? (VClass){FJL_PY_FLOAT, 0} : (VClass){FJL_PY_INT, 0};
        else
            goto no;
        if (lt.kind == FJL_NP && lt.type == FJT_BOOL)
            goto no;
        if ((cx = convert(e, x, a, lt)) == NULL || (cy = convert(e, y, b, lt)) == NULL)
            goto error;
        int oc = op->code;
        if (is_float_class(lt) && cmp[oc] != NULL)
            r = line(e, "    %s n%s%zd = %s(%U, %U);", ct, P, n->index, cmp[oc], cx, cy);
        else {
            static const char *sym[] = {"<", "<=", "==", "!=", ">", ">="};
            r = line(e, "    %s n%s%zd = (%U %s %U);", ct, P, n->index, cx, sym[oc], cy);
        }
        r = r < 0 ? -1 : 1;
        goto done;
    }
    if (code == '&' || code == '|' || code == '^') {
        /* bitwise operations of ints and bools (bools as 0 and 1) */
        if (is_float_class(rc) || is_float_class(a) || is_float_class(b))
            goto no;
        if ((cx = convert(e, x, a, rc)) == NULL || (cy = convert(e, y, b, rc)) == NULL)
            goto error;
        r = line(e, "    %s n%s%zd = (%s)(%U %c %U);", ct, P, n->index, ct, cx, code, cy) < 0 ? -1 : 1;
        goto done;
    }
    /* arithmetic: the operands in the result's type, as NumPy's loop (or
       Python's float and int arithmetic) computes */
    if (rc.kind == FJL_PY_BOOL || (rc.kind == FJL_NP && rc.type == FJT_BOOL))
        goto no;
    if (rc.kind == FJL_NP && is_float_class(rc))
        *e->npfloat = 1;
    if ((cx = convert(e, x, a, rc)) == NULL || (y != NULL && (cy = convert(e, y, b, rc)) == NULL))
        goto error;
    int isint = !is_float_class(rc);
    switch (code) {
    case '+': case '-': case '*':
        if (isint) {
            const char *fn = code == '+' ? "add" : code == '-' ? "sub" : "mul";
            long long c;
            PyObject *base = NULL;
            int form = code != '*' && rc.kind == FJL_PY_INT && e->hoist != NULL ? index_form(e, (PyObject *)n, &c, &base) : 0;
            /* (a counter: its first value within 2**62, its steps below 2**20, fewer than
               2**40 of them; mandelbrot's count: 4.9 -> 4.5 ms) */
            PyObject *cs = form == 2 || form == 3 ? NULL : counter_slot(e, n, code, ct);
            if (form == 2 || form == 3 || cs != NULL) {
                /* an index plus a constant, or a counter: it cannot overflow where the
                   level's hoisted checks hold (the index within 2**62, the constant
                   below 2**40) */
                PyObject *cond = form == 3 ? PyUnicode_FromFormat("    %s = %s && (%U) > -(1LL << 62) && (%U) < (1LL << 62);",
                                                                  e->hs, e->hs, base, base)
                                 : cs != NULL ? PyUnicode_FromFormat("    %s = %s && %U > -(1LL << 62) && %U < (1LL << 62) && "
                                                                    "%s < (1LL << 40);", e->hs, e->hs, cs, cs, e->lcount)
                                              : NULL;
                int bad = form != 2 && (cond == NULL || PyList_Append(e->hoist, cond) < 0);
                Py_XDECREF(cond);
                Py_XDECREF(base);
                if (bad)
                    goto error;
                /* plain signed arithmetic where the checks hold: the compiler's
                   dependence analysis follows it (not a wrapping one) */
                r = line(e, "    %s n%s%zd;", ct, P, n->index);
                if (r >= 0)
                    r = line(e, "    if (!%s) { if (__builtin_%s_overflow(%U, %U, &n%s%zd)) goto stop; }", e->hs, fn, cx, cy, P,
                             n->index);
                if (r >= 0)
                    r = line(e, "    if (%s) n%s%zd = %U %c %U;", e->hs, P, n->index, cx, code, cy);
            }
            else if (e->leaf && e->hoist != NULL && code != '*') {
                /* a level without inner loops: its overflow sticky in the version
                   without checks (tested after the loop and at the block's end; the
                   wrapped value reaches no index unchecked and no loop bound), in
                   bit operations the compiler vectorizes */
                const char *ut = strcmp(ct, "int") == 0 ? "unsigned int" : "unsigned long long";
                r = line(e, "    %s n%s%zd = (%s)((%s)%U %c (%s)%U);", ct, P, n->index, ct, ut, cx, code, ut, cy);
                /* (the overflow's sign bit kept as a mask: ORed into ovf_ without a
                   compare per operation, its sign tested once; life_step 0.26 ->
                   0.24 ms without its saved ranges) */
                if (r >= 0 && code == '+')
                    r = line(e, "    long long o%s%zd = (%s)((%U ^ n%s%zd) & (%U ^ n%s%zd));", P, n->index, ct, cx, P, n->index,
                             cy, P, n->index);
                else if (r >= 0)
                    r = line(e, "    long long o%s%zd = (%s)((%U ^ %U) & (%U ^ n%s%zd));", P, n->index, ct, cx, cy, cx, P,
                             n->index);
                if (r >= 0)
                    r = line(e, "    if (!%s) { if (o%s%zd < 0) goto stop; }", e->hs, P, n->index);
                if (r >= 0)
                    r = line(e, "    ovf_ |= o%s%zd;", P, n->index);
            }
            else
                r = line(e, "    %s n%s%zd; if (__builtin_%s_overflow(%U, %U, &n%s%zd)) goto stop;", ct, P, n->index, fn,
                         cx, cy, P, n->index);
        }
        else
            r = line(e, "    %s n%s%zd = %U %c %U;", ct, P, n->index, cx, code, cy);
        break;
    case '/':
        if (isint)
            goto no;
        if (rc.kind == FJL_PY_FLOAT && line(e, "    if (%U == 0) goto stop; /* ZeroDivisionError */", cy) < 0)
            goto error;
        r = line(e, "    %s n%s%zd = %U / %U;", ct, P, n->index, cx, cy);
        break;
    case 'f':
    case 'm':
        /* Python ints: floor division and its remainder (the sign of the divisor) */
        if (rc.kind != FJL_PY_INT || !is_int_class(a) || !is_int_class(b) || a.kind == FJL_NP || b.kind == FJL_NP)
            goto no;
        if (line(e, "    long long q%s%zd, r%s%zd; if (%U == 0 || (%U == -1 && %U == (long long)(1ULL << 63))) goto stop;",
                 P, n->index, P, n->index, cy, cy, cx) < 0 ||
            line(e, "    q%s%zd = %U / %U; r%s%zd = %U %% %U; if (r%s%zd != 0 && ((r%s%zd < 0) != (%U < 0))) { q%s%zd -= 1; "
                    "r%s%zd += %U; }",
                 P, n->index, cx, cy, P, n->index, cx, cy, P, n->index, P, n->index, cy, P, n->index, P, n->index, cy) < 0)
            goto error;
        r = line(e, "    long long n%s%zd = %s%s%zd;", P, n->index, code == 'f' ? "q" : "r", P, n->index);
        break;
    case 's':
        if (isint || rc.kind != FJL_NP)
            goto no;
        r = line(e, "    %s n%s%zd = %s(%U);", ct, P, n->index, rc.type == FJT_F32 ? "sqrtf" : "sqrt", cx);
        break;
    case 'a':
        if (isint)
            r = line(e, "    %s n%s%zd = %U; if (n%s%zd < 0) { if (n%s%zd == (%s)((unsigned long long)1 << (8 * sizeof n%s%zd - 1))) "
                        "goto stop; n%s%zd = -n%s%zd; }",
                     ct, P, n->index, cx, P, n->index, P, n->index, ct, P, n->index, P, n->index, P, n->index);
        else
            r = line(e, "    %s n%s%zd = %s(%U);", ct, P, n->index,
                     rc.type == FJT_F32 && rc.kind == FJL_NP ? "fabsf" : "fabs", cx);
        break;
    case 'n':
        if (isint)
            r = line(e, "    %s n%s%zd; if (__builtin_sub_overflow((%s)0, %U, &n%s%zd)) goto stop;", ct, P, n->index, ct,
                     cx, P, n->index);
        else
            r = line(e, "    %s n%s%zd = -%U;", ct, P, n->index, cx);
        break;
    case 'p':
        r = line(e, "    %s n%s%zd = %U;", ct, P, n->index, cx);
        break;
    }
    /* a NumPy float operation's conditions are tested after the iteration:
       the compiler may not move the operation past the test (nothing else
       orders it before the read of the status register) */
    if (r >= 0 && rc.kind == FJL_NP && is_float_class(rc) && e->keep[n->index])
        r = line(e, "    FJL_KEEP(n%s%zd);", P, n->index);
    if (r >= 0 && rc.kind == FJL_NP && is_float_class(rc) && strchr("+-*/s", code) != NULL) {
        /* the operation's conditions told from its values (a line tagged fpv, kept
           in a block without an undo log, whose iterations stop before a store
           instead of testing the flags at the block's end): overflow, divide and
           invalid make a result that is not finite from operands that are not NaN;
           underflow (of * and /; an add's subnormal result is exact) a result
           below the smallest normal from a nonzero operand, conservatively */
        int f32 = rc.type == FJT_F32;
        const char *fin = f32 ? "fj_fin32" : "fj_fin64", *fab = f32 ? "fabsf" : "fabs",
                   *mn = f32 ? "1.17549435082228750797e-38f" : "2.2250738585072013830902e-308";
        /* the NaN tests of the operands only where the result is not finite, out of
           line (fj_nn1 / fj_nn2, cold): inline, the compiler evaluated them on every
           iteration ahead of the branch, which doubled a grouping loop's instructions
           (group_sums 1.66 -> 1.02 ms at 1e6) */
        if (code == 's')
            r = line(e, "    /*fpv*/ if (__builtin_expect(n%s%zd != n%s%zd, 0) && fj_nn1(%U)) goto stop;", P, n->index, P,
                     n->index, cx);
        else if (code == '+' || code == '-')
            r = line(e, "    /*fpv*/ if (__builtin_expect(!%s(n%s%zd), 0) && fj_nn2(%U, %U)) goto stop;", fin, P, n->index,
                     cx, cy);
        else if (code == '*')
            r = line(e, "    /*fpv*/ /*fpu*/ if ((__builtin_expect(!%s(n%s%zd), 0) && fj_nn2(%U, %U)) || (%s(n%s%zd) <= %s && %U != 0 && "
                        "%U != 0)) goto stop;",
                     fin, P, n->index, cx, cy, fab, P, n->index, mn, cx, cy);
        else
            r = line(e, "    /*fpv*/ /*fpu*/ if ((__builtin_expect(!%s(n%s%zd), 0) && fj_nn2(%U, %U)) || (%s(n%s%zd) <= %s && %U != 0)) "
                        "goto stop;",
                     fin, P, n->index, cx, cy, fab, P, n->index, mn, cx);
    }
    r = r < 0 ? -1 : 1;
    goto done;
no:
    r = PyErr_Occurred() ? -1 : 0;
    goto done;
error:
    r = -1;
done:
    Py_XDECREF(x);
    Py_XDECREF(y);
    Py_XDECREF(cx);
    Py_XDECREF(cy);
    return r;
}

/* Store-to-load forwarding (what LLVM's loop-load elimination and gcc's
   predictive commoning do where they can prove it; gcc could not through the
   kernels' char pointers): in a top-level loop without inner loops whose only
   store writes a 1-d array at i + cs, a load of the same array at i + cs - d
   (1 <= d <= FJL_FW_MAX; 0 too after the store in the body) reads, in the
   step-1 version, the value the store wrote d iterations before, kept in a
   register (fw<d>_, fw<d + 1>_ after the store: it shifts them), not memory: a
   recurrence a[i] = a[i - 1] * c + b[i] then waits on its arithmetic only, not
   on a store's round trip through memory.  Sound because nothing else stores
   in the body (no other array can overwrite the element in between, aliased
   or not) and the step-1 version runs only where every index is in bounds and
   the arrays' strides are their item sizes (hs_); the registers are loaded
   from memory before the version's loop (its first d iterations read what is
   there: fw_pre).  Fills e->fw_store, e->fw_dist, e->fw_max; -1 on error. */
#define FJL_FW_MAX 4
static int forward_analysis(Emit *e, Py_ssize_t nph)
{
    Py_ssize_t nn = PyList_GET_SIZE(e->nodes);
    e->fw_store = -1;
    e->fw_max = e->fw_pre = 0;
    if (e->depth != 0 || !e->leaf || e->hoist == NULL)
        return 0;
    fj_Node *st = NULL;
    for (Py_ssize_t k = nph; k < nn; k++) {
        fj_Node *m = (fj_Node *)PyList_GET_ITEM(e->nodes, k);
        if (m->kind != FJ_NODE_CALL || m->op != fj_ops_for_setitem())
            continue;
        if (st != NULL)
            return 0; /* two stores */
        st = m;
    }
    long long cs;
    int is_const;
    if (st == NULL || PyTuple_GET_SIZE(st->args) != 3 || !fj_Node_Check(PyTuple_GET_ITEM(st->args, 0)) ||
        ((fj_Node *)PyTuple_GET_ITEM(st->args, 0))->ndim != 1 || PyTuple_Check(PyTuple_GET_ITEM(st->args, 1)) ||
        !affine_index(e, PyTuple_GET_ITEM(st->args, 1), &cs, &is_const) || is_const)
        return 0;
    PyObject *arr = PyTuple_GET_ITEM(st->args, 0);
    e->fw_dist = PyMem_Calloc((size_t)nn, 1);
    if (e->fw_dist == NULL) {
        PyErr_NoMemory();
        return -1;
    }
    for (Py_ssize_t k = nph; k < nn; k++) {
        fj_Node *m = (fj_Node *)PyList_GET_ITEM(e->nodes, k);
        long long c;
        if (m->kind != FJ_NODE_CALL || m->op != fj_ops_for_getitem() || PyTuple_GET_SIZE(m->args) != 2 ||
            PyTuple_GET_ITEM(m->args, 0) != arr || PyTuple_Check(PyTuple_GET_ITEM(m->args, 1)) ||
            !affine_index(e, PyTuple_GET_ITEM(m->args, 1), &c, &is_const) || is_const)
            continue;
        /* the register: the store shifts them, so a load after it in the body
           reads one further back (and one of the element just stored, fw1_) */
        long long reg = cs - c + (k > st->index ? 1 : 0);
        if (reg < 1 || reg > FJL_FW_MAX || (k < st->index && cs - c < 1))
            continue;
        e->fw_dist[k] = (unsigned char)reg;
        if (e->fw_max < (int)reg)
            e->fw_max = (int)reg;
        if (e->fw_pre < (int)(cs - c))
            e->fw_pre = (int)(cs - c);
    }
    if (e->fw_max > 0) {
        e->fw_store = st->index;
        e->fw_cs = cs;
        e->fw_arr = (fj_Node *)arr;
    }
    return 0;
}

/* The statements of every call node of the body.  1, 0 (does not compile), -1. */
static int emit_body(Emit *e, Py_ssize_t nph)
{
    Py_ssize_t nn = PyList_GET_SIZE(e->nodes);
    e->keep = PyMem_Calloc((size_t)(nn ? nn : 1), 1);
    if (e->keep == NULL || keep_analysis(e, nph) < 0) {
        PyMem_Free(e->keep);
        e->keep = NULL;
        return -1;
    }
    int ok = 1;
    e->leaf = 1;
    for (Py_ssize_t k = nph; k < nn; k++)
        if (((fj_Node *)PyList_GET_ITEM(e->nodes, k))->op == &fj_loop_row)
            e->leaf = 0;
    if (forward_analysis(e, nph) < 0) {
        PyMem_Free(e->keep);
        e->keep = NULL;
        PyMem_Free(e->fw_dist);
        e->fw_dist = NULL;
        return -1;
    }
    for (Py_ssize_t k = nph; ok > 0 && k < nn; k++) {
        fj_Node *m = (fj_Node *)PyList_GET_ITEM(e->nodes, k);
        if (m->kind == FJ_NODE_CALL)
            ok = emit_node(e, m);
    }
    PyMem_Free(e->keep);
    e->keep = NULL;
    PyMem_Free(e->fw_dist);
    e->fw_dist = NULL;
    return ok;
}

int fjn_loop_plan(fj_Node *n, Py_ssize_t index, fjn_LoopPlan *lp)
{
    PyObject *body = fj_loop_body(n->target);
    if (body == NULL)
        return 0;
    Py_ssize_t nph = fj_graph_nplaceholders(body);
    PyObject *outs = fj_graph_outputs(body);
    PyObject *nodes = PyObject_GetAttrString(body, "nodes");
    if (nodes == NULL)
        return -1;
    int ok = outs != NULL && nph <= FJL_MAX_VALUES && PyTuple_GET_SIZE(outs) <= FJL_MAX_VALUES;
    memset(lp, 0, sizeof *lp);
    lp->node = index;
    lp->nph = (int)nph;
    lp->whilemode = fj_loop_while(n->target, &lp->wneg0, &lp->wnegs);
    lp->breaks = has_breaks(nodes);
    lp->nstate = ok ? (int)PyTuple_GET_SIZE(outs) - lp->whilemode : 0;
    if (ok && lp->whilemode) {
        /* the test's value: a scalar of the body (or a constant) */
        PyObject *so = PyTuple_GET_ITEM(outs, lp->nstate);
        if (!fj_Node_Check(so))
            lp->stay_src = FJL_CONST;
        else {
            fj_Node *sn = (fj_Node *)so;
            VClass sc = node_class(sn);
            if (sc.kind == 0 || sc.kind == FJL_ARRAY)
                ok = 0;
            lp->stay_src = sn->kind == FJ_NODE_PLACEHOLDER ? (int)sn->index : -1 - (int)sn->index;
        }
    }
    /* the fj_Loop's layout: placeholder 0 the index, then the carried slots */
    PyObject *carried = ok ? PyObject_GetAttrString(n->target, "carried") : NULL;
    if (ok && carried == NULL) {
        Py_DECREF(nodes);
        return -1;
    }
    lp->ncarried = ok ? (int)PyTuple_GET_SIZE(carried) : 0;
    for (int k = 0; ok && k < lp->ncarried; k++)
        lp->carried_slot[k] = (int)PyLong_AsLong(PyTuple_GET_ITEM(carried, k));
    Py_XDECREF(carried);
    for (Py_ssize_t k = 0; ok && k < nph; k++) {
        fj_Node *ph = (fj_Node *)PyList_GET_ITEM(nodes, k);
        VClass c = node_class(ph);
        if (c.kind == 0)
            ok = 0;
        lp->ph[k].kind = c.kind;
        lp->ph[k].type = c.type;
        lp->ph[k].ndim = ph->ndim;
        lp->ph[k].descr = ph->dtype;
    }
    if (ok && lp->ph[0].kind != FJL_PY_INT)
        ok = 0;
    for (int s = 0; ok && s < lp->nstate; s++) {
        PyObject *o = PyTuple_GET_ITEM(outs, s);
        if (!fj_Node_Check(o)) {
            lp->out_src[s] = FJL_CONST;
            continue;
        }
        fj_Node *on = (fj_Node *)o;
        VClass c = node_class(on);
        if (c.kind == 0 || (c.kind == FJL_ARRAY && on->kind != FJ_NODE_PLACEHOLDER))
            ok = 0;
        if (ok && c.kind == FJL_ARRAY && on->index >= 1 && on->index <= lp->ncarried &&
            lp->carried_slot[on->index - 1] != s)
            ok = 0; /* arrays swapped between slots: which object each holds at the end is the eager loop's */
        lp->out[s].kind = c.kind;
        lp->out[s].type = c.type;
        lp->out[s].descr = on->dtype;
        lp->out_src[s] = on->kind == FJ_NODE_PLACEHOLDER ? (int)on->index : -1 - (int)on->index;
    }
    Py_DECREF(nodes);
    if (!ok)
        return 0;
    /* the body must compile whole: try it (fjn_loop_emit makes the text again);
       the trial marks the arrays it stores into */
    PyObject *buf = PyList_New(0);
    if (buf == NULL)
        return -1;
    int r = fjn_loop_emit(buf, lp, n, -1);
    Py_DECREF(buf);
    return r;
}

int fjn_loop_emit(PyObject *buf, fjn_LoopPlan *lp, fj_Node *n, int li)
{
    Emit e;
    PyObject *body = fj_loop_body(n->target);
    memset(&e, 0, sizeof e);
    e.nodes = PyObject_GetAttrString(body, "nodes");
    e.src = PyList_New(0);
    e.pfx = "";
    e.top = lp;
    int npfloat = 0;
    e.npfloat = &npfloat;
    Py_ssize_t nn = e.nodes ? PyList_GET_SIZE(e.nodes) : 0;
    e.cls = PyMem_Calloc((size_t)(nn ? nn : 1), sizeof(VClass));
    e.expr = PyMem_Calloc((size_t)(lp->nph ? lp->nph : 1), sizeof(PyObject *));
    e.arr = PyMem_Calloc((size_t)(lp->nph ? lp->nph : 1), sizeof(int));
    int r = -1;
    if (e.nodes == NULL || e.src == NULL || e.cls == NULL || e.expr == NULL || e.arr == NULL)
        goto done;
    for (Py_ssize_t k = 0; k < nn; k++)
        e.cls[k] = node_class((fj_Node *)PyList_GET_ITEM(e.nodes, k));
    /* the top level's placeholders: locals (registers: no store through a
       char pointer can change them) loaded from v[] once; the index is i */
    PyObject *decl = PyList_New(0);
    if (decl == NULL)
        goto done;
    for (int k = 0; k < lp->nph; k++) {
        char v[16];
        e.arr[k] = -1;
        PyObject *d = NULL;
        if (lp->ph[k].kind == FJL_ARRAY) {
            e.arr[k] = k;
            d = PyUnicode_FromFormat("    char *A%d = v[%d].a.data; long long A%dn0 = v[%d].a.shape[0], "
                                     "A%dn1 = v[%d].a.shape[1], A%ds0 = v[%d].a.strides[0], A%ds1 = v[%d].a.strides[1];"
                                     " (void)A%dn1; (void)A%ds1;",
                                     k, k, k, k, k, k, k, k, k, k, k, k);
        }
        else if (k == 0) {
            e.expr[k] = PyUnicode_FromString("i");
        }
        else {
            snprintf(v, sizeof v, "V%d", k);
            e.expr[k] = PyUnicode_FromString(v);
            d = PyUnicode_FromFormat("    %s V%d = %U;", ctype_of(e.cls[k]), k,
                                     field_expr((snprintf(v, sizeof v, "v[%d]", k), v), e.cls[k]));
        }
        if ((k > 0 && lp->ph[k].kind != FJL_ARRAY && e.expr[k] == NULL) ||
            (d != NULL && PyList_Append(decl, d) < 0)) {
            Py_XDECREF(d);
            Py_DECREF(decl);
            goto done;
        }
        Py_XDECREF(d);
    }
    e.hoist = PyList_New(0);
    e.hs = "hs_";
    e.first = "start";
    e.last = "hl_";
    int nsites = 0;
    e.ninv = 1 + lp->ncarried;
    e.saves = PyList_New(0);
    e.save_first = "i";
    e.save_count = "bc_";
    e.save_step = "step";
    e.logtag = "hsl_";
    /* counters (counter_slot): the carried values are V<k>, read at the kernel's
       entry, where hs_ is computed for the hn_ iterations of this call */
    if (!lp->whilemode && !lp->breaks) { /* a chunk version of the step-1 loop (top_chunks) */
        e.chunk_first = "jc_";
        e.csites = PyList_New(0);
        if (e.csites == NULL)
            PyErr_Clear();
        if (e.csites == NULL)
            e.chunk_first = NULL;
    }
    e.lcarried = PyObject_GetAttrString(n->target, "carried");
    e.louts = fj_graph_outputs(body);
    e.lcount = "hn_";
    if (e.lcarried == NULL || e.louts == NULL || !PyTuple_Check(e.lcarried)) {
        PyErr_Clear();
        Py_CLEAR(e.lcarried);
        e.louts = NULL;
    }
    e.nsites = &nsites;
    if (e.hoist == NULL || e.saves == NULL) {
        Py_DECREF(decl);
        goto done;
    }
    int b = emit_body(&e, lp->nph);
    if (b <= 0) {
        Py_DECREF(decl);
        Py_CLEAR(e.hoist);
        r = b;
        goto done;
    }
    {
        /* the bounds checks hoisted out of the top loop, for its whole range */
        PyObject *d = PyUnicode_FromString("    long long hn_ = step > 0 ? (start < stop ? (stop - start - 1) / step + 1 : 0)"
                                           " : (start > stop ? (start - stop - 1) / (-step) + 1 : 0);\n"
                                           "    long long hl_ = start + (hn_ - 1) * step; int hs_ = hn_ > 0;\n"
                                           "    hs_ = hs_ && start > -(1LL << 62) && start < (1LL << 62) && hl_ > -(1LL << 62) && "
                                           "hl_ < (1LL << 62);\n"
                                           "    const int hsl_ = 0; /* the top level's saved stores log in the checked versions */");
        int bad = d == NULL || PyList_Append(decl, d) < 0;
        Py_XDECREF(d);
        for (Py_ssize_t k = 0; !bad && k < PyList_GET_SIZE(e.hoist); k++)
            bad = PyList_Append(decl, PyList_GET_ITEM(e.hoist, k)) < 0;
        /* the version without checks also takes every array's last axis as
           contiguous (its stride a constant the compiler can use) */
        for (int k = 0; !bad && k < lp->nph; k++) {
            if (lp->ph[k].kind != FJL_ARRAY)
                continue;
            PyObject *c = PyUnicode_FromFormat("    hs_ = hs_ && A%ds%d == %d;", k, lp->ph[k].ndim - 1,
                                               fjn_type_size(lp->ph[k].type));
            bad = c == NULL || PyList_Append(decl, c) < 0;
            Py_XDECREF(c);
        }
        Py_CLEAR(e.hoist);
        /* the forwarded store's registers (forward_analysis) */
        for (int k = 1; !bad && e.fw_store >= 0 && k <= e.fw_max; k++) {
            VClass ec = {FJL_NP, e.cls[e.fw_arr->index].type};
            PyObject *c = PyUnicode_FromFormat("    %s fw%d_ = 0;", ctype_of(ec), k);
            bad = c == NULL || PyList_Append(decl, c) < 0;
            Py_XDECREF(c);
        }
        if (bad) {
            Py_DECREF(decl);
            goto done;
        }
    }
    Py_ssize_t body_end = PyList_GET_SIZE(e.src);
    /* after an iteration: the state into o<s>, the carried values into their locals */
    for (int st = 0; st < lp->nstate; st++) {
        int src = lp->out_src[st];
        if (src == FJL_CONST || lp->out[st].kind == FJL_ARRAY)
            continue;
        if (index_out(lp, st))
            continue; /* written back as i - step (index_out) */
        VClass oc = {lp->out[st].kind, lp->out[st].type};
        PyObject *d = PyUnicode_FromFormat("    %s o%d;", ctype_of(oc), st);
        if (d == NULL || PyList_Append(decl, d) < 0) {
            Py_XDECREF(d);
            Py_DECREF(decl);
            goto done;
        }
        Py_DECREF(d);
        if (src >= 0) {
            if (line(&e, "        o%d = %U;", st, e.expr[src]) < 0) {
                Py_DECREF(decl);
                goto done;
            }
        }
        else if (line(&e, "        o%d = n%d;", st, -1 - src) < 0) {
            Py_DECREF(decl);
            goto done;
        }
    }
    for (int k = 0; k < lp->ncarried; k++) {
        int st = lp->carried_slot[k];
        if (lp->out_src[st] == FJL_CONST || lp->out[st].kind == FJL_ARRAY)
            continue;
        if (line(&e, "        V%d = o%d;", 1 + k, st) < 0) {
            Py_DECREF(decl);
            goto done;
        }
    }
    /* saved at a block's start, put back when the block runs again checked */
    PyObject *save = PyList_New(0), *restore = PyList_New(0);
    for (int k = 1; save != NULL && restore != NULL && k < lp->nph; k++) {
        if (lp->ph[k].kind == FJL_ARRAY || k > lp->ncarried)
            continue;
        PyObject *d1 = PyUnicode_FromFormat("    %s V%d_s = V%d;", ctype_of(e.cls[k]), k, k);
        PyObject *d2 = PyUnicode_FromFormat("        V%d = V%d_s;", k, k);
        if (d1 == NULL || d2 == NULL || PyList_Append(save, d1) < 0 || PyList_Append(restore, d2) < 0) {
            Py_CLEAR(save);
        }
        Py_XDECREF(d1);
        Py_XDECREF(d2);
    }
    for (int st = 0; save != NULL && st < lp->nstate; st++) {
        if (lp->out_src[st] == FJL_CONST || lp->out[st].kind == FJL_ARRAY || index_out(lp, st))
            continue;
        VClass oc = {lp->out[st].kind, lp->out[st].type};
        PyObject *d1 = PyUnicode_FromFormat("    %s o%d_s = o%d;", ctype_of(oc), st, st);
        PyObject *d2 = PyUnicode_FromFormat("        o%d = o%d_s;", st, st);
        if (d1 == NULL || d2 == NULL || PyList_Append(save, d1) < 0 || PyList_Append(restore, d2) < 0) {
            Py_CLEAR(save);
        }
        Py_XDECREF(d1);
        Py_XDECREF(d2);
    }
    if (save == NULL || restore == NULL) {
        Py_XDECREF(save);
        Py_XDECREF(restore);
        Py_DECREF(decl);
        goto done;
    }
    /* the state written back, after the loop or where it stopped */
    PyObject *back = PyList_New(0);
    for (int st = 0; back != NULL && st < lp->nstate; st++) {
        if (lp->out_src[st] == FJL_CONST || lp->out[st].kind == FJL_ARRAY)
            continue;
        VClass oc = {lp->out[st].kind, lp->out[st].type};
        PyObject *d = index_out(lp, st) ? PyUnicode_FromFormat("    outs[%d].%s = i - step;", st, field_of(oc))
                                        : PyUnicode_FromFormat("    outs[%d].%s = o%d;", st, field_of(oc), st);
        if (d == NULL || PyList_Append(back, d) < 0)
            Py_CLEAR(back);
        Py_XDECREF(d);
    }
    if (back == NULL || li < 0) { /* an error, or a trial */
        Py_XDECREF(back);
        Py_DECREF(save);
        Py_DECREF(restore);
        Py_DECREF(decl);
        r = back == NULL && li >= 0 ? -1 : 1;
        goto done;
    }
    /* the function: floating-point conditions cleared once, tested after each
       iteration (they stay set: the first iteration that sees one raised it);
       an iteration that cannot finish exactly undoes its stores and returns
       the index the eager loop takes over at */
    PyObject *sep = PyUnicode_FromString("\n");
    PyObject *bodyl = PyList_GetSlice(e.src, 0, body_end), *taill = PyList_GetSlice(e.src, body_end, PyList_GET_SIZE(e.src));
    /* no undo log at all when an iteration can only stop before its first store
       (its float conditions told from values, the fpv lines), for a body with a
       store an undo entry per store logs (an index not hoisted: histogram,
       grouping): the value tests cost less than the entries there, more than
       the saved ranges of hoisted stores (measured: bench/loops) where they
       test for underflow (the tests of * and /, tagged fpu), less where they
       do not (prefix_sum 0.96 -> 0.86 ms, moving_sum 1.50 -> 1.36; ema, a
       recurrence and stencil3 1.1 to 2.2x slower with them).  A body without
       stores keeps the flag test: it saves nothing (trapezoid 0.67 -> 0.84 ms
       with value tests) */
    int keeps = bodyl != NULL && has_line_with(bodyl, "FJL_KEEP(");
    int noundo = bodyl != NULL && e.leaf &&
                 (has_line_starting(bodyl, "    if (fjl_log1(") ||
                  (has_line_with(bodyl, "memcpy(p, &t") && !has_line_with(bodyl, "/*fpu*/"))) &&
                 stops_before_stores(bodyl);
    if (bodyl != NULL && !noundo)
        Py_SETREF(bodyl, without_tag(bodyl, 0, PyList_GET_SIZE(bodyl), "/*fpv*/"));
    /* (without the log the flags are never read: no operation needs keeping before
       their test, and a kept one stopped gcc from merging an index's two checks) */
    else if (bodyl != NULL)
        Py_SETREF(bodyl, without_tag(bodyl, 0, PyList_GET_SIZE(bodyl), "FJL_KEEP("));
    PyObject *btext = sep && bodyl ? PyUnicode_Join(sep, bodyl) : NULL;
    PyObject *ttext = sep && taill ? PyUnicode_Join(sep, taill) : NULL;
    /* a while loop: after an iteration, its test; the loop ends after the iteration
       whose test's truth is wnegs (in the step-1 version i counts alone) */
    PyObject *wx = NULL, *wx1 = PyUnicode_FromString(""), *wxg = PyUnicode_FromString("");
    if (lp->whilemode && wx1 != NULL && wxg != NULL) {
        if (lp->stay_src == FJL_CONST) {
            PyObject *so = PyTuple_GET_ITEM(fj_graph_outputs(fj_loop_body(n->target)), lp->nstate);
            int t = PyObject_IsTrue(so);
            wx = t < 0 ? NULL : PyUnicode_FromString(t ? "1" : "0");
        }
        else if (lp->stay_src >= 0)
            wx = e.expr[lp->stay_src] ? PyUnicode_FromFormat("(%U)", e.expr[lp->stay_src]) : NULL;
        else
            wx = PyUnicode_FromFormat("(n%d)", -1 - lp->stay_src);
        if (wx != NULL) {
            Py_SETREF(wx1, PyUnicode_FromFormat("        if ((%U != 0) == %d) { wexit_ = 1; i += step; break; }\n", wx,
                                                lp->wnegs));
            Py_SETREF(wxg, PyUnicode_FromFormat("        if ((%U != 0) == %d) { wexit_ = 1; ran++; i += step; break; }\n",
                                                wx, lp->wnegs));
        }
        else
            Py_CLEAR(wx1);
    }
    Py_XDECREF(wx);
    PyObject *dtext = sep ? PyUnicode_Join(sep, decl) : NULL;
    PyObject *wtext = sep ? PyUnicode_Join(sep, back) : NULL;
    PyObject *stext = sep ? PyUnicode_Join(sep, save) : NULL;
    PyObject *rtext = sep ? PyUnicode_Join(sep, restore) : NULL;
    PyObject *gs = PyUnicode_FromString("goto stop;"), *gw = PyUnicode_FromString("goto slow;");
    PyObject *fast = btext && gs && gw ? PyUnicode_Replace(btext, gs, gw, -1) : NULL;
    {   /* chunk versions in the version without checks only (below: hs_, every last
           axis contiguous): the others compile faster (conv2d3x3's first call 0.59 ->
           0.4 s); they run where a block failed, or on other strides */
        PyObject *cv = PyUnicode_FromString(" && cw_) {"), *no = PyUnicode_FromString(" && 0) {");
        Py_XSETREF(btext, btext && cv && no ? PyUnicode_Replace(btext, cv, no, -1) : NULL);
        Py_XSETREF(fast, fast && cv && no ? PyUnicode_Replace(fast, cv, no, -1) : NULL);
        Py_XDECREF(cv);
        Py_XDECREF(no);
    }
    /* the fast block's version without the hoisted checks; without undo entries
       too when nothing in it can stop after a store (no check left, no NumPy
       float condition to test at the block's end) */
    PyObject *ucl0 = bodyl ? without_checks(bodyl, 0, PyList_GET_SIZE(bodyl), "hs_") : NULL;
    PyObject *ucl = ucl0 ? without_checks(ucl0, 0, PyList_GET_SIZE(ucl0), "hsl_") : NULL;
    Py_XDECREF(ucl0);
    /* the top level's range saves, at the block's start (bc_ its iterations) */
    PyObject *tsl = PyList_New(0);
    int tbad = tsl == NULL;
    for (Py_ssize_t k = 0; !tbad && k < PyList_GET_SIZE(e.saves); k++)
        tbad = PyList_Append(tsl, PyList_GET_ITEM(e.saves, k)) < 0;
    if (tbad)
        Py_CLEAR(tsl);
    if (noundo && (ucl == NULL || tsl == NULL))
        noundo = 0;
    if (noundo) {
        PyObject *nf = without_undo(bodyl), *nu = without_undo(ucl);
        Py_XSETREF(fast, nf && sep ? PyUnicode_Join(sep, nf) : NULL);
        Py_SETREF(ucl, nu);
        Py_XDECREF(nf);
        if (PyList_SetSlice(tsl, 0, PyList_GET_SIZE(tsl), NULL) < 0)
            Py_CLEAR(tsl);
    }
    else if (ucl != NULL && tsl != NULL && !npfloat) {
        /* without the undo entries when nothing left can stop the block */
        PyObject *cand = without_tag(ucl, 0, PyList_GET_SIZE(ucl), FJL_LOGGED);
        /* a stop: a check, or a sticky overflow tested at the block's end */
        if (cand == NULL)
            Py_CLEAR(ucl);
        else if (!has_line_with(cand, "goto") && !has_line_with(cand, "ovf_ |=")) {
            Py_SETREF(ucl, Py_NewRef(cand));
            if (PyList_SetSlice(tsl, 0, PyList_GET_SIZE(tsl), NULL) < 0)
                Py_CLEAR(tsl);
        }
        Py_XDECREF(cand);
    }
    PyObject *ctop = ucl != NULL && e.leaf && !lp->whilemode && !lp->breaks ? top_chunks(&e, ucl, ttext, noundo, keeps)
                                                                                : Py_NewRef(Py_None);
    if (ctop == NULL)
        Py_CLEAR(ucl);
    PyObject *sep2 = PyUnicode_FromString("\n");
    PyObject *utext = ucl && sep2 ? PyUnicode_Join(sep2, ucl) : NULL;
    PyObject *ttsv = tsl && sep2 ? PyUnicode_Join(sep2, tsl) : NULL;
    Py_XDECREF(ucl);
    Py_XDECREF(tsl);
    Py_XDECREF(sep2);
    /* (without an undo log, a stop in the block stops there: the eager loop
       continues from that iteration) */
    PyObject *ufast = noundo ? Py_XNewRef(utext) : utext && gs && gw ? PyUnicode_Replace(utext, gs, gw, -1) : NULL;
    PyObject *upre = ttsv && gs && gw ? PyUnicode_Replace(ttsv, gs, gw, -1) : NULL;
    Py_XDECREF(utext);
    Py_XDECREF(ttsv);
    if (dtext != NULL) { /* (after every chunk version is known) */
        PyObject *cw = cw_text(lp);
        Py_SETREF(dtext, cw ? PyUnicode_FromFormat("%U\n%U", dtext, cw) : NULL);
        Py_XDECREF(cw);
    }
    if (upre != NULL && ctop != NULL && ctop != Py_None) /* the chunks instead of the block's saves */
        Py_SETREF(upre, PyUnicode_FromFormat("        if (step == 1 && cw_) {\n%U        } else {\n%U\n        }", ctop, upre));
    Py_XDECREF(ctop);
    for (int k = 0; ufast != NULL && upre != NULL && k < lp->nph; k++) {
        if (lp->ph[k].kind != FJL_ARRAY)
            continue;
        PyObject *from = PyUnicode_FromFormat("A%ds%d", k, lp->ph[k].ndim - 1);
        PyObject *to = PyUnicode_FromFormat("%d", fjn_type_size(lp->ph[k].type));
        if (from != NULL && to != NULL) {
            Py_SETREF(ufast, PyUnicode_Replace(ufast, from, to, -1));
            Py_SETREF(upre, ufast ? PyUnicode_Replace(upre, from, to, -1) : NULL);
        }
        else
            Py_CLEAR(ufast);
        Py_XDECREF(from);
        Py_XDECREF(to);
    }
    /* a block's log emptied, its saves' last ranges forgotten */
    PyObject *reset = PyUnicode_FromString("lg.n = 0; lg.na = 0; ovf_ = 0;"), *sdecl = PyUnicode_FromString("");
    for (int k = 0; reset != NULL && sdecl != NULL && k < nsites; k++) {
        Py_SETREF(reset, PyUnicode_FromFormat("%U rp%d = NULL;", reset, k));
        Py_SETREF(sdecl, sdecl ? PyUnicode_FromFormat("%U    char *rp%d = NULL; long long rc%d = 0, rs%d = 0;\n", sdecl, k, k,
                                                      k)
                               : NULL);
    }
    Py_XDECREF(gs);
    Py_XDECREF(gw);
    Py_XDECREF(bodyl);
    Py_XDECREF(taill);
    Py_XDECREF(sep);
    Py_DECREF(decl);
    Py_DECREF(back);
    Py_DECREF(save);
    Py_DECREF(restore);
    /* a block's iterations: more for a loop without inner loops (its iterations are
       short; a block's fixed costs spread over more) */
    int blk = e.leaf ? 512 : 64;
    long long cap = (long long)e.top_stores * blk + 256;
    /* a level without inner loops: its version without checks once more for a step
       of 1 (a unit stride the compiler can vectorize) */
    char *step1 = NULL;
    if (e.leaf && ufast != NULL && ttext != NULL && wx1 != NULL) {
        /* the forwarded store's registers loaded from memory (forward_analysis) */
        PyObject *pre = fw_preload(&e), *on = PyUnicode_FromString("fwon_"), *one = PyUnicode_FromString("1");
        PyObject *uf1 = on != NULL && one != NULL ? PyUnicode_Replace(ufast, on, one, -1) : NULL;
        PyObject *t = pre != NULL && uf1 != NULL
                          ? PyUnicode_FromFormat("        if (step == 1) {\n%U        for (long long ie_ = i + (bc_ - ran); i < ie_; i++) {\n%U\n%U\n%U"
                                                 "        }\n        ran = (int)(i - bi);\n        }\n", pre, uf1, ttext, wx1)
                          : NULL;
        Py_XDECREF(pre);
        Py_XDECREF(on);
        Py_XDECREF(one);
        Py_XDECREF(uf1);
        const char *u8 = t ? PyUnicode_AsUTF8(t) : NULL;
        step1 = u8 ? PyMem_Malloc(strlen(u8) + 1) : NULL;
        if (step1 != NULL)
            strcpy(step1, u8);
        Py_XDECREF(t);
        if (step1 == NULL) {
            Py_CLEAR(ufast);
            if (!PyErr_Occurred())
                PyErr_NoMemory();
        }
    }
    PyObject *fn = btext && ttext && fast && ufast && upre && stext && rtext && dtext && wtext && reset && sdecl &&
                   wx1 && wxg ? PyUnicode_FromFormat(
        "\n#ifndef FJL_V\n#define FJL_V\n"
        "typedef union { double d; float f; long long i; struct { char *data; long long shape[2]; "
        "long long strides[2]; } a; } fjl_v;\n"
        "static inline float fj_f32(unsigned int u) { float f; memcpy(&f, &u, 4); return f; }\n"
        "/* whether no operand is NaN, asked where a result is not finite (out of line: see fpv) */\n"
        "#if defined(__GNUC__)\n#define FJL_COLDFN __attribute__((noinline, cold))\n#else\n#define FJL_COLDFN\n#endif\n"
        "FJL_COLDFN static int fj_nn1(double a) { return !(a != a); }\n"
        "FJL_COLDFN static int fj_nn2(double a, double b) { return !(a != a) && !(b != b); }\n"
        "#if defined(__x86_64__) && defined(__SSE2__)\n#define FJL_KEEP(x) __asm__ volatile(\"\" :: \"x\"(x))\n"
        "#elif defined(__aarch64__)\n#define FJL_KEEP(x) __asm__ volatile(\"\" :: \"w\"(x))\n"
        "#else\n#define FJL_KEEP(x) __asm__ volatile(\"\" :: \"m\"(x))\n#endif\n"
        "/* the undo log of a block: an element's old value (cnt 0), or a range's old values\n"
        "   (cnt elements 'stride' bytes apart, kept in the arena at 'off') */\n"
        "typedef struct { char *p; long long cnt, stride; size_t n, off; char old[8]; } fjl_undo;\n"
        "typedef struct { fjl_undo *u; long long n, cap; char *ar; size_t na, acap; } fjl_log;\n"
        "/* a block ends early once its saved ranges hold this many bytes */\n"
        "#define FJL_AMAX ((size_t)1 << 19)\n"
        "static int fjl_grow(fjl_log *L)\n"
        "{ fjl_undo *n = realloc(L->u, sizeof(fjl_undo) * (size_t)(L->cap * 2)); if (n == NULL) return 1;\n"
        "  L->u = n; L->cap *= 2; return 0; }\n"
        "static inline int fjl_log1(fjl_log *L, char *p, size_t n)\n"
        "{ if (L->n == L->cap && fjl_grow(L)) return 1;\n"
        "  fjl_undo *u = &L->u[L->n++]; u->p = p; u->cnt = 0; u->n = n; memcpy(u->old, p, n); return 0; }\n"
        "/* a range's old values, unless this site saved the same range last (the\n"
        "   earlier entry restores the older values) */\n"
        "static int fjl_save(fjl_log *L, char **rp, long long *rc, long long *rs, char *p, long long cnt,\n"
        "                    long long stride, size_t n)\n"
        "{ if (cnt <= 0 || (*rp == p && *rc == cnt && *rs == stride)) return 0;\n"
        "  if (L->n == L->cap && fjl_grow(L)) return 1;\n"
        "  size_t need = L->na + (size_t)cnt * n;\n"
        "  if (need > L->acap) { size_t c = L->acap ? L->acap : 4096; while (c < need) c *= 2;\n"
        "    char *a = realloc(L->ar, c); if (a == NULL) return 1; L->ar = a; L->acap = c; }\n"
        "  fjl_undo *u = &L->u[L->n++]; u->p = p; u->cnt = cnt; u->stride = stride; u->n = n; u->off = L->na;\n"
        "  if (stride == (long long)n) memcpy(L->ar + L->na, p, (size_t)cnt * n);\n"
        "  else for (long long k = 0; k < cnt; k++) memcpy(L->ar + L->na + (size_t)k * n, p + k * stride, n);\n"
        "  L->na = need; *rp = p; *rc = cnt; *rs = stride; return 0; }\n"
        "/* the log undone, newest entry first; a range's slots last to first (the\n"
        "   first slot of an element written in place holds its oldest value) */\n"
        "static void fjl_undo_all(fjl_log *L)\n"
        "{ while (L->n > 0) { fjl_undo *u = &L->u[--L->n];\n"
        "    if (u->cnt == 0) memcpy(u->p, u->old, u->n);\n"
        "    else if (u->stride == (long long)u->n) memcpy(u->p, L->ar + u->off, (size_t)u->cnt * u->n);\n"
        "    else for (long long k = u->cnt - 1; k >= 0; k--) memcpy(u->p + k * u->stride, L->ar + u->off + (size_t)k * u->n, u->n); }\n"
        "  L->na = 0; }\n"
        "/* the iterations of an inner level's chunk (chunk_version) */\n"
        "#define FJL_CK 16\n"
        "/* a chunk's buffer written (its values computed) before its conditions are read:\n"
        "   the status register's read does not order arithmetic by itself */\n"
        "#ifndef FJL_FENCE\n#if defined(__GNUC__)\n#define FJL_FENCE(b) __asm__ volatile(\"\" : \"+m\"(b))\n"
        "#else\n#define FJL_FENCE(b) ((void)0)\n#endif\n#endif\n"
        "#ifndef FJL_CKT\n#define FJL_CKT 64\n#endif\n"
        "/* whether two arrays' memory (each from its lowest to its highest element's\n"
        "   end) is apart: an empty one is apart from all */\n"
        "static int fjl_ext(const fjl_v *a, int nd, long long isz, char **lo, char **hi)\n"
        "{ char *l = a->a.data, *h = a->a.data;\n"
        "  for (int d = 0; d < nd; d++) { long long n = a->a.shape[d], s; if (n <= 0) return 0;\n"
        "    s = (n - 1) * a->a.strides[d]; if (s < 0) l += s; else h += s; }\n"
        "  *lo = l; *hi = h + isz; return 1; }\n"
        "static int fjl_disj(const fjl_v *a, int na, long long sa, const fjl_v *b, int nb, long long sb)\n"
        "{ char *al, *ah, *bl, *bh;\n"
        "  if (!fjl_ext(a, na, sa, &al, &ah) || !fjl_ext(b, nb, sb, &bl, &bh)) return 1;\n"
        "  return ah <= bl || bh <= al; }\n"
        "#endif\n"
        "/* captured loop %d */\n"
        "int fj_l%d(long long start, long long stop, long long step, fjl_v *v, fjl_v *outs, int ignore, "
        "long long *stopped)\n{\n"
        "    fjl_log lg = {malloc(sizeof(fjl_undo) * (size_t)%lld), 0, %lld, NULL, 0, 0};\n"
        "    int done_any = 0, wexit_ = 0, xit_ = 0; /* (xit_: stopped at a for loop's break) */\n"
        "    long long ovf_ = 0; /* sticky int overflow: its sign bit */\n"
        "    long long i = start;\n"
        "%U\n%U"
        "    if (lg.u == NULL) { *stopped = start; return 2; }\n"
        "    fj_feclear(FJ_FPE);\n"
        "    while (step > 0 ? i < stop : i > stop) {\n"
        "        /* a block of iterations, its conditions tested once at its end */\n"
        "        long long bi = i; int ran = 0;\n"
        "        long long bc_ = hn_ - (i - start) / step; if (bc_ > %d) bc_ = %d;\n"
        "        %U\n"
        "%U\n"
        "        if (hs_) {\n"
        "%U\n"
        "%s"
        "        for (; ran < bc_%s && !wexit_; ran++, i += step) {\n"
        "%U\n%U\n%U"
        "        }\n"
        "        } else {\n"
        "        for (; ran < bc_%s && !wexit_; ran++, i += step) {\n"
        "%U\n%U\n%U"
        "        }\n"
        "        }\n"
        "        if (ovf_ >= 0 && (!%d || !(fj_fetest(FJ_FPE) & ~ignore))) { done_any |= ran > 0; if (wexit_) break; continue; }\n"
        "    slow:\n"
        "        /* the block again, each iteration checked: its stores undone, its state back */\n"
        "        xit_ = 0;\n"
        "        fjl_undo_all(&lg);\n"
        "%U\n"
        "        fj_feclear(FJ_FPE);\n"
        "        wexit_ = 0;\n"
        "        for (i = bi, ran = 0; ran < %d && (step > 0 ? i < stop : i > stop); ran++, i += step) {\n"
        "        %U\n"
        "%U\n"
        "        if (ovf_ < 0 || (%d && (fj_fetest(FJ_FPE) & ~ignore))) goto stop;\n"
        "%U\n"
        "        done_any = 1;\n"
        "%U"
        "        }\n"
        "        if (wexit_) break;\n"
        "        continue;\n"
        "    stop:\n"
        "        fjl_undo_all(&lg);\n"
        "        done_any |= i != start; /* the iterations before i are final */\n"
        "        free(lg.u);\n"
        "        free(lg.ar);\n"
        "        *stopped = i;\n"
        "        if (done_any) {\n%U\n        }\n"
        "        return (done_any ? 1 : 2) + (xit_ ? 4 : 0);\n"
        "    }\n"
        "    free(lg.u);\n"
        "    free(lg.ar);\n"
        "    if (done_any) {\n%U\n    }\n"
        "    /* a while loop whose test did not end it ran its chunk: status 3 (fjn_loop_run\n"
        "       calls again from i); one a compound test's exit ended before any iteration\n"
        "       of the call: 4 (the state is what the call began with) */\n"
        "    *stopped = i;\n"
        "    return %d && !wexit_ ? 3 : done_any ? 0 : 4;\n}\n",
        li, li, cap, cap, dtext, sdecl, blk, blk, reset, stext, upre, step1 ? step1 : "", e.leaf ? "" : " && lg.na < FJL_AMAX",
        ufast, ttext, wxg, e.leaf ? "" : " && lg.na < FJL_AMAX", fast, ttext, wxg, npfloat && !noundo, rtext, blk, reset, btext,
        npfloat && !noundo, ttext, wxg,
        wtext, wtext, lp->whilemode) : NULL;
    PyMem_Free(step1);
    Py_XDECREF(wx1);
    Py_XDECREF(wxg);
    Py_XDECREF(upre);
    Py_XDECREF(reset);
    Py_XDECREF(sdecl);
    Py_XDECREF(btext);
    Py_XDECREF(ttext);
    Py_XDECREF(fast);
    Py_XDECREF(ufast);
    Py_XDECREF(stext);
    Py_XDECREF(rtext);
    Py_XDECREF(dtext);
    Py_XDECREF(wtext);
    if (fn != NULL) { /* forwarding off outside the step-1 version */
        PyObject *on = PyUnicode_FromString("fwon_"), *zero = PyUnicode_FromString("0");
        Py_SETREF(fn, on != NULL && zero != NULL ? PyUnicode_Replace(fn, on, zero, -1) : NULL);
        Py_XDECREF(on);
        Py_XDECREF(zero);
    }
    if (fn != NULL) { /* the chunks' float conditions: tested where NumPy's are */
        PyObject *np = PyUnicode_FromString("FJL_NPF"), *v = PyUnicode_FromString(npfloat ? "1" : "0");
        Py_SETREF(fn, np != NULL && v != NULL ? PyUnicode_Replace(fn, np, v, -1) : NULL);
        Py_XDECREF(np);
        Py_XDECREF(v);
    }
    if (fn == NULL || PyList_Append(buf, fn) < 0) {
        Py_XDECREF(fn);
        goto done;
    }
    Py_DECREF(fn);
    r = 1;
done:
    Py_XDECREF(e.hoist);
    Py_XDECREF(e.saves);
    Py_XDECREF(e.lcarried);
    Py_XDECREF(e.csites);
    Py_XDECREF(e.nodes);
    Py_XDECREF(e.src);
    PyMem_Free(e.cls);
    if (e.expr != NULL)
        for (int k = 0; k < lp->nph; k++)
            Py_XDECREF(e.expr[k]);
    PyMem_Free(e.expr);
    PyMem_Free(e.arr);
    return r;
}

/* ---- running ----------------------------------------------------------------- */

typedef union {
    double d;
    float f;
    long long i;
    struct {
        char *data;
        long long shape[2];
        long long strides[2];
    } a;
} fjl_v;

/* Unboxes 'o' into 'out' as slot 's' expects: 1, or 0 when it is not that. */
static int unbox(const fjl_Slot *s, PyObject *o, fjl_v *out)
{
    switch (s->kind) {
    case FJL_PY_INT: {
        if (!PyLong_CheckExact(o))
            return 0;
        int overflow;
        out->i = PyLong_AsLongLongAndOverflow(o, &overflow);
        if (overflow || (out->i == -1 && PyErr_Occurred())) {
            PyErr_Clear();
            return 0;
        }
        return 1;
    }
    case FJL_PY_FLOAT:
        if (!PyFloat_CheckExact(o))
            return 0;
        out->d = PyFloat_AS_DOUBLE(o);
        return 1;
    case FJL_PY_BOOL:
        if (!PyBool_Check(o))
            return 0;
        out->i = o == Py_True;
        return 1;
    case FJL_NP: {
        if (!PyArray_IsScalar(o, Generic) || s->descr == NULL)
            return 0;
        PyArray_Descr *d = PyArray_DescrFromScalar(o);
        int same = d != NULL && PyArray_EquivTypes(d, s->descr) && Py_TYPE(o) == s->descr->typeobj;
        Py_XDECREF(d);
        if (!same)
            return 0;
        memset(out, 0, sizeof *out);
        switch (s->type) {
        case FJT_F64: PyArray_ScalarAsCtype(o, &out->d); break;
        case FJT_F32: PyArray_ScalarAsCtype(o, &out->f); break;
        case FJT_I64: PyArray_ScalarAsCtype(o, &out->i); break;
        case FJT_I32: { int x; PyArray_ScalarAsCtype(o, &x); out->i = x; break; }
        case FJT_BOOL: { unsigned char x; PyArray_ScalarAsCtype(o, &x); out->i = x != 0; break; }
        default: return 0;
        }
        return 1;
    }
    case FJL_ARRAY: {
        if (!PyArray_CheckExact(o))
            return 0;
        PyArrayObject *a = (PyArrayObject *)o;
        if (PyArray_NDIM(a) != s->ndim || !PyArray_ISALIGNED(a) || !PyArray_ISNBO(PyArray_DESCR(a)->byteorder) ||
            fjn_type_of_descr(PyArray_DESCR(a)) != s->type || (s->stored && !PyArray_ISWRITEABLE(a)))
            return 0;
        out->a.data = PyArray_BYTES(a);
        for (int k = 0; k < s->ndim; k++) {
            out->a.shape[k] = PyArray_DIMS(a)[k];
            out->a.strides[k] = PyArray_STRIDES(a)[k];
        }
        return 1;
    }
    }
    return 0;
}

/* A new reference to the Python value of 'v' as slot 's' holds it. */
static PyObject *box(const fjl_Slot *s, const fjl_v *v)
{
    switch (s->kind) {
    case FJL_PY_INT:
        return PyLong_FromLongLong(v->i);
    case FJL_PY_FLOAT:
        return PyFloat_FromDouble(v->d);
    case FJL_PY_BOOL:
        return PyBool_FromLong((long)v->i);
    case FJL_NP: {
        char buf[16];
        memset(buf, 0, sizeof buf);
        switch (s->type) {
        case FJT_F64: memcpy(buf, &v->d, 8); break;
        case FJT_F32: memcpy(buf, &v->f, 4); break;
        case FJT_I64: memcpy(buf, &v->i, 8); break;
        case FJT_I32: { int x = (int)v->i; memcpy(buf, &x, 4); break; }
        case FJT_BOOL: buf[0] = (char)(v->i != 0); break;
        }
        return PyArray_Scalar(buf, s->descr, NULL);
    }
    }
    PyErr_SetString(PyExc_SystemError, "framejit native loop: no box");
    return NULL;
}

static PyObject *arg_value(PyObject *a, PyObject **env)
{
    return fj_Node_Check(a) ? env[((fj_Node *)a)->index] : a;
}

PyObject *fjn_loop_run(fjn_LoopPlan *lp, fj_Node *n, PyObject **env, Py_ssize_t *fallbacks)
{
    Py_ssize_t na = PyTuple_GET_SIZE(n->args), nlifted = na - 3 - lp->nstate - lp->whilemode;
    fjl_v v[FJL_MAX_VALUES], outs[FJL_MAX_VALUES];
    PyObject *state = NULL, *result = NULL, *rest = NULL;
    long long start, stop, step, at = 0;
    int overflow = 0, ok = lp->fn != NULL && nlifted == lp->nph - 1 - lp->ncarried;
    start = ok ? PyLong_AsLongLongAndOverflow(arg_value(PyTuple_GET_ITEM(n->args, 0), env), &overflow) : 0;
    ok = ok && !overflow;
    stop = ok ? PyLong_AsLongLongAndOverflow(arg_value(PyTuple_GET_ITEM(n->args, 1), env), &overflow) : 0;
    ok = ok && !overflow;
    step = ok ? PyLong_AsLongLongAndOverflow(arg_value(PyTuple_GET_ITEM(n->args, 2), env), &overflow) : 0;
    ok = ok && !overflow && step != 0 && !PyErr_Occurred() && stop < (1LL << 62) && stop > -(1LL << 62) &&
         step < (1LL << 30) && step > -(1LL << 30);
    PyErr_Clear();
    memset(v, 0, sizeof v);
    memset(outs, 0, sizeof outs);
    for (int k = 0; ok && k < lp->ncarried; k++)
        ok = unbox(&lp->ph[1 + k], arg_value(PyTuple_GET_ITEM(n->args, 3 + lp->carried_slot[k]), env), &v[1 + k]);
    for (Py_ssize_t m = 0; ok && m < nlifted; m++)
        ok = unbox(&lp->ph[1 + lp->ncarried + m], arg_value(PyTuple_GET_ITEM(n->args, 3 + lp->nstate + m), env),
                   &v[1 + lp->ncarried + m]);
    int status = 2, brk = 0;
    int wskip = 0;
    if (ok && lp->whilemode) {
        /* the test's first value: no iteration when its truth is wneg0 */
        int t = PyObject_IsTrue(arg_value(PyTuple_GET_ITEM(n->args, na - 1), env));
        if (t < 0)
            return NULL;
        wskip = t == lp->wneg0;
    }
    if (ok && (wskip || (step > 0 ? start >= stop : start <= stop))) {
        /* no iteration (a range whose bounds are graph values may be empty): the
           state is the arguments */
        PyObject *st = PyTuple_New(lp->nstate);
        for (int s = 0; st != NULL && s < lp->nstate; s++)
            PyTuple_SET_ITEM(st, s, Py_NewRef(arg_value(PyTuple_GET_ITEM(n->args, 3 + s), env)));
        return st;
    }
    if (ok) {
        int ignore = fjn_ignored_flags(), chunks = 0;
        /* a while loop runs in chunks of iterations, between which a signal (Ctrl-C)
           is seen, as CPython would see it; a for loop in one call */
        long long cstop = lp->whilemode ? (start + FJL_WCHUNK < stop ? start + FJL_WCHUNK : stop) : stop;
        for (;;) {
            status = lp->fn(start, cstop, step, v, outs, ignore, &at);
            feclearexcept(FE_ALL_EXCEPT);
            if (status == 5 || status == 6) {
                status -= 4; /* stopped at a break: the eager loop runs that iteration (no fallback) */
                brk = 1;
            }
            if (!(lp->whilemode && status == 3))
                break;
            chunks++;
            if (PyErr_CheckSignals() < 0)
                return NULL;
            /* the next chunk from the state the last one left: its carried values */
            PyObject *bouts = fj_graph_outputs(fj_loop_body(n->target));
            for (int k = 0; ok && k < lp->ncarried; k++) {
                int slot = lp->carried_slot[k];
                if (lp->out_src[slot] == FJL_CONST)
                    ok = unbox(&lp->ph[1 + k], PyTuple_GET_ITEM(bouts, slot), &v[1 + k]);
                else if (lp->out[slot].kind != FJL_ARRAY)
                    v[1 + k] = outs[slot];
            }
            if (!ok) /* (a constant that does not unbox: not compiled so) */
                return PyErr_Occurred() ? NULL : (PyErr_SetString(PyExc_SystemError, "framejit while loop state"), NULL);
            start = at;
            cstop = start + FJL_WCHUNK < stop ? start + FJL_WCHUNK : stop;
        }
        if (status == 2 && chunks > 0)
            status = 1; /* the chunks before did iterations: their state stands */
        if (status == 4 && chunks > 0)
            status = 0; /* (ended by a compound test's exit: the chunks' state stands) */
    }
    else
        at = 0;
    /* the state: the arguments (no iteration done), or the outputs after the last one */
    if ((state = PyTuple_New(lp->nstate)) == NULL)
        return NULL;
    PyObject *body_outs = fj_graph_outputs(fj_loop_body(n->target));
    for (int s = 0; s < lp->nstate; s++) {
        PyObject *val;
        if (!ok || status == 2 || status == 4)
            val = Py_NewRef(arg_value(PyTuple_GET_ITEM(n->args, 3 + s), env));
        else if (lp->out_src[s] == FJL_CONST)
            val = Py_NewRef(PyTuple_GET_ITEM(body_outs, s));
        else if (lp->out[s].kind == FJL_ARRAY) {
            /* an array placeholder passed through: the object given */
            int src = lp->out_src[s];
            PyObject *arg = NULL;
            if (src >= 1 && src <= lp->ncarried)
                arg = PyTuple_GET_ITEM(n->args, 3 + lp->carried_slot[src - 1]);
            else if (src > lp->ncarried)
                arg = PyTuple_GET_ITEM(n->args, 3 + lp->nstate + (src - 1 - lp->ncarried));
            val = arg ? Py_NewRef(arg_value(arg, env)) : NULL;
            if (val == NULL)
                PyErr_SetString(PyExc_SystemError, "framejit native loop: array output");
        }
        else
            val = box(&lp->out[s], &outs[s]);
        if (val == NULL) {
            Py_DECREF(state);
            return NULL;
        }
        PyTuple_SET_ITEM(state, s, val);
    }
    if (ok && (status == 0 || status == 4))
        return state;
    /* from iteration 'at' on through the eager loop: it raises or warns as CPython
       (or breaks) */
    if (!brk)
        (*fallbacks)++;
    if (!ok)
        at = 0;
    rest = PyTuple_New(na);
    if (rest == NULL) {
        Py_DECREF(state);
        return NULL;
    }
    PyTuple_SET_ITEM(rest, 0, ok ? PyLong_FromLongLong(at) : Py_NewRef(arg_value(PyTuple_GET_ITEM(n->args, 0), env)));
    PyTuple_SET_ITEM(rest, 1, Py_NewRef(arg_value(PyTuple_GET_ITEM(n->args, 1), env)));
    if (lp->whilemode) /* the iteration stopped at was to run: its test's value let it */
        PyTuple_SET_ITEM(rest, na - 1, Py_NewRef(lp->wneg0 ? Py_False : Py_True));
    PyTuple_SET_ITEM(rest, 2, Py_NewRef(arg_value(PyTuple_GET_ITEM(n->args, 2), env)));
    for (int s = 0; s < lp->nstate; s++)
        PyTuple_SET_ITEM(rest, 3 + s, Py_NewRef(PyTuple_GET_ITEM(state, s)));
    for (Py_ssize_t m = 0; m < nlifted; m++)
        PyTuple_SET_ITEM(rest, 3 + lp->nstate + m, Py_NewRef(arg_value(PyTuple_GET_ITEM(n->args, 3 + lp->nstate + m), env)));
    Py_DECREF(state);
    if (PyTuple_GET_ITEM(rest, 0) == NULL) {
        Py_DECREF(rest);
        return NULL;
    }
    result = PyObject_Call(n->target, rest, NULL);
    Py_DECREF(rest);
    return result;
}
