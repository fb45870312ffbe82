/*
** trace_loops.c: loops captured as one loop node (docs/loops.md).
**
** Responsible for: deciding at a FOR_ITER over a long range() whether its
** loop is captured; tracing the body once into a body graph, with the
** induction variable and the locals the body carries from one iteration to
** the next as placeholders whose values are unknown ('variant' nodes: a
** branch on one, or a use that needs its value, refuses the capture); the
** checks that the body is the same graph on every iteration (no break out
** of the loop, no side effect but stores into arrays, the carried values
** keeping their kind, dtype and shape); the loop node and the loop_item
** nodes that give the locals their values after the loop; and the policy a
** failed capture leaves for the next trace of the frame (peel the first
** iteration when a carried value changed type, else unroll).
**
** Not responsible for: running loops (loop.c), the graph (graph.c), the
** run loop of the tracer (trace.c).
*/
#include "trace.h"

#include "graph.h"
#include "loop.h"
#include "resume.h"
#include "walk.h"

/* The loop being captured.  Per local of its frame: written somewhere in the
   body (static), stored so far in this trace of the body, loaded before any
   store in it (carried from the previous iteration). */
typedef struct fj_LoopCtx {
    fj_TFrame *fr;
    int head, end;
    int phead;          /* its policy's head (FJ_SYMBOLIC_HEAD for a symbolic range) */
    Py_ssize_t made0;   /* length of tx->made when the body's trace began */
    unsigned char *written, *stored, *read_first;
    struct fj_LoopCtx *outer;
    /* a compound test's loop (and_shape): its top test's jumps to the exit T in
       [head, and_hi) are the body's loop_exit nodes, which must come before any
       store, side effect or change of a local (what the iteration began with:
       'entry', strong, nlocals entries) at the stack depth sp0; the last one */
    int and_hi, and_T, sp0;
    PyObject **entry;
    Py_ssize_t neff0, nmut0, nov0;
    PyObject *last_exit; /* strong Var or NULL */
    /* a for loop, or a while loop with a plain test: a `break` on data is an
       exit too (break_X: the loop's exit, where a break jumps, after popping a
       for loop's iterator: pops):
       its state is the iteration's locals where it breaks (after the break's own
       moves, `k = i`), each local that differs from 'entry' a slot it sets; each
       exit's (slots, values), strong, in 'exits' (checked against the outputs) */
    int is_for, break_X, pops;
    const int *slot_of;
    PyObject *exits;
    /* a for loop whose exit is a plain `return v` (its code at break_X): a
       `return w` in the body is an exit too, setting two state slots past the
       locals', ret_slot (True) and ret_slot + 1 (w); -1 when not.  'rets' (strong
       list) the values returned, checked against the exit's */
    int ret_slot;
    PyObject *rets;
} fj_LoopCtx;

int fj_loop_made_here(fj_Tracer *tx, fj_Var *v)
{
    if (tx->loop == NULL || tx->made == NULL)
        return 0;
    for (Py_ssize_t k = tx->loop->made0; k < PyList_GET_SIZE(tx->made); k++)
        if (PyList_GET_ITEM(tx->made, k) == (PyObject *)v)
            return 1;
    return 0;
}

void fj_loop_note_load(fj_TFrame *fr, int i)
{
    for (fj_LoopCtx *c = fr->tx->loop; c != NULL; c = c->outer)
        if (c->fr == fr && !c->stored[i])
            c->read_first[i] = 1;
}

void fj_loop_note_store(fj_TFrame *fr, int i)
{
    for (fj_LoopCtx *c = fr->tx->loop; c != NULL; c = c->outer)
        if (c->fr == fr)
            c->stored[i] = 1;
}

/* A loop over a symbolic range (FJ_VAR_RANGE) has a policy of its own: 'head'
   with this bit (the same loop with constant bounds, unrolled in an
   enclosing loop's first iteration, keeps the plain one). */
#define FJ_SYMBOLIC_HEAD (1 << 30)
/* A while loop's policy key: 'head' (its body's first instruction) with this bit. */
#define FJ_WHILE_HEAD (1 << 29)
/* A compound test's copy to capture its loop from where the trace arrives
   (fj_trace_and_arrive): its first instruction with this bit. */
#define FJ_AND_ARM (1 << 28)
/* A while loop with a constant test to capture at its first test (a break on
   data in its unrolled iterations, fj_trace_while_break_arm): its body's first
   instruction with this bit. */
#define FJ_WHILE_TOP (1 << 27)

/* The loop's policy key: (id(code), head).  New reference. */
static PyObject *policy_key(fj_TFrame *fr, int head)
{
    return Py_BuildValue("(Ni)", PyLong_FromVoidPtr(fr->code), head);
}

/* The policy recorded for the loop at 'head' (policy_key): the first
   iterations to peel, -1 never captured, 0 when none is.  -2 on error. */
static long policy_peel(fj_Tracer *tx, fj_TFrame *fr, int head)
{
    PyObject *key = policy_key(fr, head);
    PyObject *pol = key ? PyDict_GetItemWithError(tx->loop_policy, key) : NULL;
    long peel = pol ? PyLong_AsLong(pol) : 0;
    Py_XDECREF(key);
    return PyErr_Occurred() ? -2 : peel;
}

/* Records that the loop at 'head' is to be traced again with 'peel' first
   iterations unrolled (-1: never captured), and asks for the retry:
   Unsupported with tx->loop_retry.  Returns -1. */
static int retry(fj_TFrame *fr, int head, long peel, const char *why)
{
    fj_Tracer *tx = fr->tx;
    PyObject *key = policy_key(fr, head), *val = PyLong_FromLong(peel);
    if (key == NULL || val == NULL || tx->loop_policy == NULL ||
        PyDict_SetItem(tx->loop_policy, key, val) < 0) {
        Py_XDECREF(key);
        Py_XDECREF(val);
        return PyErr_Occurred() ? -1 : fj_unsupported("loop capture: no policy");
    }
    Py_DECREF(key);
    Py_DECREF(val);
    tx->loop_retry = 1;
    if (head & FJ_WHILE_HEAD)
        return fj_unsupported("while loop at %U:%d not captured (%s): %s", fr->code->co_filename,
                              fr->il.v[head & ~FJ_WHILE_HEAD].line, why,
                              peel < 0 ? "it is unrolled, or runs in CPython where its test is data"
                                       : "traced again with its first iteration unrolled");
    if (head & FJ_SYMBOLIC_HEAD)
        return fj_unsupported("loop at %U:%d over range() with bounds that are graph values not captured "
                              "(%s): its bounds are made constants where they can be (guarded), else it "
                              "runs in CPython", fr->code->co_filename,
                              fr->il.v[head & ~FJ_SYMBOLIC_HEAD].line, why);
    if (peel < 0)
        return fj_unsupported("loop at %U:%d not captured (%s): it is unrolled", fr->code->co_filename,
                              fr->il.v[head].line, why);
    return fj_unsupported("loop at %U:%d not captured (%s): traced again with its first %ld iteration%s unrolled",
                          fr->code->co_filename, fr->il.v[head].line, why, peel, peel == 1 ? "" : "s");
}

/* 1 when the three were made; else -1, all three cleared. */
static int all_three(PyObject **start, PyObject **stop, PyObject **step)
{
    if (*start != NULL && *step != NULL && *stop != NULL)
        return 1;
    Py_CLEAR(*start);
    Py_CLEAR(*step);
    Py_CLEAR(*stop);
    return -1;
}

/* start, stop and step of the range the ITER Var 'it' walks from its
   position on, and the iterations left (*left).  1 when it is one (a lazy
   range, or listed ints in arithmetic progression), 0 if not, -1. */
static int range_left(fj_Var *it, PyObject **start, PyObject **stop, PyObject **step, Py_ssize_t *left)
{
    if (it->obj != NULL && PyRange_Check(it->obj)) {
        Py_ssize_t len = PyObject_Length(it->obj);
        if (len < 0)
            return -1;
        *left = len - it->pos;
        if (*left <= 0)
            return 0;
        *start = PySequence_GetItem(it->obj, it->pos);
        *step = PyObject_GetAttrString(it->obj, "step");
        PyObject *count = PyLong_FromSsize_t(*left);
        PyObject *span = count && *step ? PyNumber_Multiply(count, *step) : NULL;
        *stop = span && *start ? PyNumber_Add(*start, span) : NULL;
        Py_XDECREF(count);
        Py_XDECREF(span);
        return all_three(start, stop, step);
    }
    if (it->obj != NULL || it->extra != NULL || it->items == NULL)
        return 0;
    Py_ssize_t n = PyList_GET_SIZE(it->items);
    *left = n - it->pos;
    if (*left < 2)
        return 0;
    long long first = 0, prev = 0, d = 0;
    for (Py_ssize_t k = it->pos; k < n; k++) {
        fj_Var *v = (fj_Var *)PyList_GET_ITEM(it->items, k);
        if (v->kind != FJ_VAR_CONST || !PyLong_CheckExact(v->obj))
            return 0;
        int overflow;
        long long x = PyLong_AsLongLongAndOverflow(v->obj, &overflow);
        if (overflow || (x == -1 && PyErr_Occurred())) {
            PyErr_Clear();
            return 0;
        }
        if (k == it->pos)
            first = x;
        else if (k == it->pos + 1)
            d = x - prev;
        else if (x - prev != d)
            return 0;
        prev = x;
    }
    if (d == 0)
        return 0;
    *start = PyLong_FromLongLong(first);
    *step = PyLong_FromLongLong(d);
    *stop = PyLong_FromLongLong(prev + d);
    return all_three(start, stop, step);
}

/* True when a carried value can be a placeholder: an array, NumPy scalar or
   symbolic scalar node, or a Python int, float or bool constant. */
static int carriable(fj_Var *v)
{
    if (v->kind == FJ_VAR_NODE) {
        int k = ((fj_Node *)v->obj)->vkind;
        return k == FJ_VAL_ARRAY || k == FJ_VAL_NPSCALAR || k == FJ_VAL_PYSCALAR;
    }
    return v->kind == FJ_VAR_CONST && (PyLong_CheckExact(v->obj) || PyFloat_CheckExact(v->obj) ||
                                       PyBool_Check(v->obj) ||
                                       (PyArray_IsScalar(v->obj, Number) || PyArray_IsScalar(v->obj, Bool)));
}

/* Kind, dtype and shape of a body output equal to the placeholder's (so the
   next iteration's trace would be the same).  1, 0, or -1. */
static int same_meta(fj_Node *ph, PyObject *out)
{
    if (fj_Node_Check(out)) {
        fj_Node *n = (fj_Node *)out;
        if (n->vkind != ph->vkind || n->ndim != ph->ndim ||
            memcmp(n->shape, ph->shape, sizeof(npy_intp) * (size_t)n->ndim) != 0)
            return 0;
        if (n->vkind == FJ_VAL_PYSCALAR)
            return n->example != NULL && ph->example != NULL && Py_TYPE(n->example) == Py_TYPE(ph->example);
        return n->dtype != NULL && ph->dtype != NULL && PyArray_EquivTypes(n->dtype, ph->dtype) &&
               n->dtype->byteorder == ph->dtype->byteorder;
    }
    if (ph->vkind != FJ_VAL_PYSCALAR || ph->example == NULL)
        return 0;
    return Py_TYPE(out) == Py_TYPE(ph->example);
}

/* The instructions of the body (head, end) write local i: STORE_FAST and
   its superinstructions.  Also refuses what the body may not hold. */
static const char *scan_body(fj_TFrame *fr, int head, int end, unsigned char *written)
{
    for (int k = head + 1; k < end; k++) {
        fj_Instr *in = &fr->il.v[k];
        switch (in->p.op) {
        case FJ_PI_STORE_FAST:
        case FJ_PI_STORE_FAST_LOAD_FAST:
            written[in->p.a] = 1;
            break;
        case FJ_PI_STORE_FAST_STORE_FAST:
            written[in->p.a] = 1;
            written[in->p.b] = 1;
            break;
        case FJ_PI_DELETE_FAST:
        case FJ_PI_LOAD_FAST_AND_CLEAR:
            return "it deletes a local or holds a comprehension";
        case FJ_PI_STORE_DEREF:
        case FJ_PI_DELETE_DEREF:
            return "it stores into a closure cell";
        default:
            break;
        }
        if (in->exc_target >= 0 && in->p.op != FJ_PI_NOP && !fj_bc_handler_transparent(&fr->il, in->exc_target))
            return "its body is under a try or with block";
    }
    return NULL;
}

/* fj_var_find's 'enter': stops at a node of the body graph (arg). */
static int body_node_enter(fj_VarWalk *w, PyObject *v)
{
    fj_Var *vv = (fj_Var *)v;
    if (vv->kind == FJ_VAR_NODE) {
        return fj_graph_owns((PyObject *)w->arg, (fj_Node *)vv->obj) ? FJ_WALK_STOP : FJ_WALK_SKIP;
    }
    return FJ_WALK_INTO;
}

/* 1 when a value of the body graph is held anywhere but the locals that
   are state slots ('slot_of' >= 0): another local's container, the stack,
   a global the trace stored.  The loop node gives the slots their values;
   anything else would keep a value of one iteration.  0, 1, or -1. */
static int body_value_escapes(fj_TFrame *fr, PyObject *body, const int *slot_of, const unsigned char *drop)
{
    unsigned parts = FJ_PART_ITEMS | FJ_PART_CLASS | FJ_PART_ATTRS | FJ_PART_DEFAULTS | FJ_PART_CLOSURE |
                     FJ_PART_SELF;
    for (int k = 0; k < fr->nlocals; k++) {
        PyObject *v = fr->locals[k];
        if (v == NULL || drop[k])
            continue;
        if (slot_of[k] >= 0 && ((fj_Var *)v)->kind == FJ_VAR_NODE)
            continue;
        int r = fj_var_find(v, parts, body_node_enter, body);
        if (r != 0)
            return r;
    }
    for (int k = 0; k < fr->sp; k++) {
        int r = fj_var_find(fr->stack[k], parts, body_node_enter, body);
        if (r != 0)
            return r;
    }
    Py_ssize_t pos = 0;
    PyObject *key, *val;
    while (PyDict_Next(fr->tx->global_overlay, &pos, &key, &val)) {
        int r = fj_var_find(val, parts, body_node_enter, body);
        if (r != 0)
            return r;
    }
    return 0;
}

/* The most operations an unrolled loop of array operations may add
   (iterations times the body's calls) to be unrolled rather than captured. */
#define FJ_LOOP_FUSE_BUDGET 512

/* True when the body computes whole arrays (not only element reads and
   stores, views or inner loops): elementwise work that fuses when unrolled. */
static int computes_arrays(PyObject *body)
{
    PyObject *nodes = PyObject_GetAttrString(body, "nodes");
    int r = 0;
    for (Py_ssize_t k = 0; nodes != NULL && k < PyList_GET_SIZE(nodes) && !r; k++) {
        fj_Node *n = (fj_Node *)PyList_GET_ITEM(nodes, k);
        r = n->kind == FJ_NODE_CALL && n->op != NULL && n->vkind == FJ_VAL_ARRAY && n->ndim >= 1 &&
            n->op->kind != FJ_OP_GETITEM && !(n->op->flags & FJ_OPF_MUTATES) && n->op != &fj_loop_row &&
            n->op != &fj_loop_item_row;
    }
    Py_XDECREF(nodes);
    PyErr_Clear();
    return r;
}

/* The pending exception's message (new reference), cleared; NULL if none. */
static PyObject *take_message(void)
{
    PyObject *t, *v, *tb;
    PyErr_Fetch(&t, &v, &tb);
    PyErr_NormalizeException(&t, &v, &tb);
    PyObject *msg = v ? PyObject_Str(v) : NULL;
    Py_XDECREF(t);
    Py_XDECREF(v);
    Py_XDECREF(tb);
    PyErr_Clear();
    return msg;
}

/* What the loop capture builds, freed in one place. */
typedef struct {
    PyObject *start, *stop, *step, *body, *saved, *outputs, *carried, *inits, *lifted;
    PyObject *args, *runner, *name;
    unsigned char *flags;
    unsigned char *drop; /* per local: a value of the body's that is not a node or constant (a
                            tuple of indices), not carried and read by no path after the loop:
                            unbound after it (dropped from the state) */
    unsigned char *live; /* per local of the code: read by a path after the loop (NULL: not
                            asked; fj_resume_liveness at its exit) */
    int *slot_of;
    fj_Node **ph_of;
} Capture;

/* 1 when every one of a for loop's exits (fj_LoopCtx.exits) sets state slot s
   (a return's counts: no local is read after it but by the plain return,
   whose value the pick drops; ret_slot its first slot, or -1). */
static int every_exit_sets(PyObject *exits, int s, int ret_slot)
{
    Py_ssize_t n = exits ? PyList_GET_SIZE(exits) : 0;
    for (Py_ssize_t e = 0; e < n; e++) {
        PyObject *slots = PyTuple_GET_ITEM(PyList_GET_ITEM(exits, e), 0);
        int found = 0;
        for (Py_ssize_t k = 0; k < PyTuple_GET_SIZE(slots) && !found; k++) {
            long sk = PyLong_AsLong(PyTuple_GET_ITEM(slots, k));
            found = sk == s || (ret_slot >= 0 && sk == ret_slot);
        }
        if (!found)
            return 0;
    }
    return n > 0;
}

static void capture_clear(Capture *c)
{
    Py_CLEAR(c->start);
    Py_CLEAR(c->stop);
    Py_CLEAR(c->step);
    if (c->body != NULL)
        fj_graph_detach(c->body);
    Py_CLEAR(c->body);
    Py_CLEAR(c->saved);
    Py_CLEAR(c->outputs);
    Py_CLEAR(c->carried);
    Py_CLEAR(c->inits);
    Py_CLEAR(c->lifted);
    Py_CLEAR(c->args);
    Py_CLEAR(c->runner);
    Py_CLEAR(c->name);
    PyMem_Free(c->flags);
    PyMem_Free(c->drop);
    c->drop = NULL;
    PyMem_Free(c->live);
    c->live = NULL;
    PyMem_Free(c->slot_of);
    PyMem_Free(c->ph_of);
    c->flags = NULL;
    c->slot_of = NULL;
    c->ph_of = NULL;
}

/* The node or constant a state slot starts from: the local's Var before the
   loop (None when unbound), lifted into 'enclosing' when it is a node. */
static PyObject *init_value(PyObject *enclosing, PyObject *v)
{
    if (v == Py_None)
        return Py_NewRef(Py_None);
    fj_Var *vv = (fj_Var *)v;
    if (vv->kind == FJ_VAR_NODE) {
        fj_Node *n = fj_graph_lift(enclosing, (fj_Node *)vv->obj);
        return n ? Py_NewRef((PyObject *)n) : NULL;
    }
    if (vv->kind == FJ_VAR_CONST)
        return Py_NewRef(vv->obj);
    return Py_NewRef(Py_None); /* not carried: the body sets it before any read */
}

/* A while loop being captured (fj_trace_capture_while): its body's first
   instruction L, its exit T, its bottom test's instruction, whether the trace
   arrived at its top test, the test's first value and the tests' polarities
   (the loop goes on while a test's truth is not neg). */
typedef struct {
    int L, T, test, at_top, neg0, negs, maybe_zero;
    PyObject *c0;
    /* rotated (`while True: A; if t: break; B`): the body traced from B (the
       test's "go on" target) to the jump back at K, then from L to the test;
       the exit's code in between, [hlo, hhi), is no part of it */
    int rot, B, K, hlo, hhi;
    /* a compound test (and_shape): its top copy [P, L), its bottom copy from Q */
    int andm, P, Q;
} WhileInfo;

static int capture(fj_TFrame *fr, int head, const WhileInfo *w);
static int plain_return(const fj_InstrList *il, int x);

int fj_trace_capture_loop(fj_TFrame *fr, int head)
{
    return capture(fr, head, NULL);
}

static int capture(fj_TFrame *fr, int head, const WhileInfo *w)
{
    fj_Tracer *tx = fr->tx;
    fj_Var *it = w ? NULL : (fj_Var *)fr->stack[fr->sp - 1];
    Capture c;
    fj_LoopCtx ctx;
    Py_ssize_t left;
    int r = 0, sp0 = fr->sp, nl = fr->nlocals, pushed = 0;
    int prev_head = fr->loop_head, prev_end = fr->loop_end, prev_test = fr->loop_test;
    int prev_hlo = fr->loop_hole_lo, prev_hhi = fr->loop_hole_hi, prev_wrap = fr->loop_wrap;
    int prev_tail = fr->loop_tail;
    PyObject *prev_body = tx->body, *stay = NULL, *rzero = NULL; /* (rzero: the return value slot's
                                                                   value where no return ran) */
    memset(&c, 0, sizeof c);
    memset(&ctx, 0, sizeof ctx);

    if (!tx->capture_loops || tx->loop_policy == NULL || (w == NULL && fr->il.v[head].target <= head))
        return 0;
    if (fj_graph_is_torch(tx->graph))
        return 0; /* loop nodes run NumPy bodies: a torch trace unrolls its loops */
    /* a range whose bounds are graph values (FJ_VAR_RANGE): its length is not
       known, so the loop is captured or not traced at all (never unrolled) */
    int symbolic = it != NULL && it->kind == FJ_VAR_RANGE;
    PyObject *enclosing = tx->body ? tx->body : tx->graph;
    if (w != NULL) {
        /* a while loop: its iterations counted from 0 (the count is no value of the
           program's), stop out of reach */
        c.start = PyLong_FromLong(0);
        c.stop = PyLong_FromLongLong((1LL << 62) - 1);
        c.step = PyLong_FromLong(1);
        if (c.start == NULL || c.stop == NULL || c.step == NULL)
            goto error;
        left = -1;
    }
    else if (symbolic) {
        for (int k = 0; k < 3; k++) {
            PyObject **dst = k == 0 ? &c.start : k == 1 ? &c.stop : &c.step;
            if ((*dst = init_value(enclosing, PyTuple_GET_ITEM(it->extra, k))) == NULL)
                goto error;
        }
        left = -1;
    } else {
        int found = range_left(it, &c.start, &c.stop, &c.step, &left);
        if (found <= 0)
            return found;
        if (left <= tx->loop_unroll_limit)
            goto done;
    }
    int phead = symbolic ? head | FJ_SYMBOLIC_HEAD : w ? head | FJ_WHILE_HEAD : head;
    long peel = policy_peel(tx, fr, phead);
    if (peel == -2)
        goto error;
    /* unroll (this iteration); a symbolic range: not traced (a peel asked by the
       same loop with constant bounds, unrolled elsewhere, is its own); a while
       loop peeled: its first iteration runs unrolled, the capture is at its
       bottom test */
    if (peel < 0 || (it != NULL && !symbolic && it->pos < peel) || (w != NULL && peel > 0 && w->at_top))
        goto done;

    if (fj_trace_effects_pending(tx)) {
        /* the loop may raise when it runs (an index, a division by zero): the
           side effects traced before it are replayed after the graph, so they
           would be lost; CPython has done them by then */
        r = retry(fr, phead, -1, "side effects come before it, and an error in the loop would lose them");
        goto done;
    }
    int end = w ? (w->rot ? w->K + 1 : w->andm ? w->Q : w->T) : fr->il.v[head].target;
    c.flags = PyMem_Calloc((size_t)(nl ? nl : 1), 3);
    c.slot_of = PyMem_Calloc((size_t)(nl ? nl : 1), sizeof(int));
    c.ph_of = PyMem_Calloc((size_t)(nl ? nl : 1), sizeof(fj_Node *));
    if (c.flags == NULL || c.slot_of == NULL || c.ph_of == NULL) {
        PyErr_NoMemory();
        goto error;
    }
    ctx.fr = fr;
    ctx.head = head;
    ctx.phead = phead;
    ctx.end = end;
    ctx.written = c.flags;
    ctx.stored = c.flags + nl;
    ctx.read_first = c.flags + 2 * nl;
    const char *why = w && w->rot ? scan_body(fr, w->L - 1, w->test + 1, ctx.written)
                                   : scan_body(fr, w ? (w->andm ? w->P : w->L) - 1 : head, end, ctx.written);
    if (why == NULL && w && w->rot)
        why = scan_body(fr, w->B - 1, end, ctx.written);
    if (why != NULL) {
        r = retry(fr, phead, -1, why);
        goto done;
    }

    /* the body graph's placeholders: the induction variable, then one per
       carriable local the body writes; the values it lifts come after */
    if ((c.body = fj_graph_sub_new(enclosing)) == NULL || (c.saved = PyList_New(nl)) == NULL ||
        (c.carried = PyList_New(0)) == NULL || (c.inits = PyList_New(0)) == NULL ||
        (c.name = PyUnicode_FromString("i")) == NULL)
        goto error;
    fj_Node *iph = fj_graph_placeholder_like(c.body, c.name, c.start, 1);
    if (iph == NULL)
        goto error;
    Py_ssize_t nslots = 0;
    ctx.ret_slot = -1;
    for (int k = 0; k < nl; k++) {
        c.slot_of[k] = -1;
        PyList_SET_ITEM(c.saved, k, Py_NewRef(Py_None));
        if (!ctx.written[k])
            continue;
        c.slot_of[k] = (int)nslots++;
        if (fr->locals[k] == NULL && fr->lazy_args && fj_trace_is_arg_slot(fr, k)) {
            PyObject *loaded = fj_trace_load_local(fr, k); /* an argument read on first use */
            if (loaded == NULL)
                goto error;
            Py_DECREF(loaded);
        }
        PyObject *v = fr->locals[k];
        if (v != NULL)
            Py_SETREF(PyList_GET_ITEM(c.saved, k), Py_NewRef(v));
        PyObject *init = init_value(enclosing, v ? v : Py_None);
        if (init == NULL)
            goto error;
        int bad = PyList_Append(c.inits, init) < 0;
        if (!bad && v != NULL && carriable((fj_Var *)v)) {
            PyObject *name = fj_code_local_name(fr->code, k);
            fj_Node *ph = fj_graph_placeholder_like(c.body, name, init, 1);
            fj_Var *pv = ph ? fj_var_node((PyObject *)ph) : NULL;
            PyObject *slot = PyLong_FromSsize_t(c.slot_of[k]);
            bad = pv == NULL || slot == NULL || PyList_Append(c.carried, slot) < 0;
            Py_XDECREF(slot);
            if (!bad) {
                c.ph_of[k] = ph;
                Py_SETREF(fr->locals[k], (PyObject *)pv);
            }
            else
                Py_XDECREF(pv);
        }
        Py_DECREF(init);
        if (bad)
            goto error;
    }
    /* a for loop (not inside another one of this frame) whose exit is a plain
       return, with a return in its body: two state slots for a return there */
    Py_ssize_t nlslots = nslots;
    if (w == NULL && !symbolic && (tx->loop == NULL || tx->loop->fr != fr) &&
        plain_return(&fr->il, fr->il.v[head].target + fr->il.v[head].p.b)) {
        int has_return = 0;
        for (int k = head + 1; k < end && !has_return; k++)
            has_return = fr->il.v[k].p.op == FJ_PI_RETURN_VALUE || fr->il.v[k].p.op == FJ_PI_RETURN_CONST;
        if (has_return) {
            ctx.ret_slot = (int)nslots;
            nslots += 2;
            if (PyList_Append(c.inits, Py_False) < 0 || PyList_Append(c.inits, Py_None) < 0 ||
                (ctx.rets = PyList_New(0)) == NULL)
                goto error;
        }
    }

    /* trace one iteration, from the store of the induction variable to the
       jump back to the head */
    Py_ssize_t neffects = PyList_GET_SIZE(tx->effects), nmutated = PyList_GET_SIZE(tx->mutated);
    Py_ssize_t noverlay = PyDict_GET_SIZE(tx->global_overlay);
    fj_Var *iv = fj_var_node((PyObject *)iph);
    if (iv == NULL)
        goto error;
    if (it != NULL && it->kind == FJ_VAR_ITER && it->extra2 != NULL) {
        /* np.ndindex / np.ndenumerate: the index tuple from the flat index (and the
           element it reads), computed in the body */
        tx->body = c.body;
        PyObject *item = fj_trace_nd_item(fr, it, (PyObject *)iv);
        tx->body = prev_body;
        Py_DECREF(iv);
        if (item == NULL) {
            if (!PyErr_ExceptionMatches(fj_Unsupported))
                goto error;
            PyObject *reason = take_message();
            const char *text = reason ? PyUnicode_AsUTF8(reason) : NULL;
            r = retry(fr, phead, -1, text ? text : "np.ndindex's index");
            Py_XDECREF(reason);
            goto done;
        }
        iv = (fj_Var *)item;
    }
    if (w != NULL)
        Py_DECREF(iv); /* a while loop's count: no value of the program's */
    else
        fr->stack[fr->sp++] = (PyObject *)iv;
    ctx.outer = tx->loop;
    ctx.made0 = tx->made ? PyList_GET_SIZE(tx->made) : 0;
    int for_exits = w == NULL ? !(it != NULL && it->kind == FJ_VAR_ITER && it->extra2 != NULL) : !w->andm && !w->rot;
    if ((w != NULL && w->andm) || for_exits) {
        /* a compound test: its exits come before anything the iteration changes; a
           for loop's breaks keep what the iteration did before them */
        if (!for_exits) {
            ctx.and_hi = w->L;
            ctx.and_T = w->T;
            ctx.sp0 = fr->sp;
        }
        else {
            ctx.is_for = 1;
            ctx.pops = w == NULL;
            ctx.break_X = w ? w->T : fr->il.v[head].target + fr->il.v[head].p.b;
            ctx.slot_of = c.slot_of;
            ctx.sp0 = w ? fr->sp : fr->sp - 1; /* (a for loop's index stored: the iterator below) */
            if ((ctx.exits = PyList_New(0)) == NULL)
                goto error;
        }
        ctx.neff0 = neffects;
        ctx.nmut0 = nmutated;
        ctx.nov0 = noverlay;
        if ((ctx.entry = PyMem_Calloc((size_t)(nl ? nl : 1), sizeof(PyObject *))) == NULL) {
            PyErr_NoMemory();
            goto error;
        }
        for (int k = 0; k < nl; k++)
            ctx.entry[k] = Py_XNewRef(fr->locals[k]);
    }
    tx->loop = &ctx;
    tx->body = c.body;
    fr->loop_head = w ? (w->andm ? w->P : w->L) : head;
    fr->loop_end = end;
    fr->loop_test = w && !w->andm ? w->test : -1;
    fr->loop_tail = w && w->andm ? w->Q : -1;
    fr->loop_hole_lo = w && w->rot ? w->hlo : -1;
    fr->loop_hole_hi = w && w->rot ? w->hhi : -1;
    fr->loop_wrap = w && w->rot ? 1 : 0;
    pushed = 1;
    int retry_before = tx->loop_retry;
    int loop_pos = fj_graph_get_pos(); /* the loop's nodes come from where its capture began */
    int rb = fj_trace_run_body(fr, w ? (w->rot ? w->B : w->andm ? w->P : w->L) : head + 1);
    fj_graph_set_pos(loop_pos);
    fr->loop_head = prev_head;
    fr->loop_end = prev_end;
    fr->loop_test = prev_test;
    fr->loop_tail = prev_tail;
    fr->loop_hole_lo = prev_hlo;
    fr->loop_hole_hi = prev_hhi;
    fr->loop_wrap = prev_wrap;
    stay = fr->loop_stay; /* (a while loop's test's value, when its bottom test ended the body) */
    fr->loop_stay = NULL;
    if (w != NULL && w->andm) { /* a compound test's: its last exit, True where it goes on */
        Py_XSETREF(stay, ctx.last_exit);
        ctx.last_exit = NULL;
    }
    tx->loop = ctx.outer;
    tx->body = prev_body;
    pushed = 0;
    if (rb != 2) {
        if (rb < 0 && !PyErr_ExceptionMatches(fj_Unsupported))
            goto error; /* an internal error */
        if (rb < 0 && tx->loop_retry && !retry_before)
            goto error; /* an inner loop asked for a retry with its own policy: this one stays */
        PyObject *reason = rb < 0 ? take_message() : NULL;
        const char *text = reason ? PyUnicode_AsUTF8(reason) : NULL;
        r = retry(fr, phead, -1, text ? text : "the body does not end its iteration");
        Py_XDECREF(reason);
        goto done;
    }
    if (fr->sp != sp0) {
        r = retry(fr, phead, -1, "the body leaves values on the stack");
        goto done;
    }
    if (w != NULL && stay == NULL) {
        r = retry(fr, phead, -1, w->andm ? "no part of the loop's test is on data"
                                         : "the body goes back to the loop's start without its test (continue)");
        goto done;
    }
    if (PyList_GET_SIZE(tx->effects) != neffects || PyList_GET_SIZE(tx->mutated) != nmutated ||
        PyDict_GET_SIZE(tx->global_overlay) != noverlay) {
        r = retry(fr, phead, -1, "the body has side effects other than stores into arrays");
        goto done;
    }

    /* locals the body sets to a tuple of its values (idx of np.ndindex), not carried
       and dead after the loop: dropped (unbound after it) */
    /* (a for loop with breaks may end in its first iteration, before it sets a local) */
    int nexits = ctx.exits ? (int)PyList_GET_SIZE(ctx.exits) : 0;
    int maybe_zero = symbolic || (w != NULL && w->maybe_zero) || nexits > 0, tuples = 0;
    int ncode = FJ_CODE_NLOCALSPLUS(fr->code);
    for (int k = 0; k < nl && !tuples; k++)
        tuples = c.slot_of[k] >= 0 && fr->locals[k] != NULL && ((fj_Var *)fr->locals[k])->kind == FJ_VAR_TUPLE;
    if ((c.drop = PyMem_Calloc((size_t)(nl ? nl : 1), 1)) == NULL) {
        PyErr_NoMemory();
        goto error;
    }
    if (tuples || maybe_zero) {
        /* which locals a path after the loop reads (here and for a loop that may run
           no iteration, below) */
        if ((c.live = PyMem_Calloc((size_t)(ncode ? ncode : 1), 1)) == NULL) {
            PyErr_NoMemory();
            goto error;
        }
        if (fj_resume_liveness(fr->code, &fr->il, w ? w->T : end, c.live) < 0)
            goto error;
    }
    for (int k = 0; tuples && k < nl; k++) {
        fj_Var *v = (fj_Var *)fr->locals[k];
        c.drop[k] = c.slot_of[k] >= 0 && v != NULL && v->kind == FJ_VAR_TUPLE && !ctx.read_first[k] && k < ncode &&
                    !c.live[k];
    }
    int esc = body_value_escapes(fr, c.body, c.slot_of, c.drop);
    if (esc < 0)
        goto error;
    if (esc) {
        r = retry(fr, phead, -1, "a value the body computes is kept in a container or an object");
        goto done;
    }
    if (!symbolic && w == NULL && left * fj_graph_num_calls(c.body) <= FJ_LOOP_FUSE_BUDGET &&
        computes_arrays(c.body)) {
        /* few iterations of array operations: unrolled, the native backend fuses
           them across iterations into one pass over memory (a loop node would
           run each one through NumPy) */
        r = retry(fr, phead, -1, "a short loop of array operations, whose operations fuse when unrolled");
        goto done;
    }
    /* the state after one iteration: each written local's value, which must
       keep the kind, dtype and shape of a value the next iteration reads */
    if (ctx.ret_slot >= 0 && PyList_GET_SIZE(ctx.rets) == 0) {
        /* no return became an exit (3.12+ copy a plain return into each break): no
           return slots */
        nslots -= 2;
        if (PyList_SetSlice(c.inits, nslots, nslots + 2, NULL) < 0)
            goto error;
        ctx.ret_slot = -1;
    }
    else if (ctx.ret_slot >= 0) {
        /* a zero of the returned values' kind (a native kernel's slot has one class) */
        fj_Var *r0 = (fj_Var *)PyList_GET_ITEM(ctx.rets, 0);
        PyObject *ex = r0->kind == FJ_VAR_CONST ? r0->obj : ((fj_Node *)r0->obj)->example;
        fj_Node *rn = r0->kind == FJ_VAR_NODE ? (fj_Node *)r0->obj : NULL;
        if (rn != NULL && rn->vkind == FJ_VAL_NPSCALAR && rn->dtype != NULL && PyDataType_ELSIZE(rn->dtype) <= 32) {
            char zb[32] = {0};
            rzero = PyArray_Scalar(zb, rn->dtype, NULL);
        }
        else if ((rn == NULL || rn->vkind == FJ_VAL_PYSCALAR) && ex != NULL &&
                 (PyBool_Check(ex) || PyLong_CheckExact(ex) || PyFloat_CheckExact(ex)))
            rzero = PyBool_Check(ex) ? Py_NewRef(Py_False) : PyLong_CheckExact(ex) ? PyLong_FromLong(0)
                                                                                  : PyFloat_FromDouble(0.0);
        else
            rzero = Py_NewRef(Py_None); /* (an array: the eager loop's) */
        if (rzero == NULL)
            goto error;
        Py_SETREF(PyList_GET_ITEM(c.inits, ctx.ret_slot + 1), Py_NewRef(rzero));
    }
    if ((c.outputs = PyTuple_New(nslots + (w ? 1 : 0))) == NULL)
        goto error;
    if (w != NULL) {
        /* the test's value after the iteration: the body's last output */
        fj_Var *sv = (fj_Var *)stay;
        PyObject *so = NULL;
        if (sv->kind == FJ_VAR_NODE) {
            fj_Node *o = fj_graph_lift(c.body, (fj_Node *)sv->obj);
            if (o == NULL)
                goto error;
            so = Py_NewRef((PyObject *)o);
        }
        else if (sv->kind == FJ_VAR_CONST)
            so = Py_NewRef(sv->obj);
        else {
            r = retry(fr, phead, -1, "the loop's test is neither an array nor a number");
            goto done;
        }
        PyTuple_SET_ITEM(c.outputs, nslots, so);
    }
    for (int k = 0; k < nl; k++) {
        if (c.slot_of[k] < 0)
            continue;
        fj_Var *v = (fj_Var *)fr->locals[k];
        PyObject *out;
        if (c.drop[k]) {
            out = Py_NewRef(Py_None);
        }
        else if (v == NULL) {
            if (c.ph_of[k] != NULL) {
                r = retry(fr, phead, -1, "the body unbinds a local");
                goto done;
            }
            out = Py_NewRef(Py_None);
        }
        else if (v->kind == FJ_VAR_NODE) {
            fj_Node *o = fj_graph_lift(c.body, (fj_Node *)v->obj);
            if (o == NULL)
                goto error;
            out = Py_NewRef((PyObject *)o);
        }
        else if (v->kind == FJ_VAR_CONST) {
            out = Py_NewRef(v->obj);
        }
        else {
            r = retry(fr, phead, -1, "a local the body sets is neither an array nor a number");
            goto done;
        }
        PyTuple_SET_ITEM(c.outputs, c.slot_of[k], out);
        if (ctx.read_first[k]) {
            if (c.ph_of[k] == NULL) {
                r = retry(fr, phead, -1, "a value the body carries to the next iteration is neither an "
                                        "array nor a number");
                goto done;
            }
            int same = same_meta(c.ph_of[k], out);
            if (!same && symbolic && ctx.outer != NULL) {
                /* no first iteration of a symbolic range can be unrolled: the enclosing
                   loop unrolls its first iteration instead, where this loop's bounds are
                   constants (it peels there), so the value has its kind after it */
                int oph = ctx.outer->phead;
                long opeel = policy_peel(tx, ctx.outer->fr, oph);
                if (opeel == -2)
                    goto error;
                r = retry(ctx.outer->fr, oph, !(oph & FJ_SYMBOLIC_HEAD) && opeel >= 0 && opeel < 2 ? opeel + 1 : -1,
                          "a value a loop inside it carries changes its type, dtype or shape");
                goto done;
            }
            if (!same) {
                /* s = 0; s += a[i]: an int before the loop, a NumPy scalar after
                   one iteration; unrolled once, the loop carries the same kind */
                r = retry(fr, phead, w ? (peel < 1 ? 1 : -1) : !symbolic && peel < 2 ? peel + 1 : -1,
                          "a value the body carries changes its type, dtype or shape");
                goto done;
            }
        }
    }
    if (ctx.ret_slot >= 0) { /* (the return's slots: an iteration sets neither) */
        PyTuple_SET_ITEM(c.outputs, ctx.ret_slot, Py_NewRef(Py_False));
        PyTuple_SET_ITEM(c.outputs, ctx.ret_slot + 1, rzero);
        rzero = NULL;
    }
    for (int e = 0; e < nexits; e++) {
        /* a break's values: of the kind, dtype and shape the iteration leaves in
           their locals (the state after the loop is one of them) */
        PyObject *ex = PyList_GET_ITEM(ctx.exits, e), *slots = PyTuple_GET_ITEM(ex, 0), *vals = PyTuple_GET_ITEM(ex, 1);
        const char *bad = NULL;
        for (Py_ssize_t k = 0; k < PyTuple_GET_SIZE(slots) && bad == NULL; k++) {
            if (PyLong_AsSsize_t(PyTuple_GET_ITEM(slots, k)) >= nlslots)
                continue; /* (a return's: checked at the return) */
            PyObject *out = PyTuple_GET_ITEM(c.outputs, PyLong_AsSsize_t(PyTuple_GET_ITEM(slots, k)));
            PyObject *val = PyTuple_GET_ITEM(vals, k);
            if (out == val)
                continue;
            if (!fj_Node_Check(out))
                bad = out == Py_None ? "a break sets a local the iteration leaves unbound"
                                     : "a break sets a local the iteration sets to a constant";
            else {
                int same = same_meta((fj_Node *)out, val);
                if (same < 0)
                    goto error;
                if (!same)
                    bad = "a break leaves a local of another type, dtype or shape than the iteration";
            }
        }
        if (bad != NULL) {
            r = retry(fr, phead, -1, bad);
            goto done;
        }
    }
    for (int k = 0; maybe_zero && k < nl; k++) {
        /* a loop that may end before its first iteration sets a local (none runs, or
           one breaks first) leaves the value before it: of the kind, dtype and shape
           of the iteration's (unbound before: below) */
        int s = c.slot_of[k];
        if (s < 0 || c.drop[k] || PyList_GET_ITEM(c.saved, k) == Py_None ||
            (!symbolic && !(w != NULL && w->maybe_zero) && every_exit_sets(ctx.exits, s, ctx.ret_slot)))
            continue;
        PyObject *out = PyTuple_GET_ITEM(c.outputs, s), *init = PyList_GET_ITEM(c.inits, s);
        int same = out == init;
        if (!same && fj_Node_Check(out) && init != Py_None && (same = same_meta((fj_Node *)out, init)) < 0)
            goto error;
        if (!same) {
            r = retry(fr, phead, -1, "it may end before an iteration sets a local, whose value before it is of "
                                     "another type, dtype or shape");
            goto done;
        }
    }
    if (maybe_zero) {
        /* a local the body sets that is unbound before the loop is unbound after it
           when the loop runs no iteration: the trace leaves it unbound, which is
           exact only when no path after the loop reads it */
        int read_after = 0;
        for (int k = 0; k < nl && k < ncode && !read_after; k++)
            read_after = c.slot_of[k] >= 0 && PyList_GET_ITEM(c.saved, k) == Py_None && c.live[k] &&
                         !(!symbolic && !(w != NULL && w->maybe_zero) && every_exit_sets(ctx.exits, c.slot_of[k], ctx.ret_slot));
        if (read_after) {
            r = retry(fr, phead, -1, "a local it sets is unbound before it and read after it, and it may run "
                                     "no iteration");
            goto done;
        }
    }
    if (fj_graph_output(c.body, c.outputs) < 0)
        goto error;

    /* the loop node, in the enclosing graph */
    if ((c.lifted = fj_graph_lifted(c.body)) == NULL)
        goto error;
    fj_graph_detach(c.body);
    PyObject *carried_t = PyList_AsTuple(c.carried);
    c.runner = carried_t == NULL ? NULL
               : w ? fj_loop_new_while(c.body, carried_t, nslots, PyList_GET_SIZE(c.lifted), w->neg0, w->negs)
                   : fj_loop_new(c.body, carried_t, nslots, PyList_GET_SIZE(c.lifted));
    Py_XDECREF(carried_t);
    if (c.runner == NULL)
        goto error;
    Py_ssize_t nargs = 3 + nslots + PyList_GET_SIZE(c.lifted) + (w ? 1 : 0);
    if ((c.args = PyTuple_New(nargs)) == NULL)
        goto error;
    if (w != NULL) { /* the test's first value (a compound test's: its exits decide) */
        PyObject *c0 = w->andm ? Py_NewRef(Py_True) : init_value(enclosing, w->c0);
        if (c0 == NULL)
            goto error;
        PyTuple_SET_ITEM(c.args, nargs - 1, c0);
    }
    PyTuple_SET_ITEM(c.args, 0, Py_NewRef(c.start));
    PyTuple_SET_ITEM(c.args, 1, Py_NewRef(c.stop));
    PyTuple_SET_ITEM(c.args, 2, Py_NewRef(c.step));
    for (Py_ssize_t k = 0; k < nslots; k++)
        PyTuple_SET_ITEM(c.args, 3 + k, Py_NewRef(PyList_GET_ITEM(c.inits, k)));
    for (Py_ssize_t k = 0; k < PyList_GET_SIZE(c.lifted); k++)
        PyTuple_SET_ITEM(c.args, 3 + nslots + k, Py_NewRef(PyList_GET_ITEM(c.lifted, k)));
    PyObject *label = PyUnicode_FromString("framejit.loop");
    PyObject *stem = PyUnicode_FromString("loop");
    fj_Node *ln = label && stem ? fj_graph_raw_call(enclosing, &fj_loop_row, c.runner, label, stem, c.args, NULL,
                                                    FJ_VAL_TUPLE)
                                : NULL;
    Py_XDECREF(label);
    if (ln == NULL) {
        Py_XDECREF(stem);
        goto error;
    }
    Py_SETREF(stem, PyUnicode_FromString("loop_item"));
    PyObject *item_label = stem ? PyUnicode_FromString("operator.getitem") : NULL;
    PyObject *opmod = item_label ? PyImport_ImportModule("operator") : NULL;
    PyObject *getitem = opmod ? PyObject_GetAttrString(opmod, "getitem") : NULL;
    Py_XDECREF(opmod);
    if (getitem == NULL) {
        Py_XDECREF(stem);
        Py_XDECREF(item_label);
        goto error;
    }
    /* the locals after the loop: its final state */
    for (int k = 0; k < nl; k++) {
        if (c.slot_of[k] < 0)
            continue;
        PyObject *out = PyTuple_GET_ITEM(c.outputs, c.slot_of[k]);
        PyObject *nv;
        /* (a local every exit sets is bound after a loop that runs an iteration) */
        int xslot = !symbolic && !(w != NULL && w->maybe_zero) && every_exit_sets(ctx.exits, c.slot_of[k], ctx.ret_slot);
        if (c.drop[k] || (maybe_zero && PyList_GET_ITEM(c.saved, k) == Py_None && !xslot)) {
            /* unbound before a loop that may run no iteration: unbound after it
               as far as the trace knows (a read is a break) */
            Py_CLEAR(fr->locals[k]);
            fr->touched[k] = 1;
            fj_loop_note_store(fr, k);
            continue;
        }
        if (fj_Node_Check(out)) {
            PyObject *iargs = Py_BuildValue("(On)", (PyObject *)ln, (Py_ssize_t)c.slot_of[k]);
            fj_Node *item = iargs ? fj_graph_raw_call(enclosing, &fj_loop_item_row, getitem, item_label, stem,
                                                      iargs, (fj_Node *)out, 0)
                                  : NULL;
            Py_XDECREF(iargs);
            if (item != NULL)
                item->variant = ln->variant || ((fj_Node *)out)->vkind == FJ_VAL_PYSCALAR;
            nv = item ? (PyObject *)fj_var_node((PyObject *)item) : NULL;
        }
        else if (out == Py_None && fr->locals[k] == NULL) {
            continue;
        }

        else
            nv = (PyObject *)fj_var_const(out);
        if (nv == NULL) {
            Py_DECREF(getitem);
            Py_DECREF(stem);
            Py_DECREF(item_label);
            goto error;
        }
        Py_XSETREF(fr->locals[k], nv);
        fr->touched[k] = 1;
        fj_loop_note_store(fr, k);
    }
    if (ctx.rets != NULL && PyList_GET_SIZE(ctx.rets) > 0) {
        /* a return in the loop: the return at its exit picks (fj_trace_loop_return) */
        PyObject *items[2] = {NULL, NULL};
        for (int h = 0; h < 2; h++) {
            fj_Var *r0 = (fj_Var *)PyList_GET_ITEM(ctx.rets, 0);
            /* (its metadata only: a node of the body, or of the graph around it) */
            fj_Node *like = h == 1 && r0->kind == FJ_VAR_NODE ? (fj_Node *)r0->obj : NULL;
            PyObject *iargs = Py_BuildValue("(On)", (PyObject *)ln, (Py_ssize_t)(ctx.ret_slot + h));
            fj_Node *item = iargs ? fj_graph_raw_call(enclosing, &fj_loop_item_row, getitem, item_label, stem, iargs,
                                                      like, FJ_VAL_PYSCALAR)
                                  : NULL;
            Py_XDECREF(iargs);
            if (item != NULL) {
                item->variant = 1;
                if (like == NULL)
                    Py_XSETREF(item->example, Py_NewRef(h == 0 ? Py_True : r0->obj));
            }
            items[h] = item ? (PyObject *)fj_var_node((PyObject *)item) : NULL;
        }
        PyObject *pend = items[0] && items[1] ? Py_BuildValue("(OOOi)", items[0], items[1], ctx.rets, phead) : NULL;
        Py_XDECREF(items[0]);
        Py_XDECREF(items[1]);
        if (pend == NULL) {
            Py_DECREF(getitem);
            Py_DECREF(stem);
            Py_DECREF(item_label);
            goto error;
        }
        Py_XSETREF(fr->loop_ret, pend);
    }
    Py_DECREF(getitem);
    Py_DECREF(stem);
    Py_DECREF(item_label);
    /* the iterator is exhausted: FOR_ITER takes the loop's exit */
    if (symbolic || w != NULL) {
        /* (FOR_ITER pops it) */
    } else if (it->obj != NULL && PyRange_Check(it->obj)) {
        Py_ssize_t len = PyObject_Length(it->obj);
        if (len < 0)
            goto error;
        it->pos = len;
    }
    else
        it->pos = PyList_GET_SIZE(it->items);
    r = 1;
    goto done;
error:
    r = -1;
done:
    if (pushed) {
        fr->loop_head = prev_head;
        fr->loop_end = prev_end;
        fr->loop_test = prev_test;
        fr->loop_hole_lo = prev_hlo;
        fr->loop_hole_hi = prev_hhi;
        fr->loop_wrap = prev_wrap;
        fr->loop_tail = prev_tail;
        tx->loop = ctx.outer;
        tx->body = prev_body;
    }
    if (ctx.entry != NULL) {
        for (int k = 0; k < nl; k++)
            Py_XDECREF(ctx.entry[k]);
        PyMem_Free(ctx.entry);
    }
    Py_XDECREF(ctx.last_exit);
    Py_XDECREF(ctx.exits);
    Py_XDECREF(ctx.rets);
    Py_XDECREF(rzero);
    Py_XDECREF(stay);
    capture_clear(&c);
    return r;
}

int fj_trace_range_pin(fj_TFrame *fr)
{
    fj_Var *rv = (fj_Var *)fr->stack[fr->sp - 1];
    PyObject *b[3] = {NULL, NULL, NULL};
    for (int k = 0; k < 3; k++) {
        fj_Var *v = (fj_Var *)PyTuple_GET_ITEM(rv->extra, k);
        if (v->kind == FJ_VAR_NODE && ((fj_Node *)v->obj)->variant)
            return fj_unsupported("a loop over range() whose bounds change with each iteration of an "
                                  "enclosing loop is traced only as a captured loop");
        /* a symbolic int: pinned (its guards make it a constant), its value */
        if (v->kind == FJ_VAR_NODE && fj_trace_specialize(fr->tx, "the bounds of a range() loop that is "
                                                                  "not captured (it is unrolled)") < 0)
            return -1;
        if ((b[k] = fj_var_as_const((PyObject *)v)) == NULL)
            return PyErr_Occurred() ? -1 : fj_unsupported("range() bounds that are not known");
    }
    /* the constant range's own (lazy) iterator, as GET_ITER makes it */
    PyObject *range = PyObject_CallFunctionObjArgs((PyObject *)&PyRange_Type, b[0], b[1], b[2], NULL);
    fj_Var *rc = range ? fj_var_take(FJ_VAR_CONST, range) : NULL;
    PyObject *it = rc ? fj_trace_make_iter(fr, (PyObject *)rc) : NULL;
    Py_XDECREF(rc);
    if (it == NULL)
        return -1;
    Py_SETREF(fr->stack[fr->sp - 1], it); /* the range itself stays what it was */
    return 0;
}

/*
** While loops.  CPython 3.11 to 3.13 compile `while test: body` as
**     test; jump-if-not L_exit;  L: body; test; jump-if L (3.11: one backward
**     conditional jump) | jump-if-not L_exit; JUMP_BACKWARD L (3.12+);  L_exit:
** so the loop is the body from L to its bottom test, which decides whether it
** goes on.  A conditional jump is a while loop's test when it is the top test
** (the next instruction is L, and the instruction before its target jumps back
** to L, after one bottom test) or the bottom test itself (3.12+: followed by the
** JUMP_BACKWARD, its target right after; 3.11: the backward jump).  `while
** True: A; if t: break; B` has no top test: its test goes on to a jump back
** (after B) and leaves to the code after it (3.12+ puts the exit's code there,
** 3.11 a jump forward); with B empty the body is A, else the loop is rotated:
** its body is B then A, traced from B, through the jump back, to the test
** (fr->loop_wrap), the exit's code between them no part of it.  The loop node
** runs `if test0: do body while test` (loop.c, fj_loop_new_while).
**
** The capture happens where the test's value is a graph value (data: it would
** be a break otherwise), or after the body ran unrolled loop_unroll_limit
** times with constant tests (a long loop over Python numbers).  Compound tests
** (`while a and b`) are and_shape's (below).
*/
/* The first jump back to before 'j' from instruction 't' on (none past a
   return), or -1. */
static int back_jump_from(fj_InstrList *il, int t, int j)
{
    for (int k = t; k < il->n; k++) {
        if (il->v[k].p.op == FJ_PI_JUMP && il->v[k].target <= j)
            return k;
        if (il->v[k].p.op == FJ_PI_RETURN_VALUE || il->v[k].p.op == FJ_PI_RETURN_CONST)
            return -1;
    }
    return -1;
}

static int while_shape_as(fj_TFrame *fr, int j, WhileInfo *w, int no_top);

/* A loop's shape at conditional jump j: a while loop's test (top or bottom),
   else the break of a `while True` loop */
static int while_shape(fj_TFrame *fr, int j, WhileInfo *w)
{
    return while_shape_as(fr, j, w, 0) || while_shape_as(fr, j, w, 1);
}

static int while_shape_as(fj_TFrame *fr, int j, WhileInfo *w, int no_top)
{
    fj_InstrList *il = &fr->il;
    fj_Instr *in = &il->v[j];
    if (in->p.op != FJ_PI_POP_JUMP_IF || (in->p.a != FJ_IF_TRUE && in->p.a != FJ_IF_FALSE))
        return 0;
    int t = in->target, k;
    memset(w, 0, sizeof *w);
    if (no_top) {
        if (t <= j || t >= il->n || (k = back_jump_from(il, t, j)) < 0)
            return 0;
        /* `while True: ... if t: break`: the jump goes on (through B, the code after
           the break, when the break is not at the body's end) to a jump back to L;
           the exit follows the test (3.12+: inline), or a jump forward there
           (3.11).  No top test: the control flow alone makes the loop (the body's
           trace must reach this test without leaving [L, T), or, rotated, the
           region from L to the jump back without the exit's code) */
        w->L = il->v[k].target;
        w->T = j + 1 < il->n && il->v[j + 1].p.op == FJ_PI_JUMP && il->v[j + 1].target > j + 1 ? il->v[j + 1].target
                                                                                            : j + 1;
        w->test = j;
        w->at_top = 0;
        if (k > t) {
            w->rot = 1;
            w->B = t;
            w->K = k;
            w->hlo = j + 1;
            w->hhi = t;
            if (w->T > j + 1 && w->T <= k) /* (3.11: the exit after the jump back) */
                return 0;
        }
    }
    else if (t <= j) {
        /* 3.11's bottom test: jump back to L while the test holds (or fails) */
        w->L = t;
        w->T = j + 1;
        w->test = j;
        w->at_top = 0;
    }
    else if (j + 2 == t && j + 1 < il->n && il->v[j + 1].p.op == FJ_PI_JUMP && il->v[j + 1].target <= j) {
        /* 3.12+: the bottom test, then the jump back */
        w->L = il->v[j + 1].target;
        w->T = t;
        w->test = j;
        w->at_top = 0;
    }
    else {
        /* a top test: the body follows; its end jumps back to it */
        if (t - 1 <= j + 1 || t > il->n)
            return 0;
        fj_Instr *back = &il->v[t - 1];
        w->L = j + 1;
        w->T = t;
        w->at_top = 1;
        if (back->p.op == FJ_PI_JUMP && back->target == w->L && t - 2 > j &&
            il->v[t - 2].p.op == FJ_PI_POP_JUMP_IF && il->v[t - 2].target == t)
            w->test = t - 2;
        else if (back->p.op == FJ_PI_POP_JUMP_IF && back->target == w->L)
            w->test = t - 1;
        else
            return 0;
        if (il->v[w->test].p.a != FJ_IF_TRUE && il->v[w->test].p.a != FJ_IF_FALSE)
            return 0;
    }
    if (w->L < 1 || w->L >= il->n || w->T > il->n || w->L > w->test || il->v[w->L].p.op == FJ_PI_FOR_ITER)
        return 0;
    /* the top test right before the body, leaving to the same exit (a jump back
       from `if t: continue` is no loop's end) */
    fj_Instr *top = &il->v[w->L - 1];
    if (!no_top &&
        (top->p.op != FJ_PI_POP_JUMP_IF || top->target != w->T || (top->p.a != FJ_IF_TRUE && top->p.a != FJ_IF_FALSE)))
        return 0;
    /* polarities: a jump to the exit leaves when its test's truth is the jump's;
       a jump back goes on when it is */
    fj_Instr *b = &il->v[w->test];
    w->negs = b->target == w->T ? b->p.a == FJ_IF_TRUE : b->p.a != FJ_IF_TRUE;
    w->neg0 = in->target == w->T ? in->p.a == FJ_IF_TRUE : in->p.a != FJ_IF_TRUE;
    return 1;
}

/*
** Compound tests.  `while a and b: body` has its test twice: at the top
** [P, L) and at the bottom [Q, ..] (3.11: its last jump goes back to L when
** the test holds; 3.12+: to T when it fails, then a jump back), each part
** but the last a jump to the exit T when it fails.  Both copies come from
** the same expression: the same pseudo-instructions at the same source
** positions, so P and Q are found by matching them backwards from their
** last jumps, and the top copy is checked to be a whole test (its stack
** back at the start's depth after each jump).  Such a loop is captured as
** `while True: if not a: break; if not b: break; body`: an iteration is
** traced from P to Q (the bottom copy is the top one again), the parts on
** data become loop_exit nodes before anything the iteration stores or
** sets.  `or` (a jump into the body) is not taken.
*/
/* x and y at one known source position (the same expression's code). */
static int same_pos(const fj_Instr *x, const fj_Instr *y)
{
    return x->line >= 0 && x->col >= 0 && x->line == y->line && x->end_line == y->end_line && x->col == y->col &&
           x->end_col == y->end_col;
}

static int same_instr(const fj_InstrList *il, int a, int b, int T)
{
    const fj_Instr *x = &il->v[a], *y = &il->v[b];
    if (!same_pos(x, y) || x->p.op != y->p.op || x->p.a != y->p.a || x->p.b != y->p.b)
        return 0;
    if (x->target >= 0 || y->target >= 0)
        return x->p.op == FJ_PI_POP_JUMP_IF && x->target == T && y->target == T;
    return 1;
}

static int and_shape(fj_TFrame *fr, int j, WhileInfo *w)
{
    fj_InstrList *il = &fr->il;
    fj_Instr *in = &il->v[j];
    int T, tb, L, back = 0;
    if (in->p.op != FJ_PI_POP_JUMP_IF || (in->p.a != FJ_IF_TRUE && in->p.a != FJ_IF_FALSE) || in->target < 0)
        return 0;
    if (in->target > j) {
        T = in->target;
        if (T < 3 || T > il->n)
            return 0;
        fj_Instr *b = &il->v[T - 1];
        if (b->p.op == FJ_PI_POP_JUMP_IF && b->target >= 0 && b->target < T - 1) {
            tb = T - 1; /* 3.11 */
            back = 1;
        }
        else if (b->p.op == FJ_PI_JUMP && b->target >= 0 && b->target < T - 1 &&
                 il->v[T - 2].p.op == FJ_PI_POP_JUMP_IF && il->v[T - 2].target == T)
            tb = T - 2; /* 3.12+ */
        else
            return 0;
        L = b->target;
    }
    else {
        T = j + 1; /* 3.11: the bottom copy's last jump, back to L */
        tb = j;
        L = in->target;
        back = 1;
    }
    if (L < 2 || L >= tb)
        return 0;
    fj_Instr *tf = &il->v[L - 1], *bf = &il->v[tb];
    if (tf->p.op != FJ_PI_POP_JUMP_IF || tf->target != T || (tf->p.a != FJ_IF_TRUE && tf->p.a != FJ_IF_FALSE) ||
        bf->p.op != FJ_PI_POP_JUMP_IF || !same_pos(bf, tf))
        return 0;
    if (back ? bf->target != L || bf->p.a == tf->p.a : bf->target != T || bf->p.a != tf->p.a)
        return 0;
    int len = 1;
    while (L - 1 - len >= 1 && tb - len >= L && same_instr(il, L - 1 - len, tb - len, T))
        len++;
    int P = L - len, Q = tb + 1 - len, parts = 0, d = 0;
    if (il->v[P - 1].target == T || !((j >= P && j < L) || (j >= Q && j <= tb)))
        return 0;
    /* the top copy: a whole test (at each jump the stack is back where it began),
       its only jumps its parts' to the exit */
    for (int k = P; k < L; k++) {
        fj_Instr *x = &il->v[k];
        int e = fj_opcode_stack_effect(x->op, x->arg, 0);
        if (e == PY_INVALID_STACK_EFFECT) {
            PyErr_Clear();
            return 0;
        }
        if (x->target >= 0 && (x->p.op != FJ_PI_POP_JUMP_IF || x->target != T))
            return 0;
        if ((d += e) < 0 || (x->target >= 0 && d != 0))
            return 0;
        parts += x->target >= 0;
    }
    if (parts < 2)
        return 0;
    memset(w, 0, sizeof *w);
    w->andm = 1;
    w->P = P;
    w->Q = Q;
    w->L = L;
    w->T = T;
    w->test = tb;
    w->at_top = j < L;
    w->neg0 = w->negs = 0; /* (the loop goes on while the exits let it: its first value and
                               last output are True) */
    return 1;
}

/* 1 when the constant truth 't' of a compound test's bottom jump j lets the
   loop go on. */
static int and_goes_on(fj_TFrame *fr, int j, int t)
{
    fj_Instr *in = &fr->il.v[j];
    int jumps = t == (in->p.a == FJ_IF_TRUE);
    return in->target < j ? jumps : !jumps;
}

/*
** A for loop's `break` on data (docs/loops.md, "Breaks").  `if t: break` in
** the body: one side of the jump is a break block, straight-line moves into
** locals (`k = i`, `found = True`), then the iterator popped and the loop's
** exit (3.11: a jump to it; 3.12+: a jump, or the exit's code copied inline
** up to its return).  The trace takes the other side; the break is a loop_exit
** node whose state is the iteration's locals where it breaks.
*/
#define FJ_BRK_MOVES 8

typedef struct {
    int n;
    int local[FJ_BRK_MOVES];
    PyObject *val[FJ_BRK_MOVES]; /* strong Vars */
    PyObject *ret;               /* strong Var: a return's value; NULL for a break */
} BreakMoves;

static void moves_clear(BreakMoves *m)
{
    for (int k = 0; k < m->n; k++)
        Py_CLEAR(m->val[k]);
    m->n = 0;
    Py_CLEAR(m->ret);
}

/* 1 when the code at x is a plain return: of a constant or of a local. */
static int plain_return(const fj_InstrList *il, int x)
{
    while (x < il->n && il->v[x].p.op == FJ_PI_NOP)
        x++;
    if (x >= il->n)
        return 0;
    int op = il->v[x].p.op;
    if (op == FJ_PI_RETURN_CONST)
        return 1;
    return (op == FJ_PI_LOAD_CONST || op == FJ_PI_LOAD_FAST) && x + 1 < il->n &&
           il->v[x + 1].p.op == FJ_PI_RETURN_VALUE;
}

/* The local k's Var after the moves so far (borrowed; NULL when unbound). */
static PyObject *moved(fj_TFrame *fr, const BreakMoves *m, int k)
{
    for (int j = m->n - 1; j >= 0; j--)
        if (m->local[j] == k)
            return m->val[j];
    return fr->locals[k];
}

/* A cursor over instructions with 3.13's superinstructions taken apart
   (LOAD_FAST_LOAD_FAST is two loads) and NOPs skipped. */
typedef struct {
    int at, half;
} Unit;

/* The next unit's kind and operand (*src its instruction), 0 at the end. */
static int next_unit(const fj_InstrList *il, Unit *u, int *op, int *a, const fj_Instr **src)
{
    while (u->at < il->n && il->v[u->at].p.op == FJ_PI_NOP)
        u->at++;
    if (u->at >= il->n)
        return 0;
    const fj_Instr *in = &il->v[u->at];
    int pop = in->p.op, first = u->half == 0;
    *src = in;
    *op = pop;
    *a = in->p.a;
    if (pop == FJ_PI_LOAD_FAST_LOAD_FAST || pop == FJ_PI_STORE_FAST_LOAD_FAST || pop == FJ_PI_STORE_FAST_STORE_FAST) {
        *op = first ? (pop == FJ_PI_LOAD_FAST_LOAD_FAST ? FJ_PI_LOAD_FAST : FJ_PI_STORE_FAST)
                    : (pop == FJ_PI_STORE_FAST_STORE_FAST ? FJ_PI_STORE_FAST : FJ_PI_LOAD_FAST);
        *a = first ? in->p.a : in->p.b;
        if (first) {
            u->half = 1;
            return 1;
        }
    }
    u->half = 0;
    u->at++;
    return 1;
}

/* Instructions from a and from b: the same code up to a return (a copy of an
   exit block: no jumps, the same positions where an instruction can raise).
   3.12+ copy a small exit block into a break; 3.13 may pair its loads where
   the original, after a loop that may run no iteration, cannot. */
static int same_code_to_return(const fj_InstrList *il, int a, int b)
{
    Unit ua = {a, 0}, ub = {b, 0};
    for (int steps = 0; steps < 64; steps++) {
        int xo, xa, yo, ya;
        const fj_Instr *x, *y;
        if (!next_unit(il, &ua, &xo, &xa, &x) || !next_unit(il, &ub, &yo, &ya, &y))
            return 0;
        if (xo != yo || xa != ya || (xo == x->p.op && yo == y->p.op && x->p.b != y->p.b) || x->target >= 0 ||
            y->target >= 0 || x->exc_target != y->exc_target || (xo == FJ_PI_OTHER && (x->op != y->op || x->arg != y->arg)))
            return 0;
        /* (a copy of an exit without a line takes the jump's; a constant, a local
           that is bound (a break follows its store) and a return cannot raise) */
        int quiet = xo == FJ_PI_LOAD_CONST || xo == FJ_PI_LOAD_FAST || xo == FJ_PI_RETURN_CONST ||
                    xo == FJ_PI_RETURN_VALUE;
        if (!quiet && (x->line != y->line || x->end_line != y->end_line || x->col != y->col || x->end_col != y->end_col))
            return 0;
        if (xo == FJ_PI_RETURN_VALUE || xo == FJ_PI_RETURN_CONST)
            return 1;
    }
    return 0;
}

/* 1 when the code at b is a break block of loop c (its moves in *m, strong), 0
   when not, -1 on error. */
static int break_block(fj_TFrame *fr, fj_LoopCtx *c, int b, BreakMoves *m)
{
    const fj_InstrList *il = &fr->il;
    PyObject *stk[4];
    int sp = 0, r = 0;
    m->n = 0;
    m->ret = NULL;
    for (int j = b; j < il->n && j < b + 32 && r == 0; j++) {
        const fj_Instr *in = &il->v[j];
        int op = in->p.op, loads = 0, ld[2] = {0, 0}, stores = 0, st[2] = {0, 0};
        PyObject *cst = NULL;
        if (op == FJ_PI_NOP)
            continue;
        if (!c->pops && sp == 0 &&
            ((op == FJ_PI_JUMP && in->target == c->break_X) || same_code_to_return(il, j, c->break_X))) {
            r = 1; /* a while loop's exit, or its copy */
            break;
        }
        switch (op) {
        case FJ_PI_LOAD_FAST:
            loads = 1, ld[0] = in->p.a;
            break;
        case FJ_PI_LOAD_FAST_LOAD_FAST:
            loads = 2, ld[0] = in->p.a, ld[1] = in->p.b;
            break;
        case FJ_PI_LOAD_CONST:
            cst = PyTuple_GetItem(fr->code->co_consts, in->p.a);
            if (cst == NULL)
                r = -1;
            break;
        case FJ_PI_STORE_FAST:
            stores = 1, st[0] = in->p.a;
            break;
        case FJ_PI_STORE_FAST_LOAD_FAST:
            stores = 1, st[0] = in->p.a, loads = 1, ld[0] = in->p.b;
            break;
        case FJ_PI_STORE_FAST_STORE_FAST:
            stores = 2, st[0] = in->p.a, st[1] = in->p.b;
            break;
        case FJ_PI_SWAP:
            /* `return v` in a for loop: v, SWAP 2, the iterator popped, the return */
            if (c->ret_slot < 0 || sp != 1 || in->p.a != 2 || j + 2 >= il->n || il->v[j + 1].p.op != FJ_PI_POP_TOP ||
                il->v[j + 2].p.op != FJ_PI_RETURN_VALUE)
                goto no;
            m->ret = stk[--sp];
            r = 1;
            continue;
        case FJ_PI_POP_TOP: {
            /* a for loop's iterator popped, then the loop's exit or its copy (or
               `return c`: a constant returned) */
            if (sp != 0 || !c->pops)
                goto no;
            int q = j + 1;
            while (q < il->n && il->v[q].p.op == FJ_PI_NOP)
                q++;
            if ((q < il->n && il->v[q].p.op == FJ_PI_JUMP && il->v[q].target == c->break_X) ||
                same_code_to_return(il, q, c->break_X)) {
                r = 1; /* a break (a return of what the exit returns is one too) */
                continue;
            }
            int rq = c->ret_slot < 0 || q >= il->n ? -1
                     : il->v[q].p.op == FJ_PI_RETURN_CONST ? q
                     : il->v[q].p.op == FJ_PI_LOAD_CONST && q + 1 < il->n && il->v[q + 1].p.op == FJ_PI_RETURN_VALUE
                         ? q
                         : -1;
            if (rq >= 0) {
                PyObject *rc = PyTuple_GetItem(fr->code->co_consts, il->v[rq].p.a);
                if (rc == NULL || (m->ret = (PyObject *)fj_var_const(rc)) == NULL)
                    goto no_or_error;
                r = 1;
                continue;
            }
            goto no;
        }
        default:
            goto no;
        }
        if (r < 0)
            break;
        if (cst != NULL) {
            if (sp == 4 || (stk[sp] = (PyObject *)fj_var_const(cst)) == NULL)
                goto no_or_error;
            sp++;
        }
        for (int k = 0; k < stores; k++) {
            if (sp == 0 || m->n == FJ_BRK_MOVES)
                goto no;
            m->local[m->n] = st[k];
            m->val[m->n++] = stk[--sp];
        }
        for (int k = 0; k < loads; k++) {
            PyObject *v = ld[k] < fr->nlocals ? moved(fr, m, ld[k]) : NULL;
            if (v == NULL || sp == 4)
                goto no; /* (unbound, or an argument not read yet: not followed) */
            stk[sp++] = Py_NewRef(v);
        }
    }
    while (sp > 0)
        Py_DECREF(stk[--sp]);
    if (r <= 0)
        moves_clear(m);
    return r;
no_or_error:
    r = PyErr_Occurred() ? -1 : 0;
    goto out;
no:
    r = 0;
out:
    while (sp > 0)
        Py_DECREF(stk[--sp]);
    moves_clear(m);
    return r;
}

static int for_exit(fj_TFrame *fr, PyObject *v, int leave, const BreakMoves *m);

/* fj_trace_loop_break, and with v NULL only whether jump i is a break. */
static int loop_break(fj_TFrame *fr, int i, int want, PyObject *v, int *stay)
{
    fj_LoopCtx *c = fr->tx->loop;
    if (c == NULL || c->fr != fr || !c->is_for || fr->loop_head < 0)
        return 0;
    const fj_Instr *in = &fr->il.v[i];
    if (in->p.op != FJ_PI_POP_JUMP_IF || (in->p.a != FJ_IF_TRUE && in->p.a != FJ_IF_FALSE) || in->target <= i)
        return 0;
    for (int side = 0; side < 2; side++) {
        BreakMoves m;
        int r = break_block(fr, c, side ? in->target : i + 1, &m);
        if (r <= 0) {
            if (r < 0)
                return -1;
            continue;
        }
        /* not in a loop inside the body (an inner while loop's test whose exit is
           followed by a break: the inner loop's, unrolled here, would never end) */
        for (int j = i + 1; j < fr->loop_end && j < fr->il.n; j++)
            if (fj_opcode_jump_dir(fr->il.v[j].op) < 0 && fr->il.v[j].target <= i &&
                fr->il.v[j].target > fr->loop_head) {
                moves_clear(&m);
                return 0;
            }
        if (v != NULL) {
            r = for_exit(fr, v, side ? want : !want, &m);
            *stay = side ? i + 1 : in->target;
        }
        moves_clear(&m);
        return r < 0 ? -1 : 1;
    }
    return 0;
}

int fj_trace_loop_break(fj_TFrame *fr, int i, int want, PyObject *v, int *stay)
{
    return loop_break(fr, i, want, v, stay);
}

int fj_trace_loop_is_break(fj_TFrame *fr, int i)
{
    if (i < 0 || i >= fr->il.n || fr->il.v[i].p.op != FJ_PI_POP_JUMP_IF)
        return 0;
    int r = loop_break(fr, i, fr->il.v[i].p.a == FJ_IF_TRUE, NULL, NULL);
    if (r < 0)
        PyErr_Clear(); /* (asked only to keep a value; the jump asks again) */
    return r > 0;
}

int fj_trace_loop_exit_part(fj_TFrame *fr, int i)
{
    fj_LoopCtx *c = fr->tx->loop;
    if (c == NULL || c->fr != fr || c->and_hi <= 0 || i < fr->loop_head || i >= c->and_hi)
        return 0;
    return fr->il.v[i].p.op == FJ_PI_POP_JUMP_IF && fr->il.v[i].target == c->and_T;
}

/* The loop_exit node: exit(v, leave, the previous exit[, slots, values...]).
   'slots' (a tuple of state slots, with as many values) or NULL.  0 or -1. */
static int exit_node(fj_TFrame *fr, PyObject *v, int leave, PyObject *slots, PyObject *vals)
{
    fj_Tracer *tx = fr->tx;
    fj_LoopCtx *c = tx->loop;
    Py_ssize_t nv = slots ? PyTuple_GET_SIZE(vals) : 0;
    PyObject *args = PyTuple_New(3 + (slots ? 1 + nv : 0));
    if (args == NULL)
        return -1;
    PyTuple_SET_ITEM(args, 0, Py_NewRef(((fj_Var *)v)->obj));
    PyTuple_SET_ITEM(args, 1, Py_NewRef(leave ? Py_True : Py_False));
    PyTuple_SET_ITEM(args, 2, Py_NewRef(c->last_exit ? ((fj_Var *)c->last_exit)->obj : Py_None));
    if (slots != NULL) {
        PyTuple_SET_ITEM(args, 3, Py_NewRef(slots));
        for (Py_ssize_t k = 0; k < nv; k++)
            PyTuple_SET_ITEM(args, 4 + k, Py_NewRef(PyTuple_GET_ITEM(vals, k)));
    }
    PyObject *label = PyUnicode_FromString("framejit.loop_exit");
    PyObject *stem = label ? PyUnicode_FromString("loop_exit") : NULL;
    fj_Node *n = stem ? fj_graph_raw_call(tx->body, &fj_loop_exit_row, fj_loop_exit_callable(), label, stem, args,
                                          NULL, FJ_VAL_PYSCALAR)
                      : NULL;
    Py_DECREF(args);
    Py_XDECREF(label);
    Py_XDECREF(stem);
    if (n == NULL)
        return -1;
    Py_XSETREF(n->example, Py_NewRef(Py_True)); /* (its value where the iteration goes on) */
    n->variant = 1;
    PyObject *nv_ = (PyObject *)fj_var_node((PyObject *)n);
    if (nv_ == NULL)
        return -1;
    Py_XSETREF(c->last_exit, nv_);
    return 0;
}

int fj_trace_loop_exit_if(fj_TFrame *fr, PyObject *v, int leave)
{
    fj_Tracer *tx = fr->tx;
    fj_LoopCtx *c = tx->loop;
    if (fr->sp != c->sp0)
        return fj_unsupported("a part of the loop's test leaves values on the stack");
    if (PyList_GET_SIZE(tx->effects) != c->neff0 || PyList_GET_SIZE(tx->mutated) != c->nmut0 ||
        PyDict_GET_SIZE(tx->global_overlay) != c->nov0 || fj_graph_mutates(tx->body))
        return fj_unsupported("the loop's test has side effects before its last part");
    for (int k = 0; k < fr->nlocals; k++)
        if (fr->locals[k] != c->entry[k] &&
            !(c->entry[k] == NULL && fr->lazy_args && fj_trace_is_arg_slot(fr, k) && !fr->touched[k]))
            return fj_unsupported("the loop's test sets a local before its last part");
    /* (an argument first read in the test is loaded, not set) */
    return exit_node(fr, v, leave, NULL, NULL);
}

/* A for loop's break (loop_break): its state is the iteration's locals after
   the break's moves, each that differs from the iteration's start a slot the
   exit sets.  What the iteration did before it stands (its stores into
   arrays too: CPython has done them); side effects, replayed after the graph,
   would not be in order: refused.  0 or -1. */
static int for_exit(fj_TFrame *fr, PyObject *v, int leave, const BreakMoves *m)
{
    fj_Tracer *tx = fr->tx;
    fj_LoopCtx *c = tx->loop;
    if (fr->sp != c->sp0)
        return fj_unsupported("a break leaves values on the stack");
    if (PyList_GET_SIZE(tx->effects) != c->neff0 || PyList_GET_SIZE(tx->mutated) != c->nmut0 ||
        PyDict_GET_SIZE(tx->global_overlay) != c->nov0)
        return fj_unsupported("a break comes after side effects of the iteration");
    PyObject *slots = PyList_New(0), *vals = PyList_New(0), *st = NULL, *vt = NULL, *pair = NULL;
    int r = -1;
    if (slots == NULL || vals == NULL)
        goto out;
    for (int k = 0; k < fr->nlocals; k++) {
        PyObject *cur = moved(fr, m, k);
        if (cur == c->entry[k] ||
            (c->entry[k] == NULL && fr->lazy_args && fj_trace_is_arg_slot(fr, k) && !fr->touched[k]))
            continue; /* (an argument first read in the iteration is loaded, not set) */
        fj_Var *cv = (fj_Var *)cur;
        if (c->slot_of[k] < 0 || cv == NULL || (cv->kind != FJ_VAR_NODE && cv->kind != FJ_VAR_CONST)) {
            fj_unsupported(cv == NULL ? "a break comes where the iteration has unbound a local"
                                      : "a break leaves a local that is neither an array nor a number");
            goto out;
        }
        PyObject *val = cv->obj;
        if (cv->kind == FJ_VAR_NODE && (val = (PyObject *)fj_graph_lift(tx->body, (fj_Node *)cv->obj)) == NULL)
            goto out;
        PyObject *sl = PyLong_FromLong(c->slot_of[k]);
        int bad = sl == NULL || PyList_Append(slots, sl) < 0 || PyList_Append(vals, val) < 0;
        Py_XDECREF(sl);
        if (bad)
            goto out;
    }
    if (m->ret != NULL) {
        /* a return: its two slots, True and the value returned */
        fj_Var *rv = (fj_Var *)m->ret;
        PyObject *val = rv->obj, *s1 = NULL, *s2 = NULL;
        if ((rv->kind != FJ_VAR_NODE && rv->kind != FJ_VAR_CONST) ||
            (rv->kind == FJ_VAR_CONST && !PyLong_CheckExact(rv->obj) && !PyFloat_CheckExact(rv->obj) &&
             !PyBool_Check(rv->obj))) {
            fj_unsupported("a return in the loop of a value that is neither an array nor a number");
            goto out;
        }
        if (rv->kind == FJ_VAR_NODE && (val = (PyObject *)fj_graph_lift(tx->body, (fj_Node *)rv->obj)) == NULL)
            goto out;
        int bad = (s1 = PyLong_FromLong(c->ret_slot)) == NULL || (s2 = PyLong_FromLong(c->ret_slot + 1)) == NULL ||
                  PyList_Append(slots, s1) < 0 || PyList_Append(vals, Py_True) < 0 || PyList_Append(slots, s2) < 0 ||
                  PyList_Append(vals, val) < 0 || PyList_Append(c->rets, m->ret) < 0;
        Py_XDECREF(s1);
        Py_XDECREF(s2);
        if (bad)
            goto out;
    }
    if ((st = PyList_AsTuple(slots)) == NULL || (vt = PyList_AsTuple(vals)) == NULL ||
        (pair = PyTuple_Pack(2, st, vt)) == NULL || PyList_Append(c->exits, pair) < 0)
        goto out;
    r = exit_node(fr, v, leave, st, vt);
out:
    Py_XDECREF(slots);
    Py_XDECREF(vals);
    Py_XDECREF(st);
    Py_XDECREF(vt);
    Py_XDECREF(pair);
    return r;
}

/*
** A part of a compound test on data is met after the parts before it were
** traced: their nodes are in the enclosing graph, and the loop node would
** run them again (a warning twice).  So the loop is captured where the trace
** arrives at the test's copy instead (its top one, or the bottom one after an
** unrolled iteration or in a resume function): the first arrival arms that
** start in the compile's policy and traces again (FJ_AND_ARM); the frames of
** the code mark it (fj_trace_and_arms) and run_frame_at captures there
** (fj_trace_and_arrive).  Where that capture does not happen (a peel asked
** for), the part is a branch on data, as before.
*/
/* The call path of frame fr: (id(code), ip) of each caller, outermost first.
   New reference. */
static PyObject *call_path(fj_TFrame *fr)
{
    Py_ssize_t n = 0;
    for (fj_TFrame *f = fr->parent; f != NULL; f = f->parent)
        n++;
    PyObject *t = PyTuple_New(n);
    for (fj_TFrame *f = fr->parent; t != NULL && f != NULL; f = f->parent) {
        PyObject *e = Py_BuildValue("(Ni)", PyLong_FromVoidPtr(f->code), f->ip);
        if (e == NULL)
            Py_CLEAR(t);
        else
            PyTuple_SET_ITEM(t, --n, e);
    }
    return t;
}

/* 1 when start x of fr's code is armed for fr's call path (an inlined
   function's loop armed at one call site is not at another, where its test
   may be constants and its loop unrolled), 0 when not, -1 on error. */
static int armed(fj_TFrame *fr, int x)
{
    if (fr->and_arm == NULL || !fr->and_arm[x])
        return 0;
    PyObject *key = policy_key(fr, x | FJ_AND_ARM), *path = call_path(fr);
    PyObject *paths = key && path ? PyDict_GetItemWithError(fr->tx->loop_policy, key) : NULL;
    int r = paths != NULL && PyTuple_Check(paths) ? PySequence_Contains(paths, path) : 0;
    Py_XDECREF(key);
    Py_XDECREF(path);
    return PyErr_Occurred() ? -1 : r;
}

/* Arms start x for fr's call path and asks for the compile's retry.  -1. */
static int arm(fj_TFrame *fr, int x)
{
    fj_Tracer *tx = fr->tx;
    PyObject *key = policy_key(fr, x | FJ_AND_ARM), *path = call_path(fr);
    PyObject *old = key && path ? PyDict_GetItemWithError(tx->loop_policy, key) : NULL;
    PyObject *one = path ? PyTuple_Pack(1, path) : NULL;
    PyObject *paths = one == NULL || PyErr_Occurred() ? NULL
                      : old != NULL && PyTuple_Check(old) ? PySequence_Concat(old, one) : Py_NewRef(one);
    int bad = paths == NULL || PyDict_SetItem(tx->loop_policy, key, paths) < 0;
    Py_XDECREF(key);
    Py_XDECREF(path);
    Py_XDECREF(one);
    Py_XDECREF(paths);
    if (bad)
        return -1;
    tx->loop_retry = 1;
    return fj_unsupported("while loop at %U:%d: its compound test is captured from its start: traced again",
                          fr->code->co_filename, fr->il.v[x].line);
}

int fj_trace_and_arms(fj_TFrame *fr)
{
    PyObject *pol = fr->tx->loop_policy, *key, *val;
    Py_ssize_t pos = 0;
    while (pol != NULL && PyDict_Next(pol, &pos, &key, &val)) {
        /* (keys are policy_key's: (id(code), head)) */
        long head = PyLong_AsLong(PyTuple_GET_ITEM(key, 1));
        if (head == -1 && PyErr_Occurred())
            return -1;
        if (!(head & FJ_AND_ARM) || PyLong_AsVoidPtr(PyTuple_GET_ITEM(key, 0)) != (void *)fr->code ||
            (head & ~FJ_AND_ARM) >= fr->il.n)
            continue;
        if (fr->and_arm == NULL && (fr->and_arm = PyMem_Calloc((size_t)fr->il.n, 1)) == NULL) {
            PyErr_NoMemory();
            return -1;
        }
        fr->and_arm[head & ~FJ_AND_ARM] = 1;
    }
    return 0;
}

int fj_trace_and_arrive(fj_TFrame *fr, int x, int *next)
{
    fj_Tracer *tx = fr->tx;
    WhileInfo w;
    int j = x;
    while (j < fr->il.n && fr->il.v[j].p.op != FJ_PI_POP_JUMP_IF && fr->il.v[j].target < 0)
        j++;
    if (!tx->capture_loops || tx->loop_policy == NULL || j >= fr->il.n || !and_shape(fr, j, &w) ||
        (x != w.P && x != w.Q))
        return 0;
    int a = armed(fr, x);
    if (a <= 0)
        return a;
    /* inside a captured loop's body: only a loop strictly inside it */
    if (fr->loop_head >= 0 && (w.P <= fr->loop_head || w.T > fr->loop_end))
        return 0;
    w.at_top = x == w.P;
    w.maybe_zero = 1;
    int r = capture(fr, w.P, &w);
    if (r == 1)
        *next = w.T;
    return r;
}

int fj_trace_capture_while(fj_TFrame *fr, int j, PyObject *cond, int *exit)
{
    fj_Tracer *tx = fr->tx;
    WhileInfo w;
    if (!tx->capture_loops || tx->loop_policy == NULL || (!and_shape(fr, j, &w) && !while_shape(fr, j, &w)))
        return 0;
    /* inside a captured loop's body: only a loop strictly inside it */
    int first = w.andm ? w.P : w.L;
    if (fr->loop_head >= 0 && (first <= fr->loop_head || w.T > fr->loop_end || (w.rot && w.K >= fr->loop_end)))
        return 0;
    fj_Var *cv = (fj_Var *)cond;
    int is_const = cv->kind == FJ_VAR_CONST;
    if (is_const) {
        /* a constant test: the loop unrolls while it is short; its test at the
           bottom, after loop_unroll_limit iterations, captures the rest (a
           compound test: at its last part) */
        int t = PyObject_IsTrue(cv->obj);
        if (t < 0) {
            PyErr_Clear();
            return 0;
        }
        long top = !w.andm && w.at_top && t != w.neg0 ? policy_peel(tx, fr, w.L | FJ_WHILE_TOP) : 0;
        if (top == -2)
            return -1;
        if (top == 1)
            goto capture_now; /* armed: captured at its first test */
        if (w.andm ? j != w.test || !and_goes_on(fr, j, t) : t == w.neg0 || w.at_top)
            return 0;
        if (fr->while_seen == NULL && (fr->while_seen = PyDict_New()) == NULL)
            return -1;
        PyObject *key = PyLong_FromLong(w.L);
        PyObject *seen = key ? PyDict_GetItemWithError(fr->while_seen, key) : NULL;
        long n = seen ? PyLong_AsLong(seen) + 1 : 1;
        PyObject *nv = key && !PyErr_Occurred() ? PyLong_FromLong(n) : NULL;
        int bad = nv == NULL || PyDict_SetItem(fr->while_seen, key, nv) < 0;
        Py_XDECREF(key);
        Py_XDECREF(nv);
        if (bad)
            return -1;
        if (n < tx->loop_unroll_limit)
            return 0;
    }
    else if (cv->kind != FJ_VAR_NODE)
        return 0;
    else if (w.andm) {
        /* captured from the copy's start on the next trace (above); once armed, a
           branch here */
        int x = j < w.L ? w.P : w.Q, a = armed(fr, x);
        return a != 0 ? (a < 0 ? -1 : 0) : arm(fr, x);
    }
capture_now:
    w.c0 = cond;
    w.maybe_zero = !is_const || w.andm;
    int r = capture(fr, first, &w);
    if (r == 1)
        *exit = w.T;
    return r;
}

/*
** The return at the exit of a loop with a return inside (capture, ret_slot):
** the value is the loop's returned one where a return ended it, else *v.
** Both of one kind, dtype and shape (the trace goes on with one of them in
** an inlined call); else the loop is not captured again.  0 (*v replaced by
** a pick node) or -1.
*/
int fj_trace_loop_return(fj_TFrame *fr, PyObject **v)
{
    PyObject *pend = fr->loop_ret;
    fr->loop_ret = NULL;
    fj_Var *flag = (fj_Var *)PyTuple_GET_ITEM(pend, 0), *rv = (fj_Var *)PyTuple_GET_ITEM(pend, 1);
    PyObject *rets = PyTuple_GET_ITEM(pend, 2);
    int phead = (int)PyLong_AsLong(PyTuple_GET_ITEM(pend, 3));
    fj_Var *x = (fj_Var *)*v;
    int ok = x->kind == FJ_VAR_NODE || x->kind == FJ_VAR_CONST;
    for (Py_ssize_t k = 0; ok && k < PyList_GET_SIZE(rets); k++) {
        fj_Var *r = (fj_Var *)PyList_GET_ITEM(rets, k);
        if (r->kind == FJ_VAR_NODE)
            ok = same_meta((fj_Node *)r->obj, x->obj);
        else if (x->kind == FJ_VAR_NODE)
            ok = same_meta((fj_Node *)x->obj, r->obj);
        else
            ok = Py_TYPE(r->obj) == Py_TYPE(x->obj);
        if (ok < 0) {
            Py_DECREF(pend);
            return -1;
        }
    }
    if (!ok) {
        int r = retry(fr, phead, -1, "a return in it returns another type than the code after it");
        Py_DECREF(pend);
        return r < 0 ? -1 : fj_unsupported("a return in a loop returns another type than the code after it");
    }
    fj_Tracer *tx = fr->tx;
    PyObject *g = tx->body ? tx->body : tx->graph;
    fj_Node *like = x->kind == FJ_VAR_NODE ? (fj_Node *)x->obj : (fj_Node *)rv->obj;
    PyObject *args = Py_BuildValue("(OOO)", flag->obj, rv->obj, x->obj);
    PyObject *label = args ? PyUnicode_FromString("framejit.loop_pick") : NULL;
    PyObject *stem = label ? PyUnicode_FromString("loop_pick") : NULL;
    fj_Node *n = stem ? fj_graph_raw_call(g, &fj_loop_pick_row, fj_loop_pick_callable(), label, stem, args, like, 0)
                      : NULL;
    Py_XDECREF(args);
    Py_XDECREF(label);
    Py_XDECREF(stem);
    Py_DECREF(pend);
    if (n == NULL)
        return -1;
    n->variant = 1;
    PyObject *nv = (PyObject *)fj_var_node((PyObject *)n);
    if (nv == NULL)
        return -1;
    Py_SETREF(*v, nv);
    return 0;
}

int fj_trace_loop_return_lost(fj_TFrame *fr)
{
    PyObject *pend = fr->loop_ret;
    fr->loop_ret = NULL;
    int phead = (int)PyLong_AsLong(PyTuple_GET_ITEM(pend, 3));
    Py_DECREF(pend);
    return retry(fr, phead, -1, "the code after it stops before its return");
}

/*
** A branch on data in an unrolled iteration of a while loop whose test is
** constant (on Python ints: unrolled loop_unroll_limit times, then captured
** at its bottom test) that is a break of that loop: the loop is captured at
** its first test instead, where the break is an exit (loop_break).  Arms it
** in the compile's policy and asks for a retry: -1.  0 when not so.
*/
int fj_trace_while_break_arm(fj_TFrame *fr, int i, PyObject *v)
{
    fj_Tracer *tx = fr->tx;
    fj_InstrList *il = &fr->il;
    fj_Var *vv = (fj_Var *)v;
    if (vv->kind != FJ_VAR_NODE || ((fj_Node *)vv->obj)->variant || ((fj_Node *)vv->obj)->vkind == FJ_VAL_PYSCALAR)
        return 0; /* (a Python int specializes; a value of the iteration: its loop's) */
    if (!tx->capture_loops || tx->loop_policy == NULL || fr->loop_head >= 0 || i < 0 || i >= il->n ||
        il->v[i].p.op != FJ_PI_POP_JUMP_IF || il->v[i].target <= i)
        return 0;
    /* the innermost loop around i: the first jump back to at or before it */
    int j2 = -1;
    for (int j = i + 1; j < il->n && j2 < 0; j++)
        if (fj_opcode_jump_dir(il->v[j].op) < 0 && il->v[j].target <= i)
            j2 = j;
    if (j2 < 0)
        return 0;
    int bottom = il->v[j2].p.op == FJ_PI_POP_JUMP_IF ? j2 : j2 - 1; /* 3.11; 3.12+ (test, then jump back) */
    WhileInfo w;
    if (bottom <= i || !while_shape_as(fr, bottom, &w, 0) || w.rot || w.andm || i < w.L || i >= w.T)
        return 0;
    long armed_ = policy_peel(tx, fr, w.L | FJ_WHILE_TOP), pol = policy_peel(tx, fr, w.L | FJ_WHILE_HEAD);
    if (armed_ == -2 || pol == -2)
        return -1;
    if (armed_ != 0 || pol != 0)
        return 0; /* armed before (its capture declined), or its policy says otherwise */
    fj_LoopCtx c;
    memset(&c, 0, sizeof c);
    c.fr = fr;
    c.break_X = w.T;
    c.ret_slot = -1;
    for (int side = 0; side < 2; side++) {
        BreakMoves m;
        int r = break_block(fr, &c, side ? il->v[i].target : i + 1, &m);
        if (r < 0)
            return -1;
        if (r == 0)
            continue;
        moves_clear(&m);
        PyObject *key = policy_key(fr, w.L | FJ_WHILE_TOP), *one = PyLong_FromLong(1);
        int bad = key == NULL || one == NULL || PyDict_SetItem(tx->loop_policy, key, one) < 0;
        Py_XDECREF(key);
        Py_XDECREF(one);
        if (bad)
            return -1;
        tx->loop_retry = 1;
        return fj_unsupported("while loop at %U:%d: a break on data in its unrolled iterations: it is captured "
                              "from its first test: traced again", fr->code->co_filename, il->v[w.L].line);
    }
    return 0;
}
