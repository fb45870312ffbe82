/*
** shape_env.c: relations over symbolic sizes and ints (issue 22; docs/dynamic.md,
** "Relations").  torch's ShapeEnv, written small.
**
** Responsible for: a branch on a symbolic int expression (`if x.shape[0] > 10:`,
** `if n % 2 == 0:`, `if len(x) - 1:`): instead of pinning every dynamic input,
** the trace takes the side the values it sees take and adds a RELATION guard
** (guards.c) that the branch goes the same way: `L['x'].shape[0] <= 10`.  The
** expression is read back from the graph: the nodes of Python int arithmetic
** (+ - * // % and unary -) and one comparison, over constants and the symbols
** of the trace (the graph inputs of symbolic ints: int inputs, L['n'], and
** sizes, L['x'].shape[0], fj_trace_size_input).  Anything else (a float, a
** value of a captured loop's iteration, a node that is not such arithmetic)
** is not expressible: the caller pins as before.
**
** Not responsible for: evaluating the guard (guards.c relation_check), the
** symbols' creation (trace.c), sizes meeting in broadcasting (trace_dims.c).
*/
#include "trace.h"

#include "graph.h"
#include "guards.h"
#include "source.h"

#include <limits.h>

typedef struct {
    fj_Tracer *tx;
    PyObject *syms;  /* list of (source, dim or -1) */
    PyObject *keys;  /* list of their printed texts, for reuse */
    PyObject *prog;  /* list of ints: (opcode, operand) words */
    int depth;
} Expr;

int fj_rel_word(PyObject *prog, long long op, long long arg)
{
    PyObject *a = PyLong_FromLongLong(op), *b = a ? PyLong_FromLongLong(arg) : NULL;
    int r = b != NULL && PyList_Append(prog, a) == 0 && PyList_Append(prog, b) == 0 ? 0 : -1;
    Py_XDECREF(a);
    Py_XDECREF(b);
    return r;
}

static int word(Expr *e, long long op, long long arg)
{
    return fj_rel_word(e->prog, op, arg);
}

int fj_rel_add(fj_Tracer *tx, PyObject *syms, PyObject *prog, PyObject *text)
{
    PyObject *st = PyList_AsTuple(syms), *pt = st ? PyList_AsTuple(prog) : NULL;
    int r = pt ? fj_guard_add_relation(tx->guards, st, pt, 1, text, &tx->view) : -1;
    Py_XDECREF(st);
    Py_XDECREF(pt);
    return r;
}

/* The symbol a placeholder node stands for: 1 with *src (borrowed) and *dim
   (-1 for an int input), 0 when it is not a symbolic int of the trace. */
static int symbol_of(fj_Tracer *tx, fj_Node *n, fj_Source **src, long *dim)
{
    fj_Var *v = fj_trace_placeholder_var(tx, (PyObject *)n);
    if (v == NULL || v->source == NULL || !v->dynamic || n->example == NULL || !PyLong_CheckExact(n->example))
        return 0;
    if (v->size_input) {
        /* <array>.shape[d] (fj_trace_size_input) */
        fj_Source *s = v->source;
        if (s->kind != FJ_SRC_SIZE || s->parent == NULL)
            return 0;
        *src = s->parent;
        *dim = (long)s->index;
        return 1;
    }
    *src = v->source;
    *dim = -1;
    return 1;
}

/* Binary operator codes of Python int arithmetic (NB_* of BINARY_OP, in place or not). */
long long fj_rel_arith(const fj_OpDef *op)
{
    if (op->kind != FJ_OP_BINOP && op->kind != FJ_OP_INPLACE)
        return 0;
    int code = op->kind == FJ_OP_INPLACE ? op->code - NB_INPLACE_ADD : op->code;
    switch (code) {
    case NB_ADD: return FJ_REL_ADD;
    case NB_SUBTRACT: return FJ_REL_SUB;
    case NB_MULTIPLY: return FJ_REL_MUL;
    case NB_FLOOR_DIVIDE: return FJ_REL_FLOORDIV;
    case NB_REMAINDER: return FJ_REL_MOD;
    }
    return 0;
}

long long fj_rel_compare(int py_op)
{
    static const long long codes[6] = {FJ_REL_LT, FJ_REL_LE, FJ_REL_EQ, FJ_REL_NE, FJ_REL_GT, FJ_REL_GE};
    return py_op >= 0 && py_op < 6 ? codes[py_op] : 0;
}

const char *fj_rel_optext(int py_op)
{
    static const char *const text[6] = {"<", "<=", "==", "!=", ">", ">="};
    return py_op >= 0 && py_op < 6 ? text[py_op] : "?";
}

/*
** Emits the program of 'v' (a node or a constant) and returns its printed
** text (new ref), or NULL: with an error, or with none when v is not
** expressible.  *atom: the text needs no parentheses as an operand.
*/
static PyObject *emit(Expr *e, PyObject *v, int *atom)
{
    *atom = 1;
    if (++e->depth > 32) /* (deeper: not worth a guard) */
        return NULL;
    if (PyLong_CheckExact(v) || PyBool_Check(v)) {
        int ovf = 0;
        long long c = PyLong_AsLongLongAndOverflow(v, &ovf);
        if (ovf || (c == -1 && PyErr_Occurred()) || word(e, FJ_REL_CONST, c) < 0)
            return NULL;
        return PyUnicode_FromFormat("%lld", c);
    }
    if (!fj_Node_Check(v))
        return NULL;
    fj_Node *n = (fj_Node *)v;
    if (n->vkind != FJ_VAL_PYSCALAR || n->variant || n->example == NULL ||
        !(PyLong_CheckExact(n->example) || PyBool_Check(n->example)))
        return NULL;
    if (n->kind == FJ_NODE_PLACEHOLDER) {
        fj_Source *src = NULL;
        long dim = -1;
        if (!symbol_of(e->tx, n, &src, &dim))
            return NULL;
        PyObject *key = dim >= 0 ? PyUnicode_FromFormat("%U.shape[%ld]", src->text, dim) : Py_NewRef(src->text);
        if (key == NULL)
            return NULL;
        Py_ssize_t k = 0, nk = PyList_GET_SIZE(e->keys);
        for (; k < nk; k++)
            if (PyUnicode_Compare(PyList_GET_ITEM(e->keys, k), key) == 0)
                break;
        if (k == nk) {
            PyObject *sym = Py_BuildValue("(Ol)", (PyObject *)src, dim);
            int bad = sym == NULL || PyList_Append(e->syms, sym) < 0 || PyList_Append(e->keys, key) < 0;
            Py_XDECREF(sym);
            if (bad) {
                Py_DECREF(key);
                return NULL;
            }
        }
        if (word(e, FJ_REL_SYM, k) < 0)
            Py_CLEAR(key);
        return key;
    }
    if (n->kind != FJ_NODE_CALL || n->op == NULL || n->kwargs != NULL || !PyTuple_Check(n->args))
        return NULL;
    Py_ssize_t na = PyTuple_GET_SIZE(n->args);
    if (n->op->kind == FJ_OP_UNARY && na == 1 && (n->op->code == FJ_UNARY_NEG || n->op->code == FJ_UNARY_POS)) {
        int a_atom;
        PyObject *a = emit(e, PyTuple_GET_ITEM(n->args, 0), &a_atom);
        if (a == NULL)
            return NULL;
        if (n->op->code == FJ_UNARY_POS)
            return a;
        PyObject *r = word(e, FJ_REL_NEG, 0) < 0 ? NULL
                      : a_atom                   ? PyUnicode_FromFormat("-%U", a)
                                                 : PyUnicode_FromFormat("-(%U)", a);
        Py_DECREF(a);
        *atom = 0;
        return r;
    }
    long long code = fj_rel_arith(n->op);
    if (code == 0 || na != 2 || !PyLong_CheckExact(n->example))
        return NULL;
    int a_atom, b_atom;
    PyObject *a = emit(e, PyTuple_GET_ITEM(n->args, 0), &a_atom);
    PyObject *b = a ? emit(e, PyTuple_GET_ITEM(n->args, 1), &b_atom) : NULL;
    PyObject *r = NULL;
    if (b != NULL && word(e, code, 0) == 0) {
        const char *sym = code == FJ_REL_ADD ? "+" : code == FJ_REL_SUB ? "-" : code == FJ_REL_MUL ? "*"
                          : code == FJ_REL_FLOORDIV ? "//" : "%";
        r = PyUnicode_FromFormat(a_atom ? "%U %s " : "(%U) %s ", a, sym);
        if (r != NULL)
            Py_SETREF(r, PyUnicode_FromFormat(b_atom ? "%U%U" : "%U(%U)", r, b));
    }
    Py_XDECREF(a);
    Py_XDECREF(b);
    *atom = 0;
    return r;
}

int fj_shape_env_branch(fj_Tracer *tx, struct fj_Node *node, int *truth)
{
    if (tx->specialized || node->example == NULL || node->variant)
        return 0;
    int t = PyObject_IsTrue(node->example);
    if (t < 0)
        return -1;
    Expr e = {tx, PyList_New(0), PyList_New(0), PyList_New(0), 0};
    PyObject *text = NULL;
    int r = -1;
    if (e.syms == NULL || e.keys == NULL || e.prog == NULL)
        goto done;
    /* the relation: a comparison at the top, else the int's truth (!= 0);
       the side not taken is printed and checked as the negated comparison */
    long long cmp;
    PyObject *lhs, *rhs;
    int cmp_op = -1;
    if (node->kind == FJ_NODE_CALL && node->op != NULL && node->op->kind == FJ_OP_COMPARE &&
        PyTuple_Check(node->args) && PyTuple_GET_SIZE(node->args) == 2 && node->kwargs == NULL) {
        cmp_op = node->op->code;
        lhs = PyTuple_GET_ITEM(node->args, 0);
        rhs = PyTuple_GET_ITEM(node->args, 1);
    }
    else {
        cmp_op = Py_NE;
        lhs = (PyObject *)node;
        rhs = NULL;
    }
    static const int negated[6] = {Py_GE, Py_GT, Py_NE, Py_EQ, Py_LE, Py_LT};
    if (cmp_op < 0 || cmp_op > 5)
        goto unexpressible;
    if (!t)
        cmp_op = negated[cmp_op];
    int atom;
    PyObject *a = emit(&e, lhs, &atom), *b = NULL;
    if (a == NULL)
        goto unexpressible;
    PyObject *zero = rhs == NULL ? PyLong_FromLong(0) : NULL;
    if (rhs == NULL && zero == NULL) {
        Py_DECREF(a);
        goto done;
    }
    b = emit(&e, rhs != NULL ? rhs : zero, &atom);
    Py_XDECREF(zero);
    if (b == NULL) {
        Py_DECREF(a);
        goto unexpressible;
    }
    cmp = fj_rel_compare(cmp_op);
    text = word(&e, cmp, 0) < 0 ? NULL : PyUnicode_FromFormat("%U %s %U", a, fj_rel_optext(cmp_op), b);
    Py_DECREF(a);
    Py_DECREF(b);
    if (text == NULL || PyList_GET_SIZE(e.syms) == 0)
        goto unexpressible; /* (no symbol: a constant the trace folds itself) */
    int added = fj_rel_add(tx, e.syms, e.prog, text);
    if (added < 0)
        goto done;
    if (added == 0)
        goto unexpressible; /* not computable for the values now (past int64): pin */
    *truth = t;
    r = 1;
    goto done;
unexpressible:
    r = PyErr_Occurred() ? -1 : 0;
done:
    Py_XDECREF(e.syms);
    Py_XDECREF(e.keys);
    Py_XDECREF(e.prog);
    Py_XDECREF(text);
    return r;
}

int fj_shape_env_guard(fj_Tracer *tx, struct fj_Node *node, int cmp_op, long long c)
{
    if (tx->specialized || node->variant || node->example == NULL || !PyLong_CheckExact(node->example) ||
        cmp_op < 0 || cmp_op > 5)
        return 0;
    /* holds now? */
    PyObject *cv = PyLong_FromLongLong(c);
    int holds = cv ? PyObject_RichCompareBool(node->example, cv, cmp_op) : -1;
    Py_XDECREF(cv);
    if (holds <= 0)
        return holds;
    Expr e = {tx, PyList_New(0), PyList_New(0), PyList_New(0), 0};
    PyObject *text = NULL, *a = NULL;
    int r = -1, atom;
    if (e.syms == NULL || e.keys == NULL || e.prog == NULL)
        goto done;
    a = emit(&e, (PyObject *)node, &atom);
    if (a == NULL || PyList_GET_SIZE(e.syms) == 0) {
        r = PyErr_Occurred() ? -1 : 0;
        goto done;
    }
    if (word(&e, FJ_REL_CONST, c) < 0 || word(&e, fj_rel_compare(cmp_op), 0) < 0 ||
        (text = cmp_op == Py_GE && c == LLONG_MIN ? PyUnicode_FromFormat("%U fits int64", a)
                                                   : PyUnicode_FromFormat("%U %s %lld", a, fj_rel_optext(cmp_op), c)) == NULL)
        goto done;
    r = fj_rel_add(tx, e.syms, e.prog, text); /* 0: not computable now */
done:
    Py_XDECREF(e.syms);
    Py_XDECREF(e.keys);
    Py_XDECREF(e.prog);
    Py_XDECREF(a);
    Py_XDECREF(text);
    return r;
}
