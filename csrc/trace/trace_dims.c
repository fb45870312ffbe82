/*
** trace_dims.c: symbolic sizes of dynamic dims (docs/dynamic.md).
**
** Responsible for: keeping, for each array Var of a dynamic shape, which of
** its dims are symbols (an input's dynamic dim, an int input used as a size,
** or a linear form over those: the symbol kinds are described above
** symbol_prog) and deciding, before an op with a dynamic operand goes into the graph,
** whether the op can raise for other sizes the guards let through.  Where
** two dims meet in broadcasting, the relation the trace saw is made a guard
** (DIMS_EQUAL, torch's s0 == s1) or, when a symbol meets a fixed size other
** than 1 or the op's shape rule is not modelled, the trace specializes
** (every dynamic input pinned).  A graph op therefore never raises a shape
** error at run time after a side effect traced before it.
**
** The symbols of a NODE Var are in its 'extra2' (a tuple, one entry per dim:
** None for a fixed size, or a symbol); a dynamic NODE Var without one is
** opaque (its sizes are not modelled: shape-sensitive uses specialize).
**
** Not responsible for: the guards' evaluation (guards.c), shape rules (ops_shape.c).
*/
#include "trace.h"

#include "fj_numpy.h"
#include "graph.h"
#include "guards.h"
#include "torch_infer.h"

#define VAR(o) ((fj_Var *)(o))

PyObject *fj_dims_for_input(fj_Source *src, PyObject *dyn, int ndim)
{
    PyObject *t = PyTuple_New(ndim);
    for (int d = 0; t != NULL && d < ndim; d++)
        PyTuple_SET_ITEM(t, d, Py_NewRef(Py_None));
    for (Py_ssize_t i = 0; t != NULL && i < PyTuple_GET_SIZE(dyn); i++) {
        long d = PyLong_AsLong(PyTuple_GET_ITEM(dyn, i));
        if (d < 0 || d >= ndim)
            continue;
        PyObject *sym = Py_BuildValue("(OlO)", src->text, d, (PyObject *)src);
        if (sym == NULL)
            Py_CLEAR(t);
        else
            Py_SETREF(PyTuple_GET_ITEM(t, d), sym);
    }
    return t;
}

/* The number of dims a node's sizes have (arrays and tensors; 0 otherwise). */
static int shaped_ndim(const fj_Node *n)
{
    return n->vkind == FJ_VAL_ARRAY || n->vkind == FJ_VAL_TENSOR ? n->ndim : 0;
}

/* The dims of an operand: a new tuple (None = fixed), Py_None when opaque, NULL on error. */
static PyObject *dims_of(PyObject *v)
{
    fj_Var *vv = VAR(v);
    fj_Node *n = (fj_Node *)vv->obj;
    if (shaped_ndim(n) == 0)
        return PyTuple_New(0);
    if (vv->dynamic) {
        if (vv->extra2 != NULL && PyTuple_Check(vv->extra2) && PyTuple_GET_SIZE(vv->extra2) == n->ndim)
            return Py_NewRef(vv->extra2);
        if (n->vkind == FJ_VAL_PYSCALAR)
            return PyTuple_New(0);
        return Py_NewRef(Py_None);
    }
    int nd = shaped_ndim(n);
    PyObject *t = PyTuple_New(nd);
    for (int d = 0; t != NULL && d < nd; d++)
        PyTuple_SET_ITEM(t, d, Py_NewRef(Py_None));
    return t;
}

static int same_symbol(PyObject *a, PyObject *b)
{
    return PyUnicode_Compare(PyTuple_GET_ITEM(a, 0), PyTuple_GET_ITEM(b, 0)) == 0 &&
           PyLong_AsLong(PyTuple_GET_ITEM(a, 1)) == PyLong_AsLong(PyTuple_GET_ITEM(b, 1));
}

/*
** The size of dim 'd' of NODE Var 'v' (an array) as a Var: an int constant
** for a fixed size, the symbolic int of the input dim a symbol names
** (fj_trace_size_input), of the int input, or a form's Python int arithmetic
** over those (x[n:]'s size: s - n).  NULL with no error when v's sizes are
** not modelled (the caller pins), NULL with an error on failure.
*/
static PyObject *symbol_var(fj_TFrame *fr, PyObject *sym);

PyObject *fj_dims_size(fj_TFrame *fr, PyObject *v, int d)
{
    fj_Tracer *tx = fr->tx;
    fj_Node *n = (fj_Node *)VAR(v)->obj;
    if (tx->specialized || d < 0 || d >= shaped_ndim(n) || n->datadep)
        return NULL;
    PyObject *dims = dims_of(v);
    if (dims == NULL || dims == Py_None || PyTuple_GET_SIZE(dims) != n->ndim) {
        Py_XDECREF(dims);
        return NULL;
    }
    PyObject *sym = PyTuple_GET_ITEM(dims, d), *r;
    if (sym == Py_None)
        r = (PyObject *)fj_var_take(FJ_VAR_CONST, PyLong_FromSsize_t((Py_ssize_t)n->shape[d]));
    else
        r = symbol_var(fr, sym);
    Py_DECREF(dims);
    return r;
}

/* The Var of a symbol (fj_dims_size): an input's symbolic int, or a form's
   arithmetic over them (the terms in the symbol's order: positive first). */
static PyObject *symbol_var(fj_TFrame *fr, PyObject *sym)
{
    long d = PyLong_AsLong(PyTuple_GET_ITEM(sym, 1));
    if (d >= 0)
        return (PyObject *)fj_trace_size_input(fr->tx, (fj_Source *)PyTuple_GET_ITEM(sym, 2),
                                               PyLong_AsSsize_t(PyTuple_GET_ITEM(sym, 1)));
    if (d == -1) {
        /* an int input's symbol (size_symbol): its Var */
        PyObject *r = PyDict_GetItemWithError(fr->tx->inputs, PyTuple_GET_ITEM(sym, 0));
        return Py_XNewRef(r);
    }
    PyObject *terms = PyTuple_GET_ITEM(sym, 2), *acc = NULL;
    for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(terms); i++) {
        PyObject *t = PyTuple_GET_ITEM(terms, i);
        long long k = PyLong_AsLongLong(PyTuple_GET_ITEM(t, 1));
        if (k == LLONG_MIN) {
            Py_XDECREF(acc);
            return NULL; /* (not negated: the caller pins) */
        }
        PyObject *av = symbol_var(fr, PyTuple_GET_ITEM(t, 0)), *term = av;
        int sub = acc != NULL && k < 0;
        long long mag = sub ? -k : k;
        if (av != NULL && mag != 1) {
            PyObject *kv = (PyObject *)fj_var_take(FJ_VAR_CONST, PyLong_FromLongLong(mag));
            term = kv ? fj_trace_binop(fr, NB_MULTIPLY, av, kv) : NULL;
            Py_XDECREF(kv);
            Py_DECREF(av);
        }
        if (term == NULL || acc == NULL) {
            Py_XSETREF(acc, term);
            if (term == NULL)
                return NULL;
            continue;
        }
        Py_SETREF(acc, fj_trace_binop(fr, sub ? NB_SUBTRACT : NB_ADD, acc, term));
        Py_DECREF(term);
        if (acc == NULL)
            return NULL;
    }
    long long c = PyLong_AsLongLong(PyTuple_GET_ITEM(sym, 3));
    if (acc != NULL && c != 0) {
        PyObject *cv = (PyObject *)fj_var_take(FJ_VAR_CONST, PyLong_FromLongLong(c < 0 && c > LLONG_MIN ? -c : c));
        Py_SETREF(acc, cv ? fj_trace_binop(fr, c < 0 && c > LLONG_MIN ? NB_SUBTRACT : NB_ADD, acc, cv) : NULL);
        Py_XDECREF(cv);
    }
    return acc;
}

/* The printed form of a symbol: L['x'].shape[0], L['n'] for an int input's, its text for a form. */
static PyObject *symbol_text(PyObject *sym)
{
    long d = PyLong_AsLong(PyTuple_GET_ITEM(sym, 1));
    return d < 0 ? Py_NewRef(PyTuple_GET_ITEM(sym, 0))
                 : PyUnicode_FromFormat("%U.shape[%ld]", PyTuple_GET_ITEM(sym, 0), d);
}

/*
** Symbols (each a tuple): (text, d, source) an input array's dim d; (text, -1,
** source) an int input used as a size (size_symbol), >= 2; (text, -2, terms,
** c) a linear form sum(coef * atom) + c over those (a slice's size s - 1 or
** s - n, a concatenation's 2*s, a reshape's 5*s; docs/dynamic.md "Linear
** sizes"): terms a tuple of (atom, coef), the text printed canonically
** (positive terms first, then by text), so equal texts are equal sizes.  A
** form may be 1 where its guards allow it: rules that treat size 1 apart
** (squeeze, batch_norm) do not model it.
*/
#define LIN_MAX 8
typedef struct {
    int n;
    PyObject *atom[LIN_MAX]; /* strong: symbols of inputs (d >= -1) */
    long long coef[LIN_MAX]; /* non-zero */
    long long c;
} Lin;

static void lin_clear(Lin *f)
{
    for (int i = 0; i < f->n; i++)
        Py_CLEAR(f->atom[i]);
    f->n = 0;
    f->c = 0;
}

/* f += k.  1, or 0 when past int64 (not modelled). */
static int lin_const(Lin *f, long long k)
{
    return !__builtin_add_overflow(f->c, k, &f->c);
}

/* f += k * atom.  1, or 0 when not representable (past int64, too many terms). */
static int lin_term(Lin *f, PyObject *atom, long long k)
{
    for (int i = 0; i < f->n; i++)
        if (same_symbol(f->atom[i], atom)) {
            if (__builtin_add_overflow(f->coef[i], k, &f->coef[i]))
                return 0;
            if (f->coef[i] == 0) {
                Py_DECREF(f->atom[i]);
                f->n--;
                f->atom[i] = f->atom[f->n];
                f->coef[i] = f->coef[f->n];
            }
            return 1;
        }
    if (k == 0)
        return 1;
    if (f->n == LIN_MAX)
        return 0;
    f->atom[f->n] = Py_NewRef(atom);
    f->coef[f->n++] = k;
    return 1;
}

/* f += k * sym, a symbol of any kind.  1 or 0 as lin_term. */
static int lin_add_symbol(Lin *f, PyObject *sym, long long k)
{
    if (PyLong_AsLong(PyTuple_GET_ITEM(sym, 1)) != -2)
        return lin_term(f, sym, k);
    PyObject *terms = PyTuple_GET_ITEM(sym, 2);
    long long m;
    for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(terms); i++) {
        PyObject *t = PyTuple_GET_ITEM(terms, i);
        if (__builtin_mul_overflow(k, PyLong_AsLongLong(PyTuple_GET_ITEM(t, 1)), &m) ||
            !lin_term(f, PyTuple_GET_ITEM(t, 0), m))
            return 0;
    }
    return !__builtin_mul_overflow(k, PyLong_AsLongLong(PyTuple_GET_ITEM(sym, 3)), &m) && lin_const(f, m);
}

/* f += k * g.  1 or 0 as lin_term. */
static int lin_add(Lin *f, const Lin *g, long long k)
{
    long long m;
    for (int i = 0; i < g->n; i++)
        if (__builtin_mul_overflow(k, g->coef[i], &m) || !lin_term(f, g->atom[i], m))
            return 0;
    return !__builtin_mul_overflow(k, g->c, &m) && lin_const(f, m);
}

/* The symbol of form f: an input's symbol itself (1 * atom + 0), Py_None for
   a constant, else (text, -2, terms, c).  New ref, NULL on error. */
static PyObject *lin_symbol(const Lin *f)
{
    if (f->n == 0)
        return Py_NewRef(Py_None);
    if (f->n == 1 && f->coef[0] == 1 && f->c == 0)
        return Py_NewRef(f->atom[0]);
    PyObject *txt[LIN_MAX] = {NULL}, *text = NULL, *terms = NULL, *r = NULL;
    int ord[LIN_MAX], ok = 1;
    for (int i = 0; i < f->n; i++) {
        ord[i] = i;
        ok = ok && (txt[i] = symbol_text(f->atom[i])) != NULL;
    }
    /* canonical order: positive coefficients first, then by text */
    for (int i = 1; ok && i < f->n; i++)
        for (int j = i; j > 0; j--) {
            int a = ord[j - 1], b = ord[j];
            int later = (f->coef[a] < 0) != (f->coef[b] < 0) ? f->coef[a] < 0
                                                              : PyUnicode_Compare(txt[a], txt[b]) > 0;
            if (!later)
                break;
            ord[j - 1] = b;
            ord[j] = a;
        }
    if (ok && (text = PyUnicode_FromString("")) != NULL && (terms = PyTuple_New(f->n)) != NULL) {
        for (int j = 0; text != NULL && j < f->n; j++) {
            int i = ord[j];
            long long k = f->coef[i];
            unsigned long long mag = k < 0 ? 0ULL - (unsigned long long)k : (unsigned long long)k;
            const char *sign = j == 0 ? (k < 0 ? "-" : "") : (k < 0 ? " - " : " + ");
            PyUnicode_AppendAndDel(&text, mag == 1 ? PyUnicode_FromFormat("%s%U", sign, txt[i])
                                                   : PyUnicode_FromFormat("%s%llu*%U", sign, mag, txt[i]));
            PyObject *t = Py_BuildValue("(OL)", f->atom[i], k);
            if (t == NULL)
                Py_CLEAR(text);
            else
                PyTuple_SET_ITEM(terms, j, t);
        }
        if (text != NULL && f->c != 0) {
            unsigned long long mag = f->c < 0 ? 0ULL - (unsigned long long)f->c : (unsigned long long)f->c;
            PyUnicode_AppendAndDel(&text, PyUnicode_FromFormat(f->c < 0 ? " - %llu" : " + %llu", mag));
        }
        if (text != NULL)
            r = Py_BuildValue("(OiOL)", text, -2, terms, f->c);
    }
    for (int i = 0; i < f->n; i++)
        Py_XDECREF(txt[i]);
    Py_XDECREF(text);
    Py_XDECREF(terms);
    return r;
}

/* Appends the program words of symbol 'sym' to 'prog', its input symbols to 'syms'.  0 or -1. */
static int symbol_prog(PyObject *sym, PyObject *syms, PyObject *prog)
{
    long d = PyLong_AsLong(PyTuple_GET_ITEM(sym, 1));
    if (d == -2) {
        PyObject *terms = PyTuple_GET_ITEM(sym, 2);
        for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(terms); i++) {
            PyObject *t = PyTuple_GET_ITEM(terms, i);
            long long k = PyLong_AsLongLong(PyTuple_GET_ITEM(t, 1));
            if (symbol_prog(PyTuple_GET_ITEM(t, 0), syms, prog) < 0 ||
                (k != 1 && (fj_rel_word(prog, FJ_REL_CONST, k) < 0 || fj_rel_word(prog, FJ_REL_MUL, 0) < 0)) ||
                (i > 0 && fj_rel_word(prog, FJ_REL_ADD, 0) < 0))
                return -1;
        }
        long long c = PyLong_AsLongLong(PyTuple_GET_ITEM(sym, 3));
        return c != 0 && (fj_rel_word(prog, FJ_REL_CONST, c) < 0 || fj_rel_word(prog, FJ_REL_ADD, 0) < 0) ? -1 : 0;
    }
    PyObject *pair = Py_BuildValue("(Ol)", PyTuple_GET_ITEM(sym, 2), d);
    Py_ssize_t k = PyList_GET_SIZE(syms);
    int r = pair != NULL && PyList_Append(syms, pair) == 0 ? fj_rel_word(prog, FJ_REL_SYM, k) : -1;
    Py_XDECREF(pair);
    return r;
}

/* The RELATION guard 'a <op> b' (Py_EQ, Py_GE, Py_LE) over symbols; 'b' a
   symbol or, when NULL, the constant 'c'.  1 when guarded, 0 when the guard
   cannot be computed for the values now or does not hold for them (the
   caller pins), -1 on error. */
static int guard_rel(fj_Tracer *tx, PyObject *a, int op, PyObject *b, long long c)
{
    if (op == Py_GE && b == NULL && c <= 2 && PyLong_AsLong(PyTuple_GET_ITEM(a, 1)) >= -1)
        return 1; /* an input's dynamic dim, an int size: >= 2 already (TENSOR_MATCH, size_symbol) */
    PyObject *syms = PyList_New(0), *prog = PyList_New(0), *ta = NULL, *tb = NULL, *text = NULL;
    int r = -1;
    if (syms != NULL && prog != NULL && (ta = symbol_text(a)) != NULL &&
        (tb = b ? symbol_text(b) : PyUnicode_FromFormat("%lld", c)) != NULL &&
        (text = PyUnicode_FromFormat("%U %s %U", ta, fj_rel_optext(op), tb)) != NULL &&
        symbol_prog(a, syms, prog) == 0 &&
        (b != NULL ? symbol_prog(b, syms, prog) : fj_rel_word(prog, FJ_REL_CONST, c)) == 0 &&
        fj_rel_word(prog, fj_rel_compare(op), 0) == 0)
        r = fj_rel_add(tx, syms, prog, text);
    Py_XDECREF(syms);
    Py_XDECREF(prog);
    Py_XDECREF(ta);
    Py_XDECREF(tb);
    Py_XDECREF(text);
    return r;
}

/* Guards that symbols 'a' and 'b' stay equal: DIMS_EQUAL for two input dims,
   a RELATION where an int input's symbol or a form takes part.  As
   guard_rel: 1, 0 (pin) or -1. */
static int guard_equal(fj_Tracer *tx, PyObject *a, PyObject *b)
{
    long da = PyLong_AsLong(PyTuple_GET_ITEM(a, 1)), db = PyLong_AsLong(PyTuple_GET_ITEM(b, 1));
    if (da >= 0 && db >= 0)
        return fj_guard_add_dims_equal(tx->guards, PyTuple_GET_ITEM(a, 2), (int)da, PyTuple_GET_ITEM(b, 2),
                                       (int)db) < 0
                   ? -1
                   : 1;
    return guard_rel(tx, a, Py_EQ, b, 0);
}

/*
** The guard 'a <op> b' (Py_EQ, Py_LE, Py_GE) over forms, printed with the
** constants on the right (L['x'].shape[0] - L['n'] >= 1, L['n'] <= 20).  1
** when guarded (or constant and true), 0 when it cannot be (pin), -1 on error.
*/
static int guard_forms(fj_Tracer *tx, const Lin *a, int op, const Lin *b)
{
    static const int flipped[6] = {Py_GT, Py_GE, Py_EQ, Py_NE, Py_LT, Py_LE};
    long long k; /* b->c - a->c */
    if (__builtin_sub_overflow(b->c, a->c, &k) || k == LLONG_MIN)
        return 0;
    Lin l = {0}, rr = {0};
    if (!lin_add(&l, a, 1) || !lin_add(&l, b, -1)) {
        lin_clear(&l);
        return 0;
    }
    if (l.n == 0) /* the same terms on both sides (n <= n + 1): constant, true now */
        return op == Py_EQ ? k == 0 : op == Py_LE ? 0 <= k : 0 >= k;
    lin_clear(&l);
    int left = a->n > 0, r = 0, neg = 1;
    PyObject *sl = NULL, *sr = NULL;
    if (!left) {
        /* c op b: b flipped(op) c */
        op = flipped[op];
        k = -k;
    }
    for (int i = 0; i < (left ? a : b)->n; i++)
        neg = neg && (left ? a : b)->coef[i] < 0;
    if (neg && (!left || b->n == 0)) {
        /* -n >= -39: n <= 39 */
        op = flipped[op];
        k = -k;
    }
    else
        neg = 0;
    if (lin_add(&l, left ? a : b, neg ? -1 : 1)) {
        l.c = 0;
        sl = lin_symbol(&l);
        if (sl != NULL && left && b->n > 0) {
            /* both sides have terms: the constant goes with the right's */
            r = lin_add(&rr, b, 1);
            rr.c = k;
            sr = r ? lin_symbol(&rr) : NULL;
            r = sr == NULL ? (PyErr_Occurred() ? -1 : 0) : guard_rel(tx, sl, op, sr, 0);
        }
        else if (sl != NULL)
            r = guard_rel(tx, sl, op, NULL, k);
        else
            r = -1;
    }
    Py_XDECREF(sl);
    Py_XDECREF(sr);
    lin_clear(&l);
    lin_clear(&rr);
    return r;
}

/*
** A slice bound as a form.  node_form: f += k * v, v a graph argument (an
** int, or a node of Python int arithmetic + - * (by a constant) and unary -
** over the size symbols of the trace: an int input >= 2, a size read from an
** array).  1, 0 when not expressible, -1 on error.
*/
static PyObject *size_symbol(fj_Tracer *tx, PyObject *v);

/* A slice bound: 1 with *v for an int within int64, else 0 (not modelled). */
static int slice_int(PyObject *o, long long *v)
{
    int ovf = 0;
    if (!PyLong_CheckExact(o))
        return 0;
    *v = PyLong_AsLongLongAndOverflow(o, &ovf); /* (an exact int: no error but past int64) */
    return !ovf;
}

static int node_form(fj_Tracer *tx, PyObject *v, Lin *f, long long k, int depth)
{
    long long c, m;
    if (PyLong_CheckExact(v))
        return slice_int(v, &c) && !__builtin_mul_overflow(k, c, &m) && lin_const(f, m);
    if (!fj_Node_Check(v) || depth > 32 || k == LLONG_MIN)
        return 0;
    fj_Node *n = (fj_Node *)v;
    if (n->vkind != FJ_VAL_PYSCALAR || n->variant || n->example == NULL || !PyLong_CheckExact(n->example))
        return 0;
    if (n->kind == FJ_NODE_PLACEHOLDER) {
        fj_Var *pv = fj_trace_placeholder_var(tx, v);
        PyObject *sym = pv != NULL ? size_symbol(tx, (PyObject *)pv) : NULL;
        if (sym == NULL)
            return PyErr_Occurred() ? -1 : 0;
        int r = lin_add_symbol(f, sym, k);
        Py_DECREF(sym);
        return r;
    }
    if (n->kind != FJ_NODE_CALL || n->op == NULL || n->kwargs != NULL || !PyTuple_Check(n->args))
        return 0;
    PyObject *const *a = &PyTuple_GET_ITEM(n->args, 0);
    Py_ssize_t na = PyTuple_GET_SIZE(n->args);
    if (n->op->kind == FJ_OP_UNARY && na == 1 && (n->op->code == FJ_UNARY_NEG || n->op->code == FJ_UNARY_POS))
        return node_form(tx, a[0], f, n->op->code == FJ_UNARY_NEG ? -k : k, depth + 1);
    long long code = fj_rel_arith(n->op);
    if (na != 2)
        return 0;
    if (code == FJ_REL_ADD || code == FJ_REL_SUB) {
        int r = node_form(tx, a[0], f, k, depth + 1);
        return r <= 0 ? r : node_form(tx, a[1], f, code == FJ_REL_SUB ? -k : k, depth + 1);
    }
    if (code != FJ_REL_MUL)
        return 0;
    /* by a constant: one side without terms */
    Lin x = {0}, y = {0};
    int r = node_form(tx, a[0], &x, 1, depth + 1);
    if (r > 0)
        r = node_form(tx, a[1], &y, 1, depth + 1);
    if (r > 0)
        r = x.n == 0 ? !__builtin_mul_overflow(k, x.c, &m) && lin_add(f, &y, m)
            : y.n == 0 ? !__builtin_mul_overflow(k, y.c, &m) && lin_add(f, &x, m)
                       : 0;
    lin_clear(&x);
    lin_clear(&y);
    return r;
}

/*
** Python's clamp of a slice bound (step 1) to [0, size]: bound F (value v
** now) against the size S (value sn now) gives the form *out (zeroed by the
** caller) and its value *now, on the side the values now take, guarded so.
** 1, 0 (not modelled: pin), -1 on error.
*/
static int clamp_bound(fj_Tracer *tx, const Lin *F, long long v, const Lin *S, long long sn, Lin *out,
                       long long *now)
{
    Lin zero = {0}, minus1 = {0}, t = {0};
    minus1.c = -1;
    int r;
    if (v >= 0) {
        if (v <= sn) {
            if ((r = guard_forms(tx, F, Py_GE, &zero)) <= 0 || (r = guard_forms(tx, F, Py_LE, S)) <= 0)
                return r;
            *now = v;
            return lin_add(out, F, 1);
        }
        if ((r = guard_forms(tx, F, Py_GE, S)) <= 0) /* clamps to the size */
            return r;
        *now = sn;
        return lin_add(out, S, 1);
    }
    if ((r = guard_forms(tx, F, Py_LE, &minus1)) <= 0) /* counts from the end */
        return r;
    r = lin_add(&t, F, 1) && lin_add(&t, S, 1);
    if (r && v + sn >= 0) {
        r = guard_forms(tx, &t, Py_GE, &zero);
        *now = v + sn;
        if (r > 0)
            r = lin_add(out, &t, 1);
    }
    else if (r) {
        r = guard_forms(tx, &t, Py_LE, &zero); /* past the start: 0 */
        *now = 0;
    }
    lin_clear(&t);
    return r;
}

/* Bound 'o' of a slice (an int or a node: node_form) with its value now. */
static int bound_form(fj_Tracer *tx, PyObject *o, Lin *f, long long *now)
{
    if (fj_Node_Check(o)) {
        fj_Node *nn = (fj_Node *)o;
        if (nn->example == NULL || !slice_int(nn->example, now))
            return 0;
        return node_form(tx, o, f, 1, 0);
    }
    if (!slice_int(o, now))
        return 0;
    f->c = *now;
    return 1;
}

/*
** The size of x[start:stop:step] along a dim of symbol 'sym' (Py_None: fixed)
** whose size is 'n' now.  Step 1 (or None), bounds None, ints or int
** expressions over size symbols (x[1:], x[:-1], x[n:], x[:n + 1], x[-n:],
** x[a:b]): the size is stop' - start', each bound clamped as the values now
** clamp it and guarded so, the size itself guarded >= 1.  Step -1 over the
** whole dim: the symbol.  Returns the new symbol (new ref), Py_None (new
** ref) for a size that is fixed under those guards, or NULL with no error
** when not modelled (other steps, an empty slice now).
*/
static PyObject *slice_dim(fj_Tracer *tx, PyObject *sym, npy_intp n, PyObject *slice)
{
    PySliceObject *sl = (PySliceObject *)slice;
    long long st = 1;
    if (sl->step != Py_None && !slice_int(sl->step, &st))
        return NULL;
    if (st == -1 && sl->start == Py_None && sl->stop == Py_None && sym != Py_None)
        return Py_NewRef(sym);
    if (st != 1)
        return NULL;
    Lin S = {0}, A = {0}, B = {0}, ea = {0}, eb = {0}, L = {0}, one = {0};
    one.c = 1;
    long long va = 0, vb = 0, na = 0, nb = (long long)n;
    PyObject *res = NULL;
    int r = sym == Py_None ? lin_const(&S, (long long)n) : lin_add_symbol(&S, sym, 1);
    if (r > 0 && sl->start != Py_None && (r = bound_form(tx, sl->start, &A, &va)) > 0)
        r = clamp_bound(tx, &A, va, &S, n, &ea, &na);
    if (r > 0)
        r = sl->stop == Py_None ? lin_add(&eb, &S, 1)
            : (r = bound_form(tx, sl->stop, &B, &vb)) > 0 ? clamp_bound(tx, &B, vb, &S, n, &eb, &nb)
                                                           : r;
    if (r > 0 && nb - na <= 0)
        r = 0; /* empty now: not modelled */
    if (r > 0)
        r = lin_add(&L, &eb, 1) && lin_add(&L, &ea, -1);
    if (r > 0 && (r = guard_forms(tx, &L, Py_GE, &one)) > 0) /* not empty for other sizes either */
        res = lin_symbol(&L);
    lin_clear(&S);
    lin_clear(&A);
    lin_clear(&B);
    lin_clear(&ea);
    lin_clear(&eb);
    lin_clear(&L);
    return res;
}

/*
** The dims of x[key] for basic indexing by constants (ints, slices of int
** bounds, None, Ellipsis, a tuple of them) of an array whose dims are
** modelled: 1 with *out (new tuple), 0 when not modelled (the result is
** opaque), -1 on error.  A slice's bounds may be nodes (x[n:], x[:n + 1]:
** fj_trace_symbolic_slice).
*/
static int getitem_dims(fj_Tracer *tx, PyObject *arr, PyObject *keyv, PyObject **out);

int fj_dims_getitem(fj_Tracer *tx, PyObject *arr, PyObject *keyv, PyObject **out)
{
    *out = NULL;
    return tx->specialized ? 0 : getitem_dims(tx, arr, keyv, out);
}


static int getitem_dims(fj_Tracer *tx, PyObject *arr, PyObject *keyv, PyObject **out)
{
    fj_Var *kv = VAR(keyv);
    fj_Node *a = (fj_Node *)VAR(arr)->obj;
    PyObject *key = NULL;
    if (kv->kind == FJ_VAR_CONST)
        key = Py_NewRef(kv->obj);
    else if (kv->kind == FJ_VAR_TUPLE) {
        key = PyTuple_New(PyList_GET_SIZE(kv->items));
        for (Py_ssize_t i = 0; key != NULL && i < PyList_GET_SIZE(kv->items); i++) {
            fj_Var *it = VAR(PyList_GET_ITEM(kv->items, i));
            if (it->kind != FJ_VAR_CONST) {
                Py_DECREF(key);
                return 0;
            }
            PyTuple_SET_ITEM(key, i, Py_NewRef(it->obj));
        }
    }
    if (key == NULL)
        return PyErr_Occurred() ? -1 : 0;
    if (!PyTuple_Check(key))
        Py_SETREF(key, PyTuple_Pack(1, key));
    PyObject *in = key ? dims_of(arr) : NULL;
    if (in == NULL || in == Py_None || a->datadep || (a->vkind != FJ_VAL_ARRAY && a->vkind != FJ_VAL_TENSOR)) {
        Py_XDECREF(key);
        Py_XDECREF(in);
        return PyErr_Occurred() ? -1 : 0;
    }
    Py_ssize_t nk = PyTuple_GET_SIZE(key), consumed = 0, ell = -1;
    for (Py_ssize_t i = 0; i < nk; i++) {
        PyObject *e = PyTuple_GET_ITEM(key, i);
        if (e == Py_Ellipsis) {
            if (ell >= 0)
                goto unmodelled;
            ell = i;
        }
        else if (PySlice_Check(e) || (PyLong_CheckExact(e)))
            consumed++;
        else if (e != Py_None)
            goto unmodelled; /* a bool, an array, a list: advanced indexing */
    }
    if (consumed > a->ndim)
        goto unmodelled;
    PyObject *res = PyList_New(0);
    int d = 0, bad = res == NULL;
    for (Py_ssize_t i = 0; !bad && i <= nk; i++) {
        PyObject *e = i < nk ? PyTuple_GET_ITEM(key, i) : NULL;
        if (e == NULL || e == Py_Ellipsis) {
            /* the dims the key leaves (all of them after an Ellipsis, or at the end) */
            int stop = e == NULL ? a->ndim : d + (int)(a->ndim - consumed);
            for (; !bad && d < stop; d++)
                bad = PyList_Append(res, PyTuple_GET_ITEM(in, d)) < 0;
            continue;
        }
        if (e == Py_None) {
            bad = PyList_Append(res, Py_None) < 0; /* a new axis of size 1: fixed */
            continue;
        }
        PyObject *sym = PyTuple_GET_ITEM(in, d);
        int symbolic_bound = fj_slice_symbolic(e); /* x[:n] */
        if (PyLong_CheckExact(e)) {
            /* dropped (its range NumPy checks when the graph runs); a tensor's
               index into a symbolic dim: not modelled (the trace pins) */
            if (sym != Py_None && a->vkind == FJ_VAL_TENSOR) {
                Py_DECREF(res);
                goto unmodelled;
            }
            d++;
            continue;
        }
        if (sym == Py_None && !symbolic_bound) {
            bad = PyList_Append(res, Py_None) < 0;
            d++;
            continue;
        }
        PyObject *nd = slice_dim(tx, sym, a->shape[d], e);
        if (nd == NULL) {
            Py_DECREF(res);
            if (PyErr_Occurred())
                goto error;
            goto unmodelled;
        }
        bad = PyList_Append(res, nd) < 0;
        Py_DECREF(nd);
        d++;
    }
    Py_DECREF(key);
    Py_DECREF(in);
    if (bad) {
        Py_XDECREF(res);
        return -1;
    }
    *out = PyList_AsTuple(res);
    Py_DECREF(res);
    return *out ? 1 : -1;
unmodelled:
    Py_DECREF(key);
    Py_DECREF(in);
    return 0;
error:
    Py_DECREF(key);
    Py_DECREF(in);
    return -1;
}

/*
** The symbol of symbolic-int Var 'v' used as a size (a shape argument): a
** size input's is the dim symbol its array's dims carry; an int input's is
** (text, -1, source), with the RELATION guard that it stays >= 2 (sizes 0
** and 1 are specialized: broadcasting treats 1 apart), only when it is >= 2
** now.  New ref; NULL with no error when 'v' is no such symbol.
*/
/* True for a symbolic int that size_symbol takes (checked, no guard added). */
static int is_size_symbol(PyObject *v)
{
    fj_Var *vv = VAR(v);
    if (vv->kind != FJ_VAR_NODE || vv->source == NULL || !vv->dynamic)
        return 0;
    fj_Node *n = (fj_Node *)vv->obj;
    if (n->kind != FJ_NODE_PLACEHOLDER || n->vkind != FJ_VAL_PYSCALAR || n->variant || n->example == NULL ||
        !PyLong_CheckExact(n->example))
        return 0;
    if (vv->size_input)
        return 1;
    int ovf = 0;
    long long x = PyLong_AsLongLongAndOverflow(n->example, &ovf);
    return !ovf && x >= 2;
}

static PyObject *size_symbol(fj_Tracer *tx, PyObject *v)
{
    if (!is_size_symbol(v))
        return NULL;
    fj_Var *vv = VAR(v);
    fj_Source *s = vv->source;
    if (vv->size_input) {
        fj_Source *arr = s->kind == FJ_SRC_SIZE ? s->parent : NULL;
        return arr != NULL ? Py_BuildValue("(OnO)", arr->text, s->index, (PyObject *)arr) : NULL;
    }
    PyObject *text = PyUnicode_FromFormat("%U >= 2", s->text);
    PyObject *syms = text ? Py_BuildValue("((Oi))", (PyObject *)s, -1) : NULL;
    PyObject *prog = syms ? Py_BuildValue("(iiiiii)", FJ_REL_SYM, 0, FJ_REL_CONST, 2, FJ_REL_GE, 0) : NULL;
    PyObject *sym = NULL;
    if (prog != NULL && fj_guard_add_relation(tx->guards, syms, prog, 1, text, &tx->view) > 0)
        sym = Py_BuildValue("(OiO)", s->text, -1, (PyObject *)s);
    Py_XDECREF(text);
    Py_XDECREF(syms);
    Py_XDECREF(prog);
    return sym;
}

/*
** The dims a shape argument 'v' (an int, a symbolic int or a tuple or list
** of them) gives: a new tuple, None for a fixed entry (its size in
** fixed[i], -1 for NumPy's unknown entry), a symbol for a symbolic one.
** NULL with no error when an entry is neither (an expression of symbols).
*/
static PyObject *shape_dims(fj_Tracer *tx, PyObject *v, npy_intp *fixed, int *nd)
{
    fj_Var *vv = VAR(v);
    PyObject *items = vv->kind == FJ_VAR_TUPLE || vv->kind == FJ_VAR_LIST ? vv->items : NULL;
    Py_ssize_t k = items ? PyList_GET_SIZE(items) : 1;
    if (k > FJ_MAX_NDIM)
        return NULL;
    PyObject *t = PyTuple_New(k);
    for (Py_ssize_t i = 0; t != NULL && i < k; i++) {
        PyObject *e = items ? PyList_GET_ITEM(items, i) : v;
        PyObject *c = VAR(e)->kind == FJ_VAR_CONST ? VAR(e)->obj : NULL;
        if (c != NULL && PyLong_CheckExact(c)) {
            fixed[i] = PyLong_AsSsize_t(c);
            if (fixed[i] == -1 && PyErr_Occurred())
                Py_CLEAR(t);
            else
                PyTuple_SET_ITEM(t, i, Py_NewRef(Py_None));
            continue;
        }
        PyObject *sym = size_symbol(tx, e);
        fixed[i] = 0;
        if (sym == NULL)
            Py_CLEAR(t);
        else
            PyTuple_SET_ITEM(t, i, sym);
    }
    *nd = (int)k;
    return t;
}

/* Specializes ('why': for the dynamic log); the result's dims are then not needed.  0 or -1. */
static int pin(fj_Tracer *tx, PyObject **out, const char *why)
{
    *out = NULL;
    return fj_trace_specialize(tx, why);
}


/*
** Broadcasting operands 'ops' (a list of NODE Vars): combines their dims
** right-aligned.  Returns 0 with *out the result's dims (or NULL after
** pinning), -1 on error.
*/
static int combine(fj_Tracer *tx, PyObject *ops, PyObject **out)
{
    int rn = 0, shaped = 0;
    PyObject *only = NULL;
    Py_ssize_t k = PyList_GET_SIZE(ops);
    for (Py_ssize_t i = 0; i < k; i++) {
        fj_Node *n = (fj_Node *)VAR(PyList_GET_ITEM(ops, i))->obj;
        int nd = shaped_ndim(n);
        if (nd > rn)
            rn = nd;
        if (nd > 0) {
            shaped++;
            only = PyList_GET_ITEM(ops, i);
        }
    }
    if (shaped <= 1) {
        /* one operand with dims: the result has its sizes, whatever they are */
        PyObject *d = only ? dims_of(only) : PyTuple_New(0);
        if (d == Py_None)
            Py_CLEAR(d);
        else if (d == NULL)
            return -1;
        *out = d;
        return 0;
    }
    PyObject *res = PyTuple_New(rn), *sizes = NULL;
    npy_intp size[FJ_MAX_NDIM];
    if (res == NULL)
        return -1;
    for (int d = 0; d < rn; d++) {
        PyTuple_SET_ITEM(res, d, Py_NewRef(Py_None));
        size[d] = 1;
    }
    (void)sizes;
    for (Py_ssize_t i = 0; i < k; i++) {
        PyObject *v = PyList_GET_ITEM(ops, i);
        fj_Node *n = (fj_Node *)VAR(v)->obj;
        int nd = shaped_ndim(n);
        PyObject *dims = dims_of(v);
        if (dims == NULL) {
            Py_DECREF(res);
            return -1;
        }
        if (dims == Py_None) {
            Py_DECREF(dims);
            Py_DECREF(res);
            return pin(tx, out, "an operand whose sizes are not modelled meets a dynamic one in broadcasting");
        }
        for (int d = 0; d < nd; d++) {
            int rd = rn - nd + d;
            PyObject *cur = PyTuple_GET_ITEM(res, rd), *sym = PyTuple_GET_ITEM(dims, d);
            npy_intp s = n->shape[d];
            if (sym == Py_None && cur == Py_None) {
                if (s != 1)
                    size[rd] = s;
                continue;
            }
            if (sym == Py_None || cur == Py_None) {
                /* a symbol meets a fixed size: right for every size only against 1;
                   a form equal to it now (x[n:] of s + 20 against 20) is guarded
                   equal (s - n == 20) and the dim is fixed */
                npy_intp fixed = sym == Py_None ? s : size[rd];
                PyObject *form = sym == Py_None ? cur : sym;
                if (fixed != 1 && PyLong_AsLong(PyTuple_GET_ITEM(form, 1)) == -2 &&
                    (sym == Py_None ? size[rd] : s) == fixed) {
                    int g = guard_rel(tx, form, Py_EQ, NULL, (long long)fixed);
                    if (g < 0) {
                        Py_DECREF(dims);
                        Py_DECREF(res);
                        return -1;
                    }
                    if (g > 0) {
                        Py_SETREF(PyTuple_GET_ITEM(res, rd), Py_NewRef(Py_None));
                        size[rd] = fixed;
                        continue;
                    }
                }
                if (fixed != 1) {
                    Py_DECREF(dims);
                    Py_DECREF(res);
                    return pin(tx, out, "a dynamic dim meets a fixed size other than 1 in broadcasting");
                }
                if (cur == Py_None)
                    Py_SETREF(PyTuple_GET_ITEM(res, rd), Py_NewRef(sym));
                size[rd] = s > size[rd] ? s : size[rd];
                continue;
            }
            if (!same_symbol(sym, cur)) {
                /* two symbols equal now: guard that they stay equal */
                int r = guard_equal(tx, cur, sym);
                if (r <= 0) {
                    Py_DECREF(dims);
                    Py_DECREF(res);
                    return r < 0 ? -1 : pin(tx, out, "two sizes meet whose equality cannot be guarded");
                }
            }
        }
        Py_DECREF(dims);
    }
    *out = res;
    return 0;
}

/* True for a Var that is the constant -1 or a tuple/list holding just -1. */
static int is_minus_one_shape(PyObject *v)
{
    fj_Var *vv = VAR(v);
    PyObject *c = vv->kind == FJ_VAR_CONST ? vv->obj : NULL;
    if (c != NULL && (PyTuple_Check(c) || PyList_Check(c)) && PySequence_Fast_GET_SIZE(c) == 1)
        c = PySequence_Fast_GET_ITEM(c, 0);
    else if ((vv->kind == FJ_VAR_TUPLE || vv->kind == FJ_VAR_LIST) && PyList_GET_SIZE(vv->items) == 1) {
        fj_Var *it = VAR(PyList_GET_ITEM(vv->items, 0));
        c = it->kind == FJ_VAR_CONST ? it->obj : NULL;
    }
    return c != NULL && PyLong_CheckExact(c) && PyLong_AsLong(c) == -1;
}

/*
** A reduction's result dims: the input's without the reduced axes (kept as
** fixed size 1 with keepdims).  Only a constant int axis, None, or a tuple of
** ints is modelled; otherwise the result is opaque.  0 or -1.
*/
static int reduce_dims(const fj_OpDef *op, PyObject *const *args, Py_ssize_t n,
                       PyObject *kwnames, PyObject **out)
{
    Py_ssize_t nkw = kwnames ? PyTuple_GET_SIZE(kwnames) : 0, npos = n - nkw;
    PyObject *axis = npos >= 2 ? args[1] : NULL, *keep = NULL;
    *out = NULL;
    if (n < 1 || VAR(args[0])->kind != FJ_VAR_NODE || npos > 2)
        return 0;
    for (Py_ssize_t k = 0; k < nkw; k++) {
        PyObject *kn = PyTuple_GET_ITEM(kwnames, k);
        if (PyUnicode_CompareWithASCIIString(kn, "axis") == 0)
            axis = args[npos + k];
        else if (PyUnicode_CompareWithASCIIString(kn, "keepdims") == 0)
            keep = args[npos + k];
    }
    (void)op;
    PyObject *ax = axis ? (VAR(axis)->kind == FJ_VAR_CONST ? VAR(axis)->obj : NULL) : Py_None;
    PyObject *kp = keep ? (VAR(keep)->kind == FJ_VAR_CONST ? VAR(keep)->obj : NULL) : Py_False;
    if (ax == NULL || kp == NULL || !PyBool_Check(kp))
        return 0;
    PyObject *in = dims_of(args[0]);
    if (in == NULL)
        return -1;
    if (in == Py_None) {
        Py_DECREF(in);
        return 0;
    }
    int nd = (int)PyTuple_GET_SIZE(in);
    unsigned char mask[FJ_MAX_NDIM];
    memset(mask, ax == Py_None, sizeof mask);
    PyObject *seq = ax == Py_None ? NULL : PySequence_Check(ax) ? Py_NewRef(ax) : PyTuple_Pack(1, ax);
    for (Py_ssize_t i = 0; seq != NULL && i < PySequence_Size(seq); i++) {
        PyObject *it = PySequence_GetItem(seq, i);
        long a = it && PyLong_CheckExact(it) ? PyLong_AsLong(it) : -1000;
        Py_XDECREF(it);
        if (a < 0)
            a += nd;
        if (a < 0 || a >= nd) {
            PyErr_Clear();
            Py_CLEAR(seq);
            Py_DECREF(in);
            return 0;
        }
        mask[a] = 1;
    }
    Py_XDECREF(seq);
    PyObject *res = PyList_New(0);
    for (int d = 0; res != NULL && d < nd; d++) {
        if (mask[d] && kp != Py_True)
            continue;
        if (PyList_Append(res, mask[d] ? Py_None : PyTuple_GET_ITEM(in, d)) < 0)
            Py_CLEAR(res);
    }
    Py_DECREF(in);
    if (res == NULL)
        return -1;
    *out = PyList_AsTuple(res);
    Py_DECREF(res);
    return *out ? 0 : -1;
}

/*
** x.reshape(shape) (args[0] the array, the shape the positional args after
** it: one tuple or list, or several entries) where the shape's symbols are
** the array's, each once, and its fixed sizes match the array's (the unknown
** entry, if any, their quotient): 1 with *out the result's dims, 0 when not
** so (pin), -1 on error.
*/
static int reshape_dims(fj_Tracer *tx, PyObject *const *args, Py_ssize_t npos, Py_ssize_t nkw, PyObject **out)
{
    if (nkw != 0 || npos < 2 || VAR(args[0])->kind != FJ_VAR_NODE)
        return 0;
    fj_Node *a = (fj_Node *)VAR(args[0])->obj;
    PyObject *in = dims_of(args[0]);
    if (in == NULL)
        return -1;
    if (in == Py_None || a->datadep) {
        Py_DECREF(in);
        return 0;
    }
    npy_intp fixed[FJ_MAX_NDIM];
    int nd = 0;
    PyObject *shape = NULL;
    if (npos == 2)
        shape = Py_NewRef(args[1]);
    else {
        PyObject *items = PyList_New(0);
        for (Py_ssize_t i = 1; items != NULL && i < npos; i++)
            if (PyList_Append(items, args[i]) < 0)
                Py_CLEAR(items);
        shape = items ? (PyObject *)fj_var_take(FJ_VAR_TUPLE, items) : NULL;
    }
    PyObject *d = shape ? shape_dims(tx, shape, fixed, &nd) : NULL;
    Py_XDECREF(shape);
    int r = 0;
    if (d == NULL) {
        Py_DECREF(in);
        return PyErr_Occurred() ? -1 : 0;
    }
    /* the symbols: each of the array's used once, no other */
    npy_intp fin = 1, fout = 1;
    int unknown = -1, used[FJ_MAX_NDIM] = {0}, ok = 1;
    for (int i = 0; i < a->ndim; i++)
        if (PyTuple_GET_ITEM(in, i) == Py_None)
            fin *= a->shape[i];
    for (int j = 0; ok && j < nd; j++) {
        PyObject *sj = PyTuple_GET_ITEM(d, j);
        if (sj == Py_None) {
            if (fixed[j] < 0) {
                ok = unknown < 0;
                unknown = j;
            }
            else
                fout *= fixed[j];
            continue;
        }
        int found = 0;
        for (int i = 0; !found && i < a->ndim; i++)
            if (!used[i] && PyTuple_GET_ITEM(in, i) != Py_None && same_symbol(PyTuple_GET_ITEM(in, i), sj))
                found = used[i] = 1;
        ok = found;
    }
    int nunused = 0, unused = -1;
    for (int i = 0; i < a->ndim; i++)
        if (PyTuple_GET_ITEM(in, i) != Py_None && !used[i]) {
            nunused++;
            unused = i;
        }
    if (ok && nunused == 1 && unknown >= 0 && fout > 0 && fin % fout == 0) {
        /* x.reshape(-1, 5) of (s, 5), x.view(-1) of (s,), x.reshape(-1) of
           (s, 5): s * fin items in u * fout, so the unknown entry is the one
           symbol no entry named times fin / fout (a form: 5*s) */
        Lin u = {0};
        PyObject *us = lin_add_symbol(&u, PyTuple_GET_ITEM(in, unused), (long long)(fin / fout)) ? lin_symbol(&u) : NULL;
        lin_clear(&u);
        PyObject *t = us != NULL ? PyTuple_New(nd) : NULL;
        for (int j = 0; t != NULL && j < nd; j++)
            PyTuple_SET_ITEM(t, j, Py_NewRef(j == unknown ? us : PyTuple_GET_ITEM(d, j)));
        Py_XDECREF(us);
        *out = t;
        r = t != NULL ? 1 : PyErr_Occurred() ? -1 : 0;
    }
    else if (ok && nunused == 0) {
        if (unknown >= 0)
            ok = fout != 0 && fin % fout == 0;
        else
            ok = fin == fout;
        if (ok) {
            /* the unknown entry: a fixed size (its value the metadata's) */
            *out = Py_NewRef(d);
            r = 1;
        }
    }
    Py_DECREF(d);
    Py_DECREF(in);
    return r;
}

/* A shape argument entry or the whole argument: constants and size symbols only. */
static int shape_arg_symbolic(PyObject *v)
{
    fj_Var *vv = VAR(v);
    if (vv->kind == FJ_VAR_TUPLE || vv->kind == FJ_VAR_LIST) {
        for (Py_ssize_t i = 0; i < PyList_GET_SIZE(vv->items); i++)
            if (!shape_arg_symbolic(PyList_GET_ITEM(vv->items, i)))
                return 0;
        return 1;
    }
    return vv->kind == FJ_VAR_CONST ? PyLong_CheckExact(vv->obj) : is_size_symbol(v);
}

int fj_dims_shape_args(const fj_OpDef *op, Py_ssize_t n, PyObject *kwnames, Py_ssize_t *lo, Py_ssize_t *hi)
{
    Py_ssize_t nkw = kwnames ? PyTuple_GET_SIZE(kwnames) : 0, npos = n - nkw;
    if (op->shape_rule == FJ_SH_CREATE && npos >= 1) {
        *lo = 0;
        *hi = 1;
        return 1;
    }
    if (op->shape_rule == FJ_SH_RESHAPE && npos >= 2 && nkw == 0) {
        *lo = 1;
        *hi = npos;
        return 1;
    }
    if (op->shape_rule == FJ_SH_BROADCAST_TO && npos == 2 && nkw == 0) {
        *lo = 1; /* np.broadcast_to(x, shape) */
        *hi = 2;
        return 1;
    }
    if (op->shape_rule == FJ_SH_ARANGE && npos == 1 && nkw == 0) {
        *lo = 0; /* np.arange(n): the length n */
        *hi = 1;
        return 1;
    }
    return 0;
}

int fj_dims_shape_arg_symbolic(PyObject *v)
{
    return shape_arg_symbolic(v);
}

/*
** a @ b, np.dot(a, b) of one- or two-dimensional arrays whose dims are
** modelled: the inner sizes must stay equal (the same symbol, two fixed
** sizes, or two symbols with the equality guarded); the result's dims are
** a's rows and b's columns.  1 with *out, 0 when not modelled (pin), -1 on
** error.
*/
static int matmul_dims(fj_Tracer *tx, PyObject *const *args, Py_ssize_t npos, Py_ssize_t nkw, PyObject **out)
{
    if (npos != 2 || nkw != 0 || VAR(args[0])->kind != FJ_VAR_NODE || VAR(args[1])->kind != FJ_VAR_NODE)
        return 0;
    fj_Node *a = (fj_Node *)VAR(args[0])->obj, *b = (fj_Node *)VAR(args[1])->obj;
    if (a->vkind != FJ_VAL_ARRAY || b->vkind != FJ_VAL_ARRAY || a->ndim < 1 || a->ndim > 2 || b->ndim < 1 ||
        b->ndim > 2 || a->datadep || b->datadep)
        return 0;
    PyObject *da = dims_of(args[0]), *db = da ? dims_of(args[1]) : NULL;
    int r = 0;
    if (db == NULL || da == Py_None || db == Py_None)
        goto done;
    PyObject *ka = PyTuple_GET_ITEM(da, a->ndim - 1), *kb = PyTuple_GET_ITEM(db, 0);
    if ((ka == Py_None) != (kb == Py_None))
        goto done; /* a symbol against a fixed size: not modelled */
    if (ka != Py_None && !same_symbol(ka, kb) && (r = guard_equal(tx, ka, kb)) <= 0)
        goto done; /* (0: not guarded, pin) */
    r = 0;
    PyObject *res = PyTuple_New((a->ndim - 1) + (b->ndim - 1));
    if (res == NULL) {
        r = -1;
        goto done;
    }
    Py_ssize_t k = 0;
    if (a->ndim == 2)
        PyTuple_SET_ITEM(res, k++, Py_NewRef(PyTuple_GET_ITEM(da, 0)));
    if (b->ndim == 2)
        PyTuple_SET_ITEM(res, k++, Py_NewRef(PyTuple_GET_ITEM(db, 1)));
    *out = res;
    r = 1;
done:
    Py_XDECREF(da);
    Py_XDECREF(db);
    return r;
}

/*
** np.concatenate(seq, axis) / np.stack(seq, axis) of arrays of one rank whose
** dims are modelled (axis a constant int, positional or axis=): dims off the
** axis (every dim, for stack) stay equal (the same symbol, equal fixed sizes,
** or two symbols with the equality guarded).  Concatenate's axis: the sum
** of the sizes (a fixed size, or a form: s + 3, 2*s, s + t); stack's new
** axis: the number of arrays.  1 with *out, 0 when not modelled (pin), -1 on error.
*/
static int join_dims(fj_Tracer *tx, int stack, PyObject *const *args, Py_ssize_t npos, PyObject *kwnames,
                     PyObject **out)
{
    Py_ssize_t nkw = kwnames ? PyTuple_GET_SIZE(kwnames) : 0;
    PyObject *axisv = npos >= 2 ? args[1] : NULL;
    if (npos < 1 || npos > 2)
        return 0;
    for (Py_ssize_t k = 0; k < nkw; k++) {
        if (PyUnicode_CompareWithASCIIString(PyTuple_GET_ITEM(kwnames, k), "axis") != 0)
            return 0; /* out=, dtype=, casting=: not modelled */
        axisv = args[npos + k];
    }
    long axis = 0;
    if (axisv != NULL) {
        fj_Var *av = VAR(axisv);
        if (av->kind != FJ_VAR_CONST || !PyLong_CheckExact(av->obj))
            return 0;
        axis = PyLong_AsLong(av->obj);
    }
    fj_Var *seq = VAR(args[0]);
    if ((seq->kind != FJ_VAR_LIST && seq->kind != FJ_VAR_TUPLE) || PyList_GET_SIZE(seq->items) == 0)
        return 0;
    Py_ssize_t m = PyList_GET_SIZE(seq->items);
    int nd = -1;
    for (Py_ssize_t i = 0; i < m; i++) {
        fj_Var *it = VAR(PyList_GET_ITEM(seq->items, i));
        if (it->kind != FJ_VAR_NODE)
            return 0;
        fj_Node *nn = (fj_Node *)it->obj;
        if ((nn->vkind != FJ_VAL_ARRAY && nn->vkind != FJ_VAL_TENSOR) || nn->datadep || (nd >= 0 && nn->ndim != nd) ||
            nn->vkind != ((fj_Node *)VAR(PyList_GET_ITEM(seq->items, 0))->obj)->vkind)
            return 0;
        nd = nn->ndim;
    }
    int rnd = stack ? nd + 1 : nd;
    if (nd < 1 && !stack)
        return 0;
    if (axis < 0)
        axis += rnd;
    if (axis < 0 || axis >= rnd)
        return 0;
    PyObject *first = dims_of(PyList_GET_ITEM(seq->items, 0));
    if (first == NULL || first == Py_None) {
        Py_XDECREF(first);
        return first == NULL ? -1 : 0;
    }
    PyObject *res = PyList_New(0);
    Lin along = {0}; /* the axis's size: the sum of the arrays' */
    int r = 0;
    for (int d = 0; res != NULL && d < nd; d++) {
        PyObject *sd = PyTuple_GET_ITEM(first, d);
        int on_axis = !stack && d == axis;
        for (Py_ssize_t i = 0; i < m; i++) {
            fj_Node *nn = (fj_Node *)VAR(PyList_GET_ITEM(seq->items, i))->obj;
            PyObject *di = dims_of(PyList_GET_ITEM(seq->items, i));
            if (di == NULL || di == Py_None) {
                Py_XDECREF(di);
                r = di == NULL ? -1 : 0;
                goto fail;
            }
            PyObject *si = PyTuple_GET_ITEM(di, d);
            if (on_axis) {
                if (!(si == Py_None ? lin_const(&along, (long long)nn->shape[d]) : lin_add_symbol(&along, si, 1))) {
                    Py_DECREF(di);
                    goto fail; /* past int64, too many terms: not modelled */
                }
            }
            else if ((si == Py_None) != (sd == Py_None) ||
                     (si != Py_None && !same_symbol(si, sd) && (r = guard_equal(tx, sd, si)) <= 0)) {
                r = r < 0 ? -1 : 0;
                Py_DECREF(di);
                goto fail;
            }
            Py_DECREF(di);
        }
        if (on_axis) {
            PyObject *e = lin_symbol(&along); /* s + 3, 2*s, s + t; Py_None: fixed */
            if (e == NULL) {
                r = -1;
                goto fail;
            }
            int bad = PyList_Append(res, e) < 0;
            Py_DECREF(e);
            if (bad) {
                r = -1;
                goto fail;
            }
        }
        else if (PyList_Append(res, sd) < 0) {
            r = -1;
            goto fail;
        }
    }
    if (res == NULL) {
        r = -1;
        goto fail;
    }
    if (stack && PyList_Insert(res, axis, Py_None) < 0) {
        r = -1;
        goto fail;
    }
    *out = PyList_AsTuple(res);
    r = *out ? 1 : -1;
fail:
    Py_XDECREF(res);
    lin_clear(&along);
    Py_DECREF(first);
    return r;
}

int fj_dims_before_call(fj_TFrame *fr, const fj_OpDef *op, PyObject *const *args, Py_ssize_t n,
                        PyObject *kwnames, PyObject **out)
{
    Py_ssize_t nkw = kwnames ? PyTuple_GET_SIZE(kwnames) : 0, npos = n - nkw;
    *out = NULL;
    if (fr->tx->specialized)
        return 0;
    switch (op->shape_rule) {
    case FJ_SH_BROADCAST: {
        PyObject *ops = PyList_New(0);
        int bad = ops == NULL;
        for (Py_ssize_t i = 0; !bad && i < n; i++) {
            fj_Var *a = VAR(args[i]);
            int operand = i < npos ? i < op->nin : 0;
            if (i >= npos) {
                /* out= given: NumPy never broadcasts it; x1=, x2= keywords: not modelled */
                PyObject *kn = PyTuple_GET_ITEM(kwnames, i - npos);
                if (PyUnicode_CompareWithASCIIString(kn, "out") == 0 && a->kind != FJ_VAR_CONST) {
                    Py_DECREF(ops);
                    return pin(fr->tx, out, "out= of an op on a dynamic array");
                }
                int pi = fj_ops_param_index(op, PyUnicode_AsUTF8(kn));
                operand = pi >= 0 && pi < op->nin;
                if (pi < 0)
                    PyErr_Clear();
            }
            if (i < npos && i >= op->nin && a->kind == FJ_VAR_NODE &&
                (op->flags & FJ_OPF_OUT) && i == op->nin) {
                Py_DECREF(ops);
                return pin(fr->tx, out, "a positional out of an op on a dynamic array"); /* a positional out */
            }
            if (!operand || a->kind == FJ_VAR_CONST)
                continue; /* a scalar constant (or None) takes no part in the sizes */
            if (a->kind != FJ_VAR_NODE) {
                Py_DECREF(ops);
                return pin(fr->tx, out, "a list or tuple operand of an op on a dynamic array (its shape is not modelled)"); /* a list or tuple operand: its shape is not modelled */
            }
            bad = PyList_Append(ops, (PyObject *)a) < 0;
        }
        if (bad) {
            Py_XDECREF(ops);
            return -1;
        }
        int r = combine(fr->tx, ops, out);
        Py_DECREF(ops);
        return r;
    }
    case FJ_SH_SAME:
        if (n >= 1 && VAR(args[0])->kind == FJ_VAR_NODE) {
            PyObject *d = dims_of(args[0]);
            if (d == NULL)
                return -1;
            if (d == Py_None)
                Py_CLEAR(d);
            *out = d;
        }
        return 0;
    case FJ_SH_RESHAPE: {
        /* x.reshape(-1) is right for every size; so is a shape whose symbols are
           the array's own, each once, with fixed sizes that match (x.reshape(n,
           -1), n = x.shape[0]): the unknown entry is then a fixed size */
        int r = reshape_dims(fr->tx, args, npos, nkw, out);
        if (r != 0)
            return r < 0 ? -1 : 0;
        if (npos == 2 && is_minus_one_shape(args[1]))
            return 0; /* (two symbols: s*t, opaque) */
        return pin(fr->tx, out, "reshape of a dynamic array to a shape other than -1 or its own sizes");
    }
    case FJ_SH_CONCATENATE:
    case FJ_SH_STACK: {
        int r = join_dims(fr->tx, op->shape_rule == FJ_SH_STACK, args, npos, kwnames, out);
        if (r != 0)
            return r < 0 ? -1 : 0;
        return pin(fr->tx, out, "a concatenation or stack whose sizes are not modelled");
    }
    case FJ_SH_MATMUL:
    case FJ_SH_DOT: {
        int r = matmul_dims(fr->tx, args, npos, nkw, out);
        if (r != 0)
            return r < 0 ? -1 : 0;
        return pin(fr->tx, out, "a matrix product whose sizes are not modelled (more than 2 dims, a "
                                "symbol against a fixed size)");
    }
    case FJ_SH_BROADCAST_TO: {
        /* np.broadcast_to(x, shape) of ints and symbols: each of x's dims (right
           aligned) is a fixed 1, or equals its target (the same symbol, equal
           fixed sizes, two symbols with the equality guarded); the result's dims
           are the target's */
        npy_intp fixed[FJ_MAX_NDIM];
        int nd = 0, ok = npos == 2 && nkw == 0 && VAR(args[0])->kind == FJ_VAR_NODE;
        PyObject *t = ok ? shape_dims(fr->tx, args[1], fixed, &nd) : NULL, *in = NULL;
        if (t == NULL && PyErr_Occurred())
            return -1;
        fj_Node *a = ok ? (fj_Node *)VAR(args[0])->obj : NULL;
        ok = t != NULL && a->vkind == FJ_VAL_ARRAY && !a->datadep && a->ndim <= nd;
        if (ok && (in = dims_of(args[0])) == NULL) {
            Py_DECREF(t);
            return -1;
        }
        ok = ok && in != Py_None;
        for (int i = 0; ok && i < a->ndim; i++) {
            PyObject *si = PyTuple_GET_ITEM(in, i), *ti = PyTuple_GET_ITEM(t, nd - a->ndim + i);
            if (si == Py_None && a->shape[i] == 1)
                continue;
            if ((si == Py_None) != (ti == Py_None))
                ok = 0;
            else if (si != Py_None && !same_symbol(si, ti)) {
                int g = guard_equal(fr->tx, ti, si);
                if (g < 0) {
                    Py_XDECREF(in);
                    Py_DECREF(t);
                    return -1;
                }
                ok = g > 0;
            }
        }
        Py_XDECREF(in);
        if (ok) {
            *out = t;
            return 0;
        }
        Py_XDECREF(t);
        return pin(fr->tx, out, "np.broadcast_to whose sizes are not modelled");
    }
    case FJ_SH_ARANGE: {
        /* np.arange(n) of a size symbol: its length */
        npy_intp fixed[FJ_MAX_NDIM];
        int nd = 0;
        fj_Var *a0 = npos == 1 && nkw == 0 ? VAR(args[0]) : NULL;
        PyObject *d = a0 != NULL && a0->kind == FJ_VAR_NODE ? shape_dims(fr->tx, args[0], fixed, &nd) : NULL;
        if (d != NULL) {
            *out = d;
            return 0;
        }
        if (PyErr_Occurred())
            return -1;
        return pin(fr->tx, out, "np.arange with bounds that are not one size");
    }
    case FJ_SH_CREATE: {
        /* zeros/ones/empty/full of a shape of ints and symbols (n = x.shape[0], or
           an int input >= 2): the result's dims are those symbols */
        npy_intp fixed[FJ_MAX_NDIM];
        int nd = 0;
        PyObject *d = npos >= 1 ? shape_dims(fr->tx, args[0], fixed, &nd) : NULL;
        if (d != NULL) {
            *out = d;
            return 0;
        }
        if (PyErr_Occurred())
            return -1;
        return pin(fr->tx, out, "a shape argument that is not ints and sizes");
    }
    case FJ_SH_REDUCE:
    case FJ_SH_ARGREDUCE:
        return reduce_dims(op, args, n, kwnames, out);
    case FJ_SH_TRANSPOSE:
        /* x.T, np.transpose(x), x.transpose(): the dims reversed */
        if (npos == 1 && nkw == 0 && VAR(args[0])->kind == FJ_VAR_NODE) {
            PyObject *in = dims_of(args[0]);
            if (in == NULL)
                return -1;
            if (in != Py_None) {
                Py_ssize_t k = PyTuple_GET_SIZE(in);
                PyObject *res = PyTuple_New(k);
                for (Py_ssize_t i = 0; res != NULL && i < k; i++)
                    PyTuple_SET_ITEM(res, i, Py_NewRef(PyTuple_GET_ITEM(in, k - 1 - i)));
                *out = res;
            }
            Py_DECREF(in);
            return in != Py_None && *out == NULL ? -1 : 0;
        }
        return 0;
    case FJ_SH_SQUEEZE:
        /* which dims squeeze drops depends on which are 1: an input's symbol is
           >= 2, a form (x[1:]'s s - 1) or an opaque size may be 1 (the rank
           would change under the same guards): pin those */
        if (n >= 1 && VAR(args[0])->kind == FJ_VAR_NODE) {
            PyObject *in = dims_of(args[0]);
            if (in == NULL)
                return -1;
            int maybe_one = in == Py_None;
            for (Py_ssize_t i = 0; !maybe_one && i < PyTuple_GET_SIZE(in); i++)
                maybe_one = PyTuple_GET_ITEM(in, i) != Py_None &&
                            PyLong_AsLong(PyTuple_GET_ITEM(PyTuple_GET_ITEM(in, i), 1)) == -2;
            Py_DECREF(in);
            if (maybe_one)
                return pin(fr->tx, out, "squeeze of a dynamic array with a size that may be 1");
        }
        return 0;
    case FJ_SH_SWAPAXES:
    case FJ_SH_EXPAND_DIMS:
    case FJ_SH_RAVEL:
    case FJ_SH_CUMULATIVE:
    case FJ_SH_SORT:
    case FJ_SH_ARGSORT:
        /* one array operand, no size relation that can fail: opaque */
        return 0;
    case FJ_SH_GETITEM:
        /* basic indexing by constants: the result's dims (slices of symbols as
           symbol + c, guarded); else opaque as below */
        if (npos == 2 && nkw == 0 && VAR(args[0])->kind == FJ_VAR_NODE) {
            int r = getitem_dims(fr->tx, args[0], args[1], out);
            if (r != 0)
                return r < 0 ? -1 : 0;
        }
        return 0;
    case FJ_SH_LIKE:
        /* one array operand, no size relation that can fail (sizes 0 and 1 are
           specialized; an integer index out of range raises IndexError as NumPy
           does, the getitem tracer pins where side effects are pending): the
           result's sizes are opaque */
        return 0;
    case FJ_SH_SETITEM:
        /* a store (array_setitem pins where side effects are pending): an index
           or a value that does not fit raises as NumPy does; no result */
        return 0;
    default:
        return pin(fr->tx, out, "an op whose size rule is not modelled, on a dynamic array");
    }
}

int fj_dims_broadcast(fj_Tracer *tx, PyObject *const *args, Py_ssize_t n, PyObject **out)
{
    *out = NULL;
    if (tx->specialized)
        return 0;
    PyObject *ops = PyList_New(0);
    if (ops == NULL)
        return -1;
    for (Py_ssize_t i = 0; i < n; i++) {
        fj_Var *a = VAR(args[i]);
        if (a->kind == FJ_VAR_CONST)
            continue; /* a scalar (or None) takes no part in the sizes */
        if (a->kind != FJ_VAR_NODE) {
            Py_DECREF(ops);
            return pin(tx, out, "a list or tuple operand of an op on a dynamic array (its shape is not modelled)");
        }
        if (PyList_Append(ops, (PyObject *)a) < 0) {
            Py_DECREF(ops);
            return -1;
        }
    }
    int r = combine(tx, ops, out);
    Py_DECREF(ops);
    return r;
}

/* ------------------------------------------------ sizes that depend on the data */

/*
** x[mask], np.flatnonzero, np.argwhere (and nonzero/where of one argument,
** trace_call.c) make an array whose dim 0 has a size only the data decides.
** The node carries a symbol for it (fj_Node.datadep): the number of nonzero
** items of the node counted (the mask), so x[m] and y[m] have the same size
** and x[m] + y[m] is right for every m.  No guard can pin such a size, so an
** op goes into the graph only when it is right for every size, 0 and 1
** included, and gives NumPy's result whatever the size; everything else that
** needs the size (len, .shape, iteration, indexing with ints or slices, ops
** whose size relations are not modelled) is a graph break.
*/

static int next_symbol = 0;

int fj_dims_count_symbol(void *node)
{
    fj_Node *n = (fj_Node *)node;
    if (n->nzsym == 0 || n->nzepoch != fj_graph_write_epoch()) {
        n->nzepoch = fj_graph_write_epoch();
        if (next_symbol == INT_MAX)
            next_symbol = 0;
        n->nzsym = ++next_symbol;
    }
    return n->nzsym;
}

typedef struct {
    int sym;   /* the one symbol seen, 0 before */
    int mixed; /* two different symbols */
    int ndim;  /* the largest ndim of the operands with the symbol */
    int count; /* operands with a symbol */
} DataDeps;

/* Records the data-dependent nodes in Var 'v' (tuples and lists walked). */
static void note_datadeps(PyObject *v, DataDeps *dd, int depth)
{
    fj_Var *vv = VAR(v);
    if (depth > 8)
        return;
    if (vv->kind == FJ_VAR_NODE) {
        fj_Node *n = (fj_Node *)vv->obj;
        if (n->datadep == 0)
            return;
        dd->count++;
        if (dd->sym != 0 && dd->sym != n->datadep)
            dd->mixed = 1;
        dd->sym = n->datadep;
        if (n->ndim > dd->ndim)
            dd->ndim = n->ndim;
    } else if ((vv->kind == FJ_VAR_TUPLE || vv->kind == FJ_VAR_LIST) && vv->items != NULL) {
        for (Py_ssize_t i = 0; i < PyList_GET_SIZE(vv->items); i++)
            note_datadeps(PyList_GET_ITEM(vv->items, i), dd, depth + 1);
    }
}

/* The node of a NODE Var, or NULL. */
static fj_Node *node_of(PyObject *v)
{
    return v != NULL && VAR(v)->kind == FJ_VAR_NODE ? (fj_Node *)VAR(v)->obj : NULL;
}

static int is_mask(fj_Node *n)
{
    return n != NULL && n->vkind == FJ_VAL_ARRAY && n->dtype != NULL && n->dtype->type_num == NPY_BOOL;
}

int fj_dims_is_datadep(PyObject *v)
{
    fj_Node *n = node_of(v);
    return n != NULL && n->datadep != 0;
}

/* True for a one-dimensional integer array: an index array (np.flatnonzero's). */
static int int_index_array(fj_Node *k)
{
    return k->ndim == 1 && k->dtype != NULL && PyTypeNum_ISINTEGER(k->dtype->type_num);
}

/* An index that is a tuple of integer index arrays of one symbol (np.nonzero's of
   an n-d array, x[np.nonzero(m)]): that symbol, with *k their number; else 0. */
static int tuple_symbol(PyObject *key, int *k)
{
    fj_Var *kv = key != NULL ? VAR(key) : NULL;
    if (kv == NULL || kv->kind != FJ_VAR_TUPLE || kv->items == NULL || PyList_GET_SIZE(kv->items) < 1)
        return 0;
    int sym = 0;
    for (Py_ssize_t i = 0; i < PyList_GET_SIZE(kv->items); i++) {
        fj_Node *in = node_of(PyList_GET_ITEM(kv->items, i));
        if (in == NULL || !in->datadep || !int_index_array(in) || (sym != 0 && in->datadep != sym))
            return 0;
        sym = in->datadep;
    }
    *k = (int)PyList_GET_SIZE(kv->items);
    return sym;
}

int fj_dims_key_decides(PyObject *keyv)
{
    fj_Node *k = node_of(keyv);
    int m;
    return is_mask(k) || (k != NULL && k->datadep != 0) || tuple_symbol(keyv, &m) != 0;
}

/* tuple_symbol for indexing array 'a' (of a fixed size, with at least k dims). */
static int index_tuple_symbol(PyObject *key, fj_Node *a, int *k)
{
    int sym = a != NULL && !a->datadep ? tuple_symbol(key, k) : 0;
    return sym != 0 && *k <= a->ndim ? sym : 0;
}

/* The Var bound to parameter 'name' of 'op' (positional or keyword), or NULL. */
static PyObject *param_var(const fj_OpDef *op, PyObject *const *args, Py_ssize_t n, PyObject *kwnames,
                           const char *name)
{
    Py_ssize_t nkw = kwnames ? PyTuple_GET_SIZE(kwnames) : 0, npos = n - nkw;
    for (Py_ssize_t k = 0; k < nkw; k++)
        if (PyUnicode_CompareWithASCIIString(PyTuple_GET_ITEM(kwnames, k), name) == 0)
            return args[npos + k];
    int i = fj_ops_param_index(op, name);
    if (i < 0)
        PyErr_Clear();
    return i >= 0 && i < npos ? args[i] : NULL;
}

/* True when Var 'v' is absent or the constant None. */
static int absent(PyObject *v)
{
    return v == NULL || (VAR(v)->kind == FJ_VAR_CONST && VAR(v)->obj == Py_None);
}

/* True when the axis Var 'ax' of a reduction over an array of 'nd' dims with
   a data-dependent dim 0 leaves fixed sizes: None, or dim 0 itself. */
static int axis_leaves_fixed(PyObject *ax, int nd)
{
    if (absent(ax))
        return 1;
    if (VAR(ax)->kind != FJ_VAR_CONST || !PyLong_CheckExact(VAR(ax)->obj))
        return 0;
    long a = PyLong_AsLong(VAR(ax)->obj);
    if (a == -1 && PyErr_Occurred()) {
        PyErr_Clear();
        return 0;
    }
    return a == 0 || a == -nd;
}

/* True when Var 'v' holds no array node of one dim or more (tuples and lists walked). */
static int plain_value(PyObject *v, int depth)
{
    fj_Var *vv = VAR(v);
    if (depth > 8)
        return 0;
    if (vv->kind == FJ_VAR_NODE) {
        fj_Node *a = (fj_Node *)vv->obj;
        return !a->datadep && !(a->vkind == FJ_VAL_ARRAY && a->ndim > 0);
    }
    if ((vv->kind == FJ_VAR_TUPLE || vv->kind == FJ_VAR_LIST) && vv->items != NULL) {
        for (Py_ssize_t i = 0; i < PyList_GET_SIZE(vv->items); i++)
            if (!plain_value(PyList_GET_ITEM(vv->items, i), depth + 1))
                return 0;
        return 1;
    }
    return vv->kind == FJ_VAR_CONST;
}

/* True for a constant that takes no part in sizes: a Python or NumPy scalar, or None. */
static int scalar_const(PyObject *c)
{
    return c == Py_None || PyBool_Check(c) || PyLong_CheckExact(c) || PyFloat_CheckExact(c) ||
           PyComplex_CheckExact(c) || PyArray_IsScalar(c, Generic);
}

/* True when every argument but the first is a constant or scalar (no array). */
static int rest_plain(PyObject *const *args, Py_ssize_t n)
{
    for (Py_ssize_t i = 1; i < n; i++)
        if (!plain_value(args[i], 0))
            return 0;
    return 1;
}

/* True when the dims 'd' of an array (a tuple) and 'm' of a mask (a tuple)
   agree on the mask's dims for every size the guards let through: both fixed
   (ops_shape.c compares the sizes) or one symbol. */
static int mask_dims_agree(PyObject *d, PyObject *m)
{
    if (!PyTuple_Check(d) || !PyTuple_Check(m) || PyTuple_GET_SIZE(m) > PyTuple_GET_SIZE(d))
        return 0;
    for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(m); i++) {
        PyObject *a = PyTuple_GET_ITEM(d, i), *b = PyTuple_GET_ITEM(m, i);
        if ((a == Py_None) != (b == Py_None) || (a != Py_None && !same_symbol(a, b)))
            return 0;
    }
    return 1;
}

/*
** An op with a data-dependent operand or a mask, whose other operands have
** dynamic dims: x[m] with m's dims x's own symbols (m = x > 0) needs
** nothing; any other dynamic array among the operands (a trailing operand
** of an elementwise op, a store's value, a mask of other sizes) is pinned.
** 0 or -1.
*/
static int dynamic_meets(fj_Tracer *tx, const fj_OpDef *op, PyObject *const *args, Py_ssize_t n, int masked)
{
    if (tx->specialized)
        return 0;
    fj_Node *a0 = n >= 1 ? node_of(args[0]) : NULL, *k = n >= 2 ? node_of(args[1]) : NULL;
    if (masked && a0 != NULL && k != NULL && !a0->datadep && !k->datadep) {
        PyObject *d = dims_of(args[0]), *m = d ? dims_of(args[1]) : NULL;
        int agree = m != NULL && mask_dims_agree(d, m);
        Py_XDECREF(d);
        Py_XDECREF(m);
        if (m == NULL && PyErr_Occurred())
            return -1;
        if (!agree)
            return fj_trace_specialize(tx, "a mask whose dims do not agree with the indexed array's");
    }
    int first_free = op->shape_rule == FJ_SH_GETITEM || op->shape_rule == FJ_SH_SETITEM ||
                     op->shape_rule == FJ_SH_NONZERO;
    for (Py_ssize_t i = 0; i < n; i++) {
        /* the array indexed (its sizes meet the mask's, above, or an index array's
           values, which NumPy checks when the graph runs) or counted: any size */
        if ((masked && i < 2) || (first_free && i == 0))
            continue;
        if (i == 1 && op->shape_rule != FJ_SH_NONZERO && first_free && fj_dims_key_decides(args[1]))
            continue; /* np.nonzero's index arrays: their values NumPy checks */
        fj_Node *a = node_of(args[i]);
        if (a != NULL && !a->datadep && a->vkind == FJ_VAL_ARRAY && VAR(args[i])->dynamic)
            return fj_trace_specialize(tx, "a dynamic array meets a size that depends on the data");
        if (a == NULL && !plain_value(args[i], 0))
            return fj_trace_specialize(tx, "a list of arrays meets a size that depends on the data");
    }
    return 0;
}

/* fj_dims_datadep's decision once data-dependent sizes or a mask take part.  0 or -1. */
static int datadep_rule(fj_TFrame *fr, const fj_OpDef *op, PyObject *const *args, Py_ssize_t n,
                        PyObject *kwnames, int *sym, DataDeps *ddp, fj_Node *key, int masked)
{
    DataDeps dd = *ddp;
    const char *what = fj_op_qualname(op);
#define REFUSE(why) return fj_unsupported("%s on an array whose size depends on the data (x[mask], np.nonzero): " why, what)
    if (fr->tx->body != NULL)
        return fj_unsupported("%s: a size that depends on the data inside a captured loop is not traced", what);
    if (dd.mixed)
        REFUSE("two such sizes that may differ are not traced");
    /* dynamic sizes of other operands: kept where the relation is known, else pinned */
    if (dynamic_meets(fr->tx, op, args, n, masked) < 0)
        return -1;
    fj_Node *a0 = n >= 1 ? node_of(args[0]) : NULL;
    switch (op->shape_rule) {
    case FJ_SH_BROADCAST: {
        /* elementwise: the operands with the symbol have the same dims; every other array has
           fewer (it never meets dim 0) or none */
        PyObject *outv = (op->flags & FJ_OPF_OUT) ? fj_trace_out_arg(op, args, n, kwnames) : NULL;
        if (outv != NULL && !absent(outv))
            REFUSE("'out=' is not traced");
        for (Py_ssize_t i = 0; i < n; i++) {
            fj_Var *a = VAR(args[i]);
            fj_Node *an = node_of(args[i]);
            if (an == NULL) {
                if (a->kind != FJ_VAR_CONST || PyList_Check(a->obj) || PyTuple_Check(a->obj) ||
                    PyArray_Check(a->obj) || PyRange_Check(a->obj))
                    REFUSE("an operand that is not an array or a scalar is not traced");
                continue;
            }
            if (an->datadep ? an->ndim != dd.ndim : (an->vkind == FJ_VAL_ARRAY && an->ndim >= dd.ndim && an->ndim > 0))
                REFUSE("broadcasting against an array of as many dims is not traced");
        }
        *sym = dd.sym;
        return 0;
    }
    case FJ_SH_SAME:
    case FJ_SH_LIKE:
        if (a0 == NULL || !a0->datadep || !rest_plain(args, n))
            REFUSE("only the array itself may have such a size");
        if (op->shape_rule == FJ_SH_LIKE && !absent(param_var(op, args, n, kwnames, "shape")))
            REFUSE("a 'shape' argument is not traced");
        *sym = a0->datadep;
        return 0;
    case FJ_SH_RAVEL:
    case FJ_SH_CUMULATIVE:
    case FJ_SH_SORT:
    case FJ_SH_ARGSORT: {
        if (a0 == NULL || !a0->datadep || a0->ndim != 1 || !rest_plain(args, n))
            REFUSE("traced on one-dimensional arrays only");
        PyObject *ax = op->shape_rule == FJ_SH_RAVEL ? NULL : param_var(op, args, n, kwnames, "axis");
        if (!axis_leaves_fixed(ax, 1))
            REFUSE("this axis is not traced");
        *sym = a0->datadep;
        return 0;
    }
    case FJ_SH_REDUCE:
    case FJ_SH_ARGREDUCE: {
        if (a0 == NULL || !a0->datadep || !rest_plain(args, n))
            REFUSE("only the array itself may have such a size");
        if (!axis_leaves_fixed(param_var(op, args, n, kwnames, "axis"), a0->ndim))
            REFUSE("a reduction along another axis than 0 is not traced");
        if (!absent(param_var(op, args, n, kwnames, "out")) || !absent(param_var(op, args, n, kwnames, "where")))
            REFUSE("'out=' and 'where=' are not traced");
        if ((op->flags & FJ_OPF_NO_IDENTITY) && absent(param_var(op, args, n, kwnames, "initial")) &&
            fj_trace_effects_pending(fr->tx))
            return fj_unsupported("%s of a selection that may be empty after side effects (its ValueError "
                                  "would lose them)", what);
        return 0; /* the result's sizes are fixed */
    }
    case FJ_SH_GETITEM: {
        fj_Node *a = a0;
        int tk, tsym = n >= 2 ? index_tuple_symbol(args[1], a, &tk) : 0;
        if (tsym != 0) {
            /* x[i, j] with np.nonzero's arrays: a selection of their symbol */
            *sym = tsym;
            return 0;
        }
        if (a == NULL || key == NULL || VAR(args[1])->kind != FJ_VAR_NODE)
            REFUSE("only a boolean mask or an integer array as the whole index is traced");
        if (masked) {
            /* x[m]: both fixed, or both with one symbol and one dim (y[y > 0]) */
            if ((a->datadep || key->datadep) && !(a->datadep == key->datadep && a->ndim == 1 && key->ndim == 1))
                REFUSE("a mask that may not match it is not traced");
            *sym = fj_dims_count_symbol(key);
            return 0;
        }
        /* x[idx] with idx from np.flatnonzero (its values are data, checked by NumPy) */
        if (a->datadep || !int_index_array(key))
            REFUSE("only a boolean mask or an integer array as the whole index is traced");
        *sym = key->datadep;
        return 0;
    }
    case FJ_SH_SETITEM: {
        /* a[m] = v, a[idx] = v: v a scalar, an array that never meets dim 0, or an array with
           the selection's symbol and dims */
        fj_Node *a = a0, *v = n >= 3 ? node_of(args[2]) : NULL;
        int tk, tsym = n >= 2 ? index_tuple_symbol(args[1], a, &tk) : 0;
        if (tsym == 0 &&
            (a == NULL || key == NULL || (a->datadep && !(masked && key->datadep == a->datadep && a->ndim == 1))))
            REFUSE("only a store through a boolean mask or an integer array is traced");
        int ssym, snd;
        if (tsym != 0) {
            /* x[i, j] = v with np.nonzero's arrays */
            ssym = tsym;
            snd = 1 + a->ndim - tk;
        } else if (masked) {
            if (key->datadep != a->datadep)
                REFUSE("a mask that may not match it is not traced");
            ssym = fj_dims_count_symbol(key);
            snd = 1 + a->ndim - key->ndim;
        } else {
            if (!int_index_array(key) || !key->datadep)
                REFUSE("only a store through a boolean mask or an integer array is traced");
            ssym = key->datadep;
            snd = a->ndim;
        }
        if (v == NULL) {
            if (n < 3 || VAR(args[2])->kind != FJ_VAR_CONST || !scalar_const(VAR(args[2])->obj))
                REFUSE("a value that is not an array or a scalar is not traced");
            return 0;
        }
        if (v->datadep ? (v->datadep != ssym || v->ndim != snd) : (v->vkind == FJ_VAL_ARRAY && v->ndim >= snd && v->ndim > 0))
            REFUSE("a value whose size may not match the selection is not traced");
        return 0;
    }
    case FJ_SH_NONZERO:
        if (a0 == NULL || !rest_plain(args, n))
            REFUSE("only an array argument is traced");
        if (a0->datadep && a0->ndim != 1)
            REFUSE("traced on one-dimensional arrays only");
        *sym = fj_dims_count_symbol(a0);
        return 0;
    default:
        REFUSE("not traced");
    }
#undef REFUSE
}

int fj_dims_datadep(fj_TFrame *fr, const fj_OpDef *op, PyObject *const *args, Py_ssize_t n, PyObject *kwnames,
                    int *sym)
{
    DataDeps dd = {0, 0, 0, 0};
    *sym = 0;
    for (Py_ssize_t i = 0; i < n; i++)
        note_datadeps(args[i], &dd, 0);
    int getset = op->shape_rule == FJ_SH_GETITEM || op->shape_rule == FJ_SH_SETITEM;
    fj_Node *key = getset && n >= 2 ? node_of(args[1]) : NULL;
    int masked = is_mask(key);
    if (dd.count == 0 && !masked && op->shape_rule != FJ_SH_NONZERO)
        return 0;
    int r = datadep_rule(fr, op, args, n, kwnames, sym, &dd, key, masked);
    return r < 0 ? -1 : 1;
}

/* ------------------------------------------------------------ torch ops */

/* The slot of parameter 'name' in a Rule-style 'params' list, -1 if absent. */
static int param_slot(const char *params, const char *name)
{
    size_t ln = strlen(name);
    int i = 0;
    for (const char *p = params; p && *p; i++) {
        if (*p == '*')
            p++;
        const char *e = strchr(p, ',');
        size_t l = e ? (size_t)(e - p) : strlen(p);
        if (l == ln && memcmp(p, name, ln) == 0)
            return i;
        p = e ? e + 1 : NULL;
    }
    return -1;
}

/* A tensor NODE Var (any sizes), 0 if not. */
static int is_tensor_var(PyObject *v)
{
    return v != NULL && VAR(v)->kind == FJ_VAR_NODE && ((fj_Node *)VAR(v)->obj)->vkind == FJ_VAL_TENSOR;
}

/* 1 when every dim of tensor Var 'v' is fixed (no symbol, sizes modelled). */
static int all_fixed(PyObject *v)
{
    if (!is_tensor_var(v) || ((fj_Node *)VAR(v)->obj)->datadep)
        return 0;
    PyObject *d = dims_of(v);
    int ok = d != NULL && d != Py_None;
    for (Py_ssize_t i = 0; ok && i < PyTuple_GET_SIZE(d); i++)
        ok = PyTuple_GET_ITEM(d, i) == Py_None;
    Py_XDECREF(d);
    PyErr_Clear();
    return ok;
}

/* A constant int Var's value in *x: 1, else 0. */
static int const_long(PyObject *v, long *x)
{
    PyObject *c = v != NULL && VAR(v)->kind == FJ_VAR_CONST ? VAR(v)->obj : NULL;
    if (c == NULL || !PyLong_CheckExact(c))
        return 0;
    int ovf = 0;
    *x = PyLong_AsLongAndOverflow(c, &ovf);
    return !ovf && !(*x == -1 && PyErr_Occurred());
}

/* Dim 'd' (negative counts from the end) of 'nd' dims, normalized: 1, or 0 when out of range. */
static int norm_dim(long *d, int nd)
{
    if (*d < 0)
        *d += nd;
    return *d >= 0 && *d < nd;
}

/* The constant dims a reduction's 'dim' names into mask[]: None/absent is all. 1, or 0. */
static int dim_mask(PyObject *dimv, int nd, int *mask)
{
    for (int i = 0; i < nd; i++)
        mask[i] = dimv == NULL || (VAR(dimv)->kind == FJ_VAR_CONST && VAR(dimv)->obj == Py_None);
    if (mask[0] || nd == 0)
        return 1;
    long d;
    if (const_long(dimv, &d))
        return norm_dim(&d, nd) && (mask[d] = 1);
    PyObject *items = VAR(dimv)->kind == FJ_VAR_TUPLE || VAR(dimv)->kind == FJ_VAR_LIST ? VAR(dimv)->items : NULL;
    PyObject *c = VAR(dimv)->kind == FJ_VAR_CONST ? VAR(dimv)->obj : NULL;
    Py_ssize_t k = items ? PyList_GET_SIZE(items) : c && PyTuple_CheckExact(c) ? PyTuple_GET_SIZE(c) : -1;
    if (k <= 0)
        return 0;
    for (Py_ssize_t i = 0; i < k; i++) {
        PyObject *e = items ? PyList_GET_ITEM(items, i) : PyTuple_GET_ITEM(c, i);
        if (items ? !const_long(e, &d) : !PyLong_CheckExact(e))
            return 0;
        if (!items)
            d = PyLong_AsLong(e);
        if (!norm_dim(&d, nd) || mask[d])
            return 0;
        mask[d] = 1;
    }
    return 1;
}

/* dims with entries [a, b) taken out of tuple 'in' and 'mid' (a new tuple or
   NULL) put in their place.  New tuple. */
static PyObject *splice(PyObject *in, Py_ssize_t a, Py_ssize_t b, PyObject *mid)
{
    PyObject *l = PyList_New(0);
    for (Py_ssize_t i = 0; l != NULL && i < a; i++)
        if (PyList_Append(l, PyTuple_GET_ITEM(in, i)) < 0)
            Py_CLEAR(l);
    for (Py_ssize_t i = 0; l != NULL && mid != NULL && i < PyTuple_GET_SIZE(mid); i++)
        if (PyList_Append(l, PyTuple_GET_ITEM(mid, i)) < 0)
            Py_CLEAR(l);
    for (Py_ssize_t i = b; l != NULL && i < PyTuple_GET_SIZE(in); i++)
        if (PyList_Append(l, PyTuple_GET_ITEM(in, i)) < 0)
            Py_CLEAR(l);
    PyObject *t = l ? PyList_AsTuple(l) : NULL;
    Py_XDECREF(l);
    return t;
}

/* A new tuple: 'in' with entries a and b swapped (never 'in' itself: dims
   tuples are shared between Vars). */
static PyObject *swapped(PyObject *in, Py_ssize_t a, Py_ssize_t b)
{
    Py_ssize_t k = PyTuple_GET_SIZE(in);
    PyObject *t = PyTuple_New(k);
    for (Py_ssize_t i = 0; t != NULL && i < k; i++)
        PyTuple_SET_ITEM(t, i, Py_NewRef(PyTuple_GET_ITEM(in, i == a ? b : i == b ? a : i)));
    return t;
}

/* A tuple of k Nones (fixed dims). */
static PyObject *nones(Py_ssize_t k)
{
    PyObject *t = PyTuple_New(k);
    for (Py_ssize_t i = 0; t != NULL && i < k; i++)
        PyTuple_SET_ITEM(t, i, Py_NewRef(Py_None));
    return t;
}

/* The shape positional entries args[lo..hi) give (one shape Var, or several ints): as shape_dims. */
static PyObject *shape_of_args(fj_Tracer *tx, PyObject *const *args, Py_ssize_t lo, Py_ssize_t hi)
{
    npy_intp fixed[FJ_MAX_NDIM];
    int nd = 0;
    if (hi - lo == 1)
        return shape_dims(tx, args[lo], fixed, &nd);
    if (hi - lo < 1 || hi - lo > FJ_MAX_NDIM)
        return NULL;
    PyObject *items = PyList_New(0);
    for (Py_ssize_t i = lo; items != NULL && i < hi; i++)
        if (PyList_Append(items, args[i]) < 0)
            Py_CLEAR(items);
    PyObject *tv = items ? (PyObject *)fj_var_take(FJ_VAR_TUPLE, items) : NULL;
    PyObject *d = tv ? shape_dims(tx, tv, fixed, &nd) : NULL;
    Py_XDECREF(tv);
    return d;
}

/* The rule's dims for the bound slots; 1 with *out, 0 when not modelled, -1. */
static int torch_rule_dims(fj_Tracer *tx, int kind, const char *params, PyObject **sl, PyObject *const *args,
                           Py_ssize_t npos, Py_ssize_t nkw, PyObject *res, PyObject **out)
{
    int rnd = res != NULL ? (int)PyObject_Length(res) : -1; /* a torch.Size-like len() of the fake: its ndim */
    PyObject *in = NULL, *d = NULL;
    fj_Node *a = NULL;
    int r = 0;
    if (rnd < 0) {
        PyErr_Clear();
        return 0;
    }
    PyObject *x = sl[0];
    if (kind != FJ_TSH_CREATE && kind != FJ_TSH_ARANGE && kind != FJ_TSH_CAT && kind != FJ_TSH_STACK &&
        kind != FJ_TSH_BROADCAST) {
        if (!is_tensor_var(x))
            return 0;
        a = (fj_Node *)VAR(x)->obj;
        if (a->datadep)
            return 0;
        if ((in = dims_of(x)) == NULL)
            return -1;
        if (in == Py_None) {
            Py_DECREF(in);
            return 0;
        }
    }
    int nd = a ? a->ndim : 0;
    switch (kind) {
    case FJ_TSH_SAME:
    case FJ_TSH_BATCH_NORM:
    case FJ_TSH_LAYER_NORM: {
        int ok = rnd == nd;
        for (int i = 1; ok && i < FJ_TORCH_MAXP; i++)
            if (is_tensor_var(sl[i]))
                ok = kind != FJ_TSH_SAME && all_fixed(sl[i]); /* weights, running stats */
        if (ok && kind == FJ_TSH_BATCH_NORM) /* channels fixed; a batch that may be 1 (a slice's) raises
                                                 in training: not modelled */
            ok = (nd < 2 || PyTuple_GET_ITEM(in, 1) == Py_None) &&
                 (nd < 1 || PyTuple_GET_ITEM(in, 0) == Py_None ||
                  PyLong_AsLong(PyTuple_GET_ITEM(PyTuple_GET_ITEM(in, 0), 1)) != -2);
        if (ok && kind == FJ_TSH_LAYER_NORM) {
            /* normalized_shape: constant ints over trailing fixed dims */
            PyObject *ns = sl[1] && VAR(sl[1])->kind == FJ_VAR_CONST ? VAR(sl[1])->obj : NULL;
            Py_ssize_t k = ns == NULL ? -1 : PyLong_CheckExact(ns) ? 1 : PyTuple_Check(ns) || PyList_Check(ns) ? PySequence_Size(ns) : -1;
            ok = k >= 0 && k <= nd;
            for (Py_ssize_t i = nd - k; ok && i < nd; i++)
                ok = PyTuple_GET_ITEM(in, i) == Py_None;
        }
        if (ok)
            d = Py_NewRef(in);
        break;
    }
    case FJ_TSH_MASKED_FILL:
        if (!is_tensor_var(sl[1]) || rnd != nd)
            break; /* (self's sizes: the mask broadcasts to them, never them to it) */
        /* fall through */
    case FJ_TSH_BROADCAST: {
        /* every tensor operand broadcast together (scalars take no part) */
        PyObject *ops = PyList_New(0);
        int bad = ops == NULL;
        for (int i = 0; !bad && i < FJ_TORCH_MAXP; i++)
            if (sl[i] != NULL && is_tensor_var(sl[i]))
                bad = PyList_Append(ops, sl[i]) < 0;
            else if (sl[i] != NULL && VAR(sl[i])->kind != FJ_VAR_CONST && VAR(sl[i])->kind != FJ_VAR_NODE) {
                Py_DECREF(ops);
                goto done; /* a list or tuple operand: its sizes are not modelled */
            }
        if (bad) {
            Py_XDECREF(ops);
            r = -1;
            goto done;
        }
        r = combine(tx, ops, &d);
        Py_DECREF(ops);
        if (r < 0)
            goto done;
        if (d != NULL && PyTuple_GET_SIZE(d) != rnd)
            Py_CLEAR(d);
        break;
    }
    case FJ_TSH_REDUCE: {
        int slot = param_slot(params, "dim"), mask[FJ_MAX_NDIM];
        PyObject *dimv = slot >= 0 ? sl[slot] : NULL;
        for (int i = 1; i < FJ_TORCH_MAXP; i++)
            if (is_tensor_var(sl[i]))
                goto done;
        if (nd == 0 || !dim_mask(dimv, nd, mask))
            break;
        int nred = 0;
        for (int i = 0; i < nd; i++)
            nred += mask[i];
        int keep = rnd == nd && nred > 0 && !(nred == nd && rnd == 0);
        if (!keep && rnd != nd - nred)
            break;
        PyObject *l = PyList_New(0);
        for (int i = 0; l != NULL && i < nd; i++) {
            if (mask[i] && !keep)
                continue;
            if (PyList_Append(l, mask[i] ? Py_None : PyTuple_GET_ITEM(in, i)) < 0)
                Py_CLEAR(l);
        }
        d = l ? PyList_AsTuple(l) : NULL;
        Py_XDECREF(l);
        if (d == NULL)
            r = -1;
        break;
    }
    case FJ_TSH_MATMUL: {
        PyObject *bv = sl[1];
        if (!is_tensor_var(bv) || nd < 1 || ((fj_Node *)VAR(bv)->obj)->datadep)
            break;
        fj_Node *b = (fj_Node *)VAR(bv)->obj;
        if (b->ndim < 1 || b->ndim > 2 || (nd == 1 && b->ndim == 1))
            break;
        PyObject *db = dims_of(bv);
        if (db == NULL) {
            r = -1;
            goto done;
        }
        if (db == Py_None) {
            Py_DECREF(db);
            break;
        }
        PyObject *ka = PyTuple_GET_ITEM(in, nd - 1), *kb = PyTuple_GET_ITEM(db, 0);
        int ok = (ka == Py_None) == (kb == Py_None);
        if (ok && ka != Py_None && !same_symbol(ka, kb)) {
            int g = guard_equal(tx, ka, kb);
            if (g < 0) {
                Py_DECREF(db);
                r = -1;
                goto done;
            }
            ok = g > 0;
        }
        if (ok) {
            PyObject *tail = b->ndim == 2 ? PyTuple_GetSlice(db, 1, 2) : PyTuple_New(0);
            d = tail ? splice(in, nd - 1, nd, tail) : NULL;
            Py_XDECREF(tail);
            if (d == NULL)
                r = -1;
            else if (PyTuple_GET_SIZE(d) != rnd)
                Py_CLEAR(d);
        }
        Py_DECREF(db);
        break;
    }
    case FJ_TSH_LINEAR:
        if (nd >= 1 && PyTuple_GET_ITEM(in, nd - 1) == Py_None && all_fixed(sl[1]) &&
            (sl[2] == NULL || !is_tensor_var(sl[2]) || all_fixed(sl[2])) && rnd == nd) {
            PyObject *one = nones(1);
            d = one ? splice(in, nd - 1, nd, one) : NULL;
            Py_XDECREF(one);
            r = d == NULL ? -1 : 0;
        }
        break;
    case FJ_TSH_CONV:
    case FJ_TSH_POOL: {
        int ok = rnd == nd && nd >= 2;
        for (int i = 1; ok && i < nd; i++)
            ok = PyTuple_GET_ITEM(in, i) == Py_None;
        for (int i = 1; ok && i < FJ_TORCH_MAXP; i++)
            if (is_tensor_var(sl[i]))
                ok = all_fixed(sl[i]);
        if (ok && kind == FJ_TSH_CONV) /* batched: dim 0 is the batch, not the channels */
            ok = is_tensor_var(sl[1]) && ((fj_Node *)VAR(sl[1])->obj)->ndim == nd;
        if (ok) {
            PyObject *rest = nones(nd - 1);
            d = rest ? splice(in, 1, nd, rest) : NULL;
            Py_XDECREF(rest);
            r = d == NULL ? -1 : 0;
        }
        break;
    }
    case FJ_TSH_EMBEDDING:
        if (all_fixed(sl[1]) && ((fj_Node *)VAR(sl[1])->obj)->ndim == 2 && rnd == nd + 1) {
            PyObject *one = nones(1);
            d = one ? splice(in, nd, nd, one) : NULL;
            Py_XDECREF(one);
            r = d == NULL ? -1 : 0;
        }
        break;
    case FJ_TSH_VIEW:
        if (params == NULL ? nkw == 0 : (sl[1] != NULL && npos == 2 && nkw == 0)) {
            PyObject *argv[FJ_MAX_NDIM + 2];
            Py_ssize_t k = npos;
            if (k > FJ_MAX_NDIM + 1)
                break;
            for (Py_ssize_t i = 0; i < k; i++)
                argv[i] = args[i];
            r = reshape_dims(tx, argv, k, 0, &d);
            if (r < 0)
                goto done;
            if (d != NULL && PyTuple_GET_SIZE(d) != rnd)
                Py_CLEAR(d);
        }
        break;
    case FJ_TSH_NEW:
    case FJ_TSH_CREATE: {
        Py_ssize_t lo = kind == FJ_TSH_NEW ? 1 : 0, hi = npos;
        if (params != NULL) {
            /* torch.full(size, fill_value): the shape is the first slot */
            if (sl[0] == NULL)
                break;
            d = shape_of_args(tx, sl, 0, 1);
        }
        else if (hi > lo)
            d = shape_of_args(tx, args, lo, hi);
        if (d == NULL && PyErr_Occurred())
            r = -1;
        else if (d != NULL && PyTuple_GET_SIZE(d) != rnd)
            Py_CLEAR(d);
        break;
    }
    case FJ_TSH_ARANGE:
        if (npos == 1 && rnd == 1) {
            d = shape_of_args(tx, args, 0, 1);
            if (d == NULL && PyErr_Occurred())
                r = -1;
        }
        break;
    case FJ_TSH_TRANSPOSE: {
        long d0, d1;
        if (const_long(sl[1], &d0) && const_long(sl[2], &d1) && norm_dim(&d0, nd) && norm_dim(&d1, nd) &&
            rnd == nd) {
            d = swapped(in, d0, d1);
            r = d == NULL ? -1 : 0;
        }
        break;
    }
    case FJ_TSH_T:
    case FJ_TSH_MT:
        if (rnd == nd && (kind == FJ_TSH_T ? nd <= 2 : nd >= 2)) {
            d = nd >= 2 ? swapped(in, nd - 2, nd - 1) : Py_NewRef(in);
            r = d == NULL ? -1 : 0;
        }
        break;
    case FJ_TSH_PERMUTE: {
        /* x.permute(1, 0), x.permute((1, 0)), torch.permute(x, (1, 0)) */
        PyObject *seq = NULL;
        if (params != NULL)
            seq = sl[1];
        else if (npos == 2 && nkw == 0)
            seq = args[1];
        long perm[FJ_MAX_NDIM];
        Py_ssize_t k = 0;
        if (seq != NULL) {
            PyObject *items = VAR(seq)->kind == FJ_VAR_TUPLE || VAR(seq)->kind == FJ_VAR_LIST ? VAR(seq)->items : NULL;
            PyObject *c = VAR(seq)->kind == FJ_VAR_CONST ? VAR(seq)->obj : NULL;
            if (items != NULL) {
                k = PyList_GET_SIZE(items);
                for (Py_ssize_t i = 0; i < k && i < FJ_MAX_NDIM; i++)
                    if (!const_long(PyList_GET_ITEM(items, i), &perm[i]))
                        k = -1;
            }
            else if (c != NULL && (PyTuple_CheckExact(c) || PyList_CheckExact(c))) {
                k = PySequence_Fast_GET_SIZE(c);
                for (Py_ssize_t i = 0; i < k && i < FJ_MAX_NDIM; i++) {
                    PyObject *e = PySequence_Fast_GET_ITEM(c, i);
                    if (!PyLong_CheckExact(e))
                        k = -1;
                    else
                        perm[i] = PyLong_AsLong(e);
                }
            }
            else
                k = -1;
        }
        else if (nkw == 0 && npos - 1 <= FJ_MAX_NDIM) {
            k = npos - 1;
            for (Py_ssize_t i = 0; i < k; i++)
                if (!const_long(args[i + 1], &perm[i]))
                    k = -1;
        }
        if (k != nd || rnd != nd)
            break;
        int seen[FJ_MAX_NDIM] = {0}, ok = 1;
        for (Py_ssize_t i = 0; ok && i < k; i++)
            ok = norm_dim(&perm[i], nd) && !seen[perm[i]] && (seen[perm[i]] = 1);
        if (!ok)
            break;
        d = PyTuple_New(nd);
        for (Py_ssize_t i = 0; d != NULL && i < k; i++)
            PyTuple_SET_ITEM(d, i, Py_NewRef(PyTuple_GET_ITEM(in, perm[i])));
        r = d == NULL ? -1 : 0;
        break;
    }
    case FJ_TSH_UNSQUEEZE: {
        long dd;
        if (const_long(sl[1], &dd) && norm_dim(&dd, nd + 1) && rnd == nd + 1) {
            PyObject *one = nones(1);
            d = one ? splice(in, dd, dd, one) : NULL;
            Py_XDECREF(one);
            r = d == NULL ? -1 : 0;
        }
        break;
    }
    case FJ_TSH_SQUEEZE: {
        /* an input's symbol is >= 2 (sizes 0 and 1 stay specialized): never squeezed */
        int mask[FJ_MAX_NDIM];
        if (nd == 0 || !dim_mask(sl[1], nd, mask))
            break;
        /* a slice's size (s - 1) may be 1: not modelled (the trace pins) */
        for (int i = 0; i < nd; i++)
            if (mask[i] && PyTuple_GET_ITEM(in, i) != Py_None &&
                PyLong_AsLong(PyTuple_GET_ITEM(PyTuple_GET_ITEM(in, i), 1)) == -2)
                goto done;
        PyObject *l = PyList_New(0);
        for (int i = 0; l != NULL && i < nd; i++) {
            PyObject *e = PyTuple_GET_ITEM(in, i);
            if (mask[i] && e == Py_None && a->shape[i] == 1)
                continue;
            if (PyList_Append(l, e) < 0)
                Py_CLEAR(l);
        }
        d = l ? PyList_AsTuple(l) : NULL;
        Py_XDECREF(l);
        if (d == NULL)
            r = -1;
        else if (PyTuple_GET_SIZE(d) != rnd)
            Py_CLEAR(d);
        break;
    }
    case FJ_TSH_FLATTEN: {
        long s0 = 0, s1 = -1;
        if ((sl[1] != NULL && !const_long(sl[1], &s0)) || (sl[2] != NULL && !const_long(sl[2], &s1)))
            break;
        if (nd == 0) {
            if (rnd == 1)
                d = nones(1);
            r = d == NULL && rnd == 1 ? -1 : 0;
            break;
        }
        if (!norm_dim(&s0, nd) || !norm_dim(&s1, nd) || s0 > s1 || rnd != nd - (s1 - s0))
            break;
        PyObject *sym = NULL;
        int ok = 1;
        for (long i = s0; ok && i <= s1; i++) {
            PyObject *e = PyTuple_GET_ITEM(in, i);
            if (e != Py_None)
                ok = sym == NULL && (sym = e) != NULL;
            else if (a->shape[i] != 1 && sym != NULL)
                ok = 0;
        }
        /* one symbol among fixed 1s, or all fixed */
        for (long i = s0; ok && sym != NULL && i <= s1; i++)
            ok = PyTuple_GET_ITEM(in, i) != Py_None || a->shape[i] == 1;
        if (!ok)
            break;
        PyObject *mid = sym ? PyTuple_Pack(1, sym) : nones(1);
        d = mid ? splice(in, s0, s1 + 1, mid) : NULL;
        Py_XDECREF(mid);
        r = d == NULL ? -1 : 0;
        break;
    }
    case FJ_TSH_CAT:
    case FJ_TSH_STACK: {
        if (sl[0] == NULL)
            break;
        PyObject *argv[2] = {sl[0], sl[1]};
        r = join_dims(tx, kind == FJ_TSH_STACK, argv, sl[1] ? 2 : 1, NULL, &d);
        if (r < 0)
            goto done;
        r = 0;
        if (d != NULL && PyTuple_GET_SIZE(d) != rnd)
            Py_CLEAR(d);
        break;
    }
    default:
        break;
    }
    if (d != NULL) {
        *out = d;
        d = NULL;
        r = 1;
    }
done:
    Py_XDECREF(in);
    Py_XDECREF(d);
    return r;
}

int fj_dims_torch(fj_Tracer *tx, const fj_OpDef *op, PyObject *target, PyObject *const *args, Py_ssize_t n,
                  PyObject *kwnames, PyObject *res_size, PyObject **out)
{
    Py_ssize_t nkw = kwnames ? PyTuple_GET_SIZE(kwnames) : 0, npos = n - nkw;
    *out = NULL;
    if (tx->specialized)
        return 0;
    if (op == fj_ops_for_getitem()) {
        if (npos != 2 || nkw != 0 || !is_tensor_var(args[0]))
            return 0;
        int r = getitem_dims(tx, args[0], args[1], out);
        if (r < 0)
            return -1;
        if (r > 0 && PyTuple_GET_SIZE(*out) != PyObject_Length(res_size))
            Py_CLEAR(*out);
        PyErr_Clear(); /* (PyObject_Length of a torch.Size cannot fail; nothing else here sets one) */
        return *out != NULL;
    }
    const char *params = NULL;
    int kind = fj_torch_shape_rule(op, target, &params);
    if (kind == FJ_TSH_NONE)
        return 0;
    PyObject *sl[FJ_TORCH_MAXP];
    for (int i = 0; i < FJ_TORCH_MAXP; i++)
        sl[i] = NULL;
    if (params != NULL) {
        PyObject *pt = PyTuple_New(npos), *kw = nkw ? PyDict_New() : NULL;
        int ok = pt != NULL && (nkw == 0 || kw != NULL);
        for (Py_ssize_t i = 0; ok && i < npos; i++)
            PyTuple_SET_ITEM(pt, i, Py_NewRef(args[i]));
        for (Py_ssize_t k = 0; ok && k < nkw; k++)
            ok = PyDict_SetItem(kw, PyTuple_GET_ITEM(kwnames, k), args[npos + k]) == 0;
        if (!ok) {
            Py_XDECREF(pt);
            Py_XDECREF(kw);
            return -1;
        }
        ok = fj_torch_bind(params, pt, kw, sl);
        /* the slots borrow from args (pt and kw hold the same references) */
        Py_DECREF(pt);
        Py_XDECREF(kw);
        if (!ok)
            return 0;
    }
    else {
        /* varargs: the tensor (a method's self) first, sizes after; keywords
           may only be dtype/device/requires_grad/layout/pin_memory */
        for (Py_ssize_t k = 0; k < nkw; k++) {
            const char *kn = PyUnicode_AsUTF8(PyTuple_GET_ITEM(kwnames, k));
            if (kn == NULL)
                return -1;
            if (strcmp(kn, "dtype") && strcmp(kn, "device") && strcmp(kn, "requires_grad") &&
                strcmp(kn, "layout") && strcmp(kn, "pin_memory"))
                return 0;
        }
        sl[0] = npos > 0 ? args[0] : NULL;
        if (kind == FJ_TSH_CREATE || kind == FJ_TSH_ARANGE)
            sl[0] = NULL;
        nkw = kind == FJ_TSH_CREATE || kind == FJ_TSH_NEW || kind == FJ_TSH_ARANGE ? 0 : nkw;
    }
    return torch_rule_dims(tx, kind, params, sl, args, npos, nkw, res_size, out);
}
