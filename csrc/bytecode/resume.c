/*
** resume.c: graph-break planning, liveness and resume-function code.
** See resume.h.
**
** A break is resumable when the instruction runs outside any try/with
** block (no exception-table entry covers it) and outside any loop (no
** backward jump spans it): inside a loop the resume function would call
** itself once per iteration.  Such frames run whole in CPython, and the
** functions they call are still offered to framejit (docs/graph-breaks.md).
*/
#include "resume.h"

#include "trace.h"

/* Stack entries consumed and produced by the generic break instructions
   (pseudo-instruction 'p'). */
static int generic_effect(const fj_Pseudo *p, int *npop, int *npush)
{
    int a = p->a;
    switch (p->op) {
    case FJ_PI_STORE_ATTR: *npop = 2; *npush = 0; return 0;
    case FJ_PI_DELETE_ATTR: *npop = 1; *npush = 0; return 0;
    case FJ_PI_STORE_SUBSCR: *npop = 3; *npush = 0; return 0;
    case FJ_PI_DELETE_SUBSCR: *npop = 2; *npush = 0; return 0;
    case FJ_PI_STORE_SLICE: *npop = 4; *npush = 0; return 0;
    case FJ_PI_STORE_GLOBAL: *npop = 1; *npush = 0; return 0;
    case FJ_PI_DELETE_GLOBAL: *npop = 0; *npush = 0; return 0;
    case FJ_PI_BINARY_OP: case FJ_PI_BINARY_SUBSCR: case FJ_PI_COMPARE_OP: case FJ_PI_IS_OP:
    case FJ_PI_CONTAINS_OP:
        *npop = 2; *npush = 1; return 0;
    case FJ_PI_BINARY_SLICE:
        *npop = 3; *npush = 1; return 0;
    case FJ_PI_UNARY_NEGATIVE: case FJ_PI_UNARY_POSITIVE: case FJ_PI_UNARY_INVERT:
    case FJ_PI_UNARY_NOT: case FJ_PI_TO_BOOL: case FJ_PI_LOAD_ATTR: case FJ_PI_GET_ITER:
    case FJ_PI_CONVERT_VALUE:
        *npop = 1; *npush = 1; return 0;
    case FJ_PI_LOAD_GLOBAL:
        if (p->b)
            return -1; /* would push a NULL we cannot hand on */
        *npop = 0; *npush = 1; return 0;
    case FJ_PI_LOAD_FAST:
        *npop = 0; *npush = 1; return 0;
    case FJ_PI_FORMAT:
        *npop = 1 + (p->b != 0); *npush = 1; return 0;
    case FJ_PI_BUILD_STRING:
        *npop = a; *npush = 1; return 0;
    case FJ_PI_UNPACK_SEQUENCE:
        *npop = 1; *npush = a; return 0;
    case FJ_PI_IMPORT_NAME:
        *npop = 2; *npush = 1; return 0;
    case FJ_PI_IMPORT_FROM:
        *npop = 1; *npush = 2; return 0;
    case FJ_PI_BEFORE_WITH:
        *npop = 1; *npush = 2; return 0;
    case FJ_PI_RAISE_VARARGS:
        *npop = a; *npush = 0; return 0;
    default:
        return -1;
    }
}

static int local_def(const fj_Instr *in);
static int local_def2(const fj_Instr *in);

static int in_loop(const fj_InstrList *il, int index)
{
    for (int j = index + 1; j < il->n; j++) {
        const fj_Instr *in = &il->v[j];
        if (fj_opcode_jump_dir(in->op) < 0 && in->target <= index)
            return 1;
    }
    return 0;
}

int fj_resume_cells_ok(PyCodeObject *co, const fj_InstrList *il, int first,
                       const unsigned char *unbound)
{
    for (int k = first; k < il->n; k++) {
        const fj_Instr *in = &il->v[k];
        int slot = in->p.a;
        if (in->p.op != FJ_PI_LOAD_DEREF && in->p.op != FJ_PI_DELETE_DEREF)
            continue;
        if (slot >= FJ_CODE_NLOCALSPLUS(co) || !(fj_code_local_kind(co, slot) & FJ_FAST_CELL))
            continue; /* a free variable: NameError in the resume function as here */
        if (in->p.op == FJ_PI_DELETE_DEREF || unbound[slot])
            return fj_unsupported("cell variable %U may be unbound after the break (a resume "
                                  "function would raise NameError, not UnboundLocalError)",
                                  fj_code_local_name(co, slot));
    }
    return 0;
}

/* True for an instruction a region run in CPython may not hold: one that
   touches cells or makes a function (closures), or a return. */
static int closure_or_return(const fj_Instr *in)
{
    int op = in->p.op;
    return op == FJ_PI_LOAD_DEREF || op == FJ_PI_STORE_DEREF || op == FJ_PI_LOAD_CLOSURE ||
           op == FJ_PI_MAKE_CELL || op == FJ_PI_DELETE_DEREF || op == FJ_PI_MAKE_FUNCTION ||
           op == FJ_PI_RETURN_VALUE || op == FJ_PI_RETURN_CONST;
}

/*
** A break inside a comprehension that 3.12+ inline (PEP 709): the loop runs
** whole in CPython, as 3.11 ran the comprehension's own function.  Its body
** is under a handler that only restores the saved locals and re-raises
** ('h'); before it: GET_ITER, then LOAD_FAST_AND_CLEAR and SWAP for each
** saved local; after it: SWAP, and STORE_FASTs that restore the saved
** locals (the result's own store may come first).  0 with the plan, or -1
** with fj_Unsupported.
*/
static int plan_comprehension(const fj_InstrList *il, int index, int h, fj_BreakPlan *plan)
{
    int lo = index, hi = index, nsaved = 0, extra_pops = 0;
    unsigned char saved[256] = {0};
    while (lo > 0 && il->v[lo - 1].exc_target == h)
        lo--;
    while (hi + 1 < il->n && il->v[hi + 1].exc_target == h)
        hi++;
    int first = lo;
    while (first > 0 && (il->v[first - 1].p.op == FJ_PI_SWAP ||
                         il->v[first - 1].p.op == FJ_PI_LOAD_FAST_AND_CLEAR)) {
        first--;
        if (il->v[first].p.op == FJ_PI_LOAD_FAST_AND_CLEAR) {
            if (il->v[first].p.a >= 256)
                return fj_unsupported("graph break inside a comprehension with many locals");
            saved[il->v[first].p.a] = 1;
            nsaved++;
        }
    }
    if (first == 0 || il->v[first - 1].p.op != FJ_PI_GET_ITER || nsaved == 0)
        return fj_unsupported("graph break inside a loop");
    first--;
    int last = hi, restored = 0;
    while (restored < nsaved && last + 1 < il->n) {
        const fj_Instr *in = &il->v[++last];
        int slots[2] = {-1, -1};
        if (in->exc_target >= 0)
            break;
        if (in->p.op == FJ_PI_STORE_FAST)
            slots[0] = in->p.a;
        else if (in->p.op == FJ_PI_STORE_FAST_STORE_FAST)
            slots[0] = in->p.a, slots[1] = in->p.b;
        else if (in->p.op == FJ_PI_POP_TOP)
            extra_pops++;
        else if (in->p.op != FJ_PI_SWAP && in->p.op != FJ_PI_NOP)
            break;
        for (int k = 0; k < 2 && slots[k] >= 0; k++) {
            if (slots[k] < 256 && saved[slots[k]] == 1) {
                saved[slots[k]] = 2;
                restored++;
            }
            else
                extra_pops++;
        }
    }
    if (restored < nsaved || extra_pops > 1)
        return fj_unsupported("graph break inside a loop");
    for (int k = first; k <= last; k++) {
        if (closure_or_return(&il->v[k]))
            return fj_unsupported("graph break inside a comprehension with a closure or a return");
        if (fj_opcode_jump_dir(il->v[k].op) != 0 &&
            (il->v[k].target < first || il->v[k].target > last + 1))
            return fj_unsupported("graph break inside a comprehension that jumps out of it");
    }
    if (il->v[first].exc_target >= 0 && !fj_bc_handler_transparent(il, il->v[first].exc_target))
        return fj_unsupported("graph break inside a comprehension under a try or with block");
    if (in_loop(il, first))
        return fj_unsupported("graph break inside a loop");
    plan->kind = FJ_BREAK_REGION;
    plan->first = first;
    plan->last = last;
    plan->npop = 1;               /* the iterable */
    plan->npush = 1 - extra_pops; /* the result, unless stored or dropped */
    plan->nresume = 1;
    plan->resume[0] = last + 1;
    plan->resume[1] = -1;
    plan->handler = -1;
    return 0;
}

/*
** A break inside a loop (not a comprehension's): the outermost loop around
** the break runs whole in CPython, a for loop from its GET_ITER to its exit,
** a while loop from its head (an else clause that a `break` jumps past
** included), and a resume function goes on after it.  The functions the loop's body calls are still offered to the
** hook as frames of their own.  The loop must not return, make closures or
** sit under (or hold) a try or with block.  0 with the plan, or -1 with
** fj_Unsupported.
*/
static int plan_loop(const fj_InstrList *il, int index, fj_BreakPlan *plan)
{
    int head = -1;
    for (int j = index; j < il->n; j++) {
        const fj_Instr *in = &il->v[j];
        if (fj_opcode_jump_dir(in->op) < 0 && in->target <= index && (head < 0 || in->target < head))
            head = in->target;
    }
    if (head < 0)
        return fj_unsupported("graph break inside a loop whose head is not found");
    int first, last, npop;
    if (il->v[head].p.op == FJ_PI_FOR_ITER) {
        /* from its GET_ITER (the iterable on the stack); from the FOR_ITER itself (the
           iterator on the stack) when other code jumps there (a resume function's
           prologue, after a break at the GET_ITER) */
        first = head - 1;
        for (int k = 0; k < il->n; k++)
            if ((k < head - 1 || k > head) && fj_opcode_jump_dir(il->v[k].op) > 0 && il->v[k].target == head)
                first = head;
        if (first < 0 || (first == head - 1 && il->v[first].p.op != FJ_PI_GET_ITER))
            first = head;
        last = il->v[head].target + il->v[head].p.b - 1; /* the exit: past END_FOR (3.12+) */
        npop = 1;                                       /* the iterable, or the iterator */
    } else {
        /* a while loop: from the target of its backward jumps (its test, or with
           3.11's test copied to the bottom, its body: the trace took the entry test)
           to the last backward jump to there; nothing on the stack */
        first = head;
        last = head;
        for (int j = head; j < il->n; j++)
            if (fj_opcode_jump_dir(il->v[j].op) < 0 && il->v[j].target == head)
                last = j;
        npop = 0;
    }
    for (int changed = 1; changed;) {
        changed = 0;
        for (int k = first; k <= last; k++) {
            const fj_Instr *in = &il->v[k];
            if (fj_opcode_jump_dir(in->op) == 0)
                continue;
            if (in->target < first)
                return fj_unsupported("graph break inside a loop that jumps back before it");
            if (in->target > last + 1) {
                last = in->target - 1; /* a break past an else clause: the clause runs too */
                changed = 1;
            }
        }
        if (last >= il->n)
            return fj_unsupported("graph break inside a loop whose exit is not found");
    }
    for (int k = first; k <= last; k++) {
        if (closure_or_return(&il->v[k]))
            return fj_unsupported("graph break inside a loop with a closure or a return");
        if (il->v[k].p.op == FJ_PI_DELETE_FAST)
            return fj_unsupported("graph break inside a loop that deletes a local (it may be unbound after "
                                  "the loop)");
        if (il->v[k].exc_target >= 0 && !fj_bc_handler_transparent(il, il->v[k].exc_target))
            return fj_unsupported("graph break inside a loop under or around a try or with block");
    }
    /* nothing after the loop jumps into it */
    for (int k = 0; k < il->n; k++)
        if ((k < first || k > last) && fj_opcode_jump_dir(il->v[k].op) != 0 && il->v[k].target > first &&
            il->v[k].target <= last)
            return fj_unsupported("graph break inside a loop that other code jumps into");
    /* (a forward jump from before the loop into its head, other than the one planned
       for, would skip what runs here: none is left, checked above) */
    for (int j = last + 1; j < il->n; j++)
        if (fj_opcode_jump_dir(il->v[j].op) < 0 && il->v[j].target <= first)
            return fj_unsupported("graph break inside a loop");
    plan->kind = FJ_BREAK_REGION;
    plan->first = first;
    plan->last = last;
    plan->npop = npop;
    plan->npush = 0;
    plan->nresume = 1;
    plan->resume[0] = last + 1;
    plan->resume[1] = -1;
    plan->handler = -1;
    plan->maybe_defs = 1;
    if (last + 1 >= il->n) {
        /* the loop ends the code (3.12+ moves a `while True` loop's exit inline, here a
           raise): it never falls out at its end, so nothing resumes after it */
        for (int k = first; k <= last; k++)
            if (fj_opcode_jump_dir(il->v[k].op) > 0 && il->v[k].target == last + 1)
                return fj_unsupported("graph break inside a loop whose exit is not found");
        if (fj_opcode_jump_dir(il->v[last].op) >= 0)
            return fj_unsupported("graph break inside a loop whose exit is not found");
        plan->nresume = 0;
    }
    return 0;
}

void fj_resume_region_defs(PyCodeObject *co, const fj_InstrList *il, const fj_BreakPlan *plan,
                           unsigned char *defs)
{
    int nl = FJ_CODE_NLOCALSPLUS(co);
    memset(defs, 0, (size_t)nl);
    if (plan->kind != FJ_BREAK_REGION)
        return;
    for (int k = plan->first; k <= plan->last; k++) {
        int d = local_def(&il->v[k]), d2 = local_def2(&il->v[k]);
        if (d >= 0 && d < nl)
            defs[d] = 1;
        if (d2 >= 0 && d2 < nl)
            defs[d2] = 1;
    }
    /* a comprehension's own: restored as it was (in a loop, where the loop may
       bind the same local itself, it counts as bound by the loop: maybe_defs) */
    for (int k = plan->first; !plan->maybe_defs && k <= plan->last; k++)
        if (il->v[k].p.op == FJ_PI_LOAD_FAST_AND_CLEAR && il->v[k].p.a < nl)
            defs[il->v[k].p.a] = 0;
}

int fj_resume_plan(PyCodeObject *co, const fj_InstrList *il, int index, fj_BreakPlan *plan)
{
    memset(plan, 0, sizeof(*plan));
    if (index < 0 || index >= il->n)
        return fj_unsupported("no instruction to resume after");
    const fj_Instr *in = &il->v[index];
    plan->handler = -1;
    if (in->exc_target >= 0 && !fj_bc_handler_transparent(il, in->exc_target)) {
        /* what runs in CPython may raise into the handler: the break code
           then calls a resume function that starts there */
        plan->handler = in->exc_target;
        plan->hdepth = in->exc_depth;
        plan->hlasti = in->exc_lasti;
    }
    if (in_loop(il, index)) {
        if (in->exc_target >= 0 && plan->handler < 0 && plan_comprehension(il, index, in->exc_target, plan) == 0)
            return 0;
        if (in->exc_target >= 0 && plan->handler < 0)
            PyErr_Clear(); /* not a comprehension's loop: a loop of the frame's own */
        memset(plan, 0, sizeof(*plan));
        return plan_loop(il, index, plan);
    }
    plan->first = plan->last = index;
    plan->nresume = 1;
    plan->resume[0] = index + 1;
    plan->resume[1] = -1;
    switch (in->p.op) {
    case FJ_PI_CALL:
        /* the call's prefix instructions run with it: 3.11 [KW_NAMES] PRECALL, 3.12
           [KW_NAMES]; 3.13's keyword names are a stack entry (p.b) */
        plan->kind = FJ_BREAK_CALL;
        if (plan->first >= 1 && il->v[plan->first - 1].p.op == FJ_PI_PRECALL)
            plan->first--;
        if (plan->first >= 1 && il->v[plan->first - 1].p.op == FJ_PI_KW_NAMES)
            plan->first--;
        plan->npop = in->p.a + 2 + in->p.b;
        plan->npush = 1;
        return 0;
    case FJ_PI_POP_JUMP_IF:
        if (in->target <= index)
            break; /* backward: inside a loop, refused above */
        plan->kind = FJ_BREAK_JUMP;
        plan->npop = 1;
        plan->npush = 0;
        plan->nresume = 2;
        plan->resume[1] = in->target;
        return 0;
    default:
        break;
    }
    plan->kind = FJ_BREAK_GENERIC;
    if (generic_effect(&in->p, &plan->npop, &plan->npush) < 0)
        return fj_unsupported("cannot resume after a break at %s", fj_trace_opname(in->op));
    if (in->p.op == FJ_PI_RAISE_VARARGS)
        plan->nresume = 0;
    return 0;
}

/* ------------------------------------------------------------ liveness */

/* DELETE_FAST reads the local too: it raises UnboundLocalError when the
** local has no value, so a local deleted later is live (test_itertools
** TestGC.makecycle: "del container, iterator" after a break). */
static int local_use(const fj_Instr *in)
{
    switch (in->p.op) {
    case FJ_PI_LOAD_FAST: case FJ_PI_DELETE_FAST: case FJ_PI_LOAD_FAST_AND_CLEAR:
    case FJ_PI_LOAD_FAST_LOAD_FAST:
        return in->p.a;
    case FJ_PI_STORE_FAST_LOAD_FAST:
        return in->p.b; /* after the store: a use of the stored slot is still covered */
    default:
        return -1;
    }
}

static int local_def(const fj_Instr *in)
{
    return in->p.op == FJ_PI_STORE_FAST || in->p.op == FJ_PI_STORE_FAST_LOAD_FAST ||
                   in->p.op == FJ_PI_STORE_FAST_STORE_FAST
               ? in->p.a
               : -1;
}

/* A second local an instruction reads (use2) or writes (def2), or -1. */
static int local_use2(const fj_Instr *in)
{
    return in->p.op == FJ_PI_LOAD_FAST_LOAD_FAST ? in->p.b : -1;
}

static int local_def2(const fj_Instr *in)
{
    return in->p.op == FJ_PI_STORE_FAST_STORE_FAST ? in->p.b : -1;
}

int fj_resume_liveness(PyCodeObject *co, const fj_InstrList *il, int index, unsigned char *live)
{
    int n = il->n, nl = FJ_CODE_NLOCALSPLUS(co);
    if (nl == 0)
        return 0;
    unsigned char *in_sets = PyMem_Calloc((size_t)n * nl, 1);
    if (in_sets == NULL) {
        PyErr_NoMemory();
        return -1;
    }
    unsigned char *out = PyMem_Malloc(nl);
    if (out == NULL) {
        PyMem_Free(in_sets);
        PyErr_NoMemory();
        return -1;
    }
    int changed = 1;
    while (changed) {
        changed = 0;
        for (int i = n - 1; i >= 0; i--) {
            const fj_Instr *in = &il->v[i];
            memset(out, 0, nl);
            int succ[3], ns = 0;
            if (!fj_opcode_no_fallthrough(in->op) && i + 1 < n)
                succ[ns++] = i + 1;
            if (fj_opcode_jump_dir(in->op) != 0 && in->target >= 0)
                succ[ns++] = in->target;
            if (in->exc_target >= 0)
                succ[ns++] = in->exc_target;
            for (int k = 0; k < ns; k++) {
                const unsigned char *s = in_sets + (size_t)succ[k] * nl;
                for (int j = 0; j < nl; j++)
                    out[j] |= s[j];
            }
            /* backwards through the instruction: its last effect first */
            int d2 = local_def2(in), d = local_def(in), u = local_use(in), u2 = local_use2(in);
            if (d2 >= 0 && d2 < nl)
                out[d2] = 0;
            if (in->p.op == FJ_PI_STORE_FAST_LOAD_FAST && u >= 0 && u < nl)
                out[u] = 1; /* the load comes after the store */
            if (d >= 0 && d < nl)
                out[d] = 0;
            if (in->p.op != FJ_PI_STORE_FAST_LOAD_FAST && u >= 0 && u < nl)
                out[u] = 1;
            if (u2 >= 0 && u2 < nl)
                out[u2] = 1;
            unsigned char *cur = in_sets + (size_t)i * nl;
            if (memcmp(cur, out, nl) != 0) {
                memcpy(cur, out, nl);
                changed = 1;
            }
        }
    }
    memcpy(live, in_sets + (size_t)index * nl, nl);
    PyMem_Free(out);
    PyMem_Free(in_sets);
    return 0;
}

/* ------------------------------------------------------- resume code */

static int index_of_name(PyObject *list, PyObject *name)
{
    Py_ssize_t n = PyList_GET_SIZE(list);
    for (Py_ssize_t i = 0; i < n; i++) {
        int eq = PyUnicode_Compare(PyList_GET_ITEM(list, i), name);
        if (eq == 0)
            return (int)i;
        if (eq == -1 && PyErr_Occurred())
            return -2;
    }
    return -1;
}

PyObject *fj_resume_code(PyCodeObject *co, const fj_InstrList *il, int index, int nstack,
                         const unsigned char *nulls, PyObject *argnames, PyObject *name,
                         int clear_stack, int raise_at, int *prefix)
{
    fj_InstrList nl;
    PyObject *orig_varnames = NULL, *varnames = NULL, *result = NULL;
    PyObject *cellvars = NULL, *freevars = NULL, *closure = NULL, *empty = NULL;
    PyObject *consts = NULL;
    /* the handler takes the offending offset: a constant, the last one */
    int push_lasti = raise_at >= 0 && il->v[raise_at].exc_lasti;
    fj_bc_init(&nl);
    int nparams = 0, line = il->v[index].line;
    orig_varnames = PyCode_GetVarnames(co);
    varnames = PyList_New(0);
    cellvars = PyCode_GetCellvars(co);
    freevars = PyCode_GetFreevars(co);
    empty = PyTuple_New(0);
    if (orig_varnames == NULL || varnames == NULL || cellvars == NULL || freevars == NULL ||
        empty == NULL)
        goto done;
    /* The frame's cells and free variables reach the resume function as its
       closure: its free variables are the original's cells, then its frees. */
    closure = PySequence_Concat(cellvars, freevars);
    if (closure == NULL)
        goto done;
    int nclosure = (int)PyTuple_GET_SIZE(closure);
    for (int i = 0; i < nstack; i++) {
        if (nulls[i])
            continue;
        PyObject *s = PyUnicode_FromFormat("___stack%d", i);
        if (s == NULL || PyList_Append(varnames, s) < 0) {
            Py_XDECREF(s);
            goto done;
        }
        Py_DECREF(s);
        nparams++;
    }
    for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(argnames); i++) {
        if (PyList_Append(varnames, PyTuple_GET_ITEM(argnames, i)) < 0)
            goto done;
        nparams++;
    }
    for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(orig_varnames); i++) {
        PyObject *v = PyTuple_GET_ITEM(orig_varnames, i);
        int is_cell = PySequence_Contains(cellvars, v);
        if (is_cell < 0)
            goto done;
        if (is_cell)
            continue; /* a cell argument: it comes in the closure */
        int at = index_of_name(varnames, v);
        if (at == -2 || (at == -1 && PyList_Append(varnames, v) < 0))
            goto done;
    }
    /* the original instructions, with fast-local args renamed to the new layout */
    if (fj_bc_decode(co, &nl) < 0)
        goto done;
    /* splitting two-local instructions (3.13) shifts indices: a label on the
       resume point follows it (fj_bc_insert renumbers labels) */
    int at_label = fj_bc_new_label(&nl);
    if (at_label < 0)
        goto done;
    nl.labels[at_label] = index;
    int raise_label = raise_at >= 0 ? fj_bc_new_label(&nl) : -1;
    if (raise_at >= 0 && raise_label < 0)
        goto done;
    if (raise_label >= 0)
        nl.labels[raise_label] = raise_at;
    if (fj_dl_split_fast_pairs(&nl) < 0)
        goto done;
    index = nl.labels[at_label];
    for (int i = 0; i < nl.n; i++) {
        fj_Instr *in = &nl.v[i];
        if (in->p.op == FJ_PI_MAKE_CELL || in->p.op == FJ_PI_COPY_FREE_VARS) {
            /* the original prologue (jumped over): cells come in the closure */
            in->op = NOP;
            in->arg = 0;
            continue;
        }
        if (fj_dl_fast_local_arg(in) && in->arg < PyTuple_GET_SIZE(orig_varnames)) {
            int at = index_of_name(varnames, PyTuple_GET_ITEM(orig_varnames, in->arg));
            if (at < 0) {
                /* a cell argument, which the resume function receives in its
                   closure, used as a plain local (3.12's LOAD_FAST_AND_CLEAR
                   of a comprehension variable that a closure captures) */
                if (at == -1)
                    fj_unsupported("resume code would use cell %U as a plain local",
                                   PyTuple_GET_ITEM(orig_varnames, in->arg));
                goto done;
            }
            in->arg = at;
        }
    }
    /* prologue: [COPY_FREE_VARS], RESUME, the saved stack, [DELETE_FAST ___stack<i>...],
       JUMP_FORWARD to the resume point */
    int nparams_stack = nparams - (int)PyTuple_GET_SIZE(argnames);
    int npre = 2 + nstack + push_lasti + (nclosure > 0) + (clear_stack ? nparams_stack : 0);
    if (fj_bc_insert(&nl, 0, npre) < 0)
        goto done;
    if ((consts = PySequence_List(co->co_consts)) == NULL)
        goto done;
    if (push_lasti) {
        PyObject *zero = PyLong_FromLong(0);
        int bad = zero == NULL || PyList_Append(consts, zero) < 0;
        Py_XDECREF(zero);
        if (bad)
            goto done;
    }
    int k = 0, param = 0;
    fj_Instr *p = nl.v;
    if (nclosure > 0) {
        p[k].op = COPY_FREE_VARS;
        p[k].arg = nclosure;
        k++;
    }
    p[k].op = RESUME;
    p[k].arg = 0;
    k++;
    for (int i = 0; i < nstack; i++, k++) {
        if (push_lasti && i == nstack - 1) {
            p[k].op = LOAD_CONST; /* below the exception: the offending offset */
            p[k].arg = (int)PyList_GET_SIZE(consts) - 1;
            k++;
        }
        p[k].op = nulls[i] ? PUSH_NULL : LOAD_FAST;
        p[k].arg = nulls[i] ? 0 : param++;
    }
    /* the stack values are on the stack now: the parameters would keep them
       alive after the code consumes them (CPython's frame does not) */
    for (int i = 0; clear_stack && i < nparams_stack; i++, k++) {
        p[k].op = DELETE_FAST;
        p[k].arg = i;
    }
    p[k].op = JUMP_FORWARD;
    p[k].arg = 0;
    p[k].target = index + npre;
    k++;
    for (int i = 0; i < npre; i++) {
        p[i].line = p[i].end_line = line;
        p[i].col = p[i].end_col = -1;
        p[i].exc_target = -1;
    }
    fj_AsmOpts opts;
    fj_bc_opts_init(&opts);
    opts.varnames = varnames;
    opts.cellvars = empty;
    opts.freevars = closure;
    opts.argcount = nparams;
    opts.posonlyargcount = 0;
    opts.kwonlyargcount = 0;
    opts.flags = co->co_flags & ~(CO_VARARGS | CO_VARKEYWORDS);
    /* resume_in_<f>_at_<line> (seeds/000), or in transparent mode the
    ** original's names, so tracebacks and inspect see the function the user
    ** wrote (the logs still call it resume_in_...: compiler.c) */
    opts.name = name ? name : co->co_name;
    opts.qualname = name ? name : co->co_qualname;
    opts.firstlineno = co->co_firstlineno; /* f_lineno - co_firstlineno as in the original */
    opts.consts = consts;
    result = fj_bc_assemble(co, &nl, &opts);
    if (result != NULL && push_lasti) {
        /* the offset is known once assembled; a constant's value does not
           change the layout, so the second assembly puts it in place */
        int at = nl.labels[raise_label] + npre;
        PyObject *off = PyLong_FromLong(nl.v[at].offset);
        if (off == NULL || PyList_SetItem(consts, PyList_GET_SIZE(consts) - 1, off) < 0)
            Py_CLEAR(result);
        else
            Py_SETREF(result, fj_bc_assemble(co, &nl, &opts));
    }
    *prefix = npre;
done:
    fj_bc_free(&nl);
    Py_XDECREF(orig_varnames);
    Py_XDECREF(varnames);
    Py_XDECREF(cellvars);
    Py_XDECREF(freevars);
    Py_XDECREF(closure);
    Py_XDECREF(empty);
    Py_XDECREF(consts);
    return result;
}

/* ---------------------------------------------------------- the cache */

/* strong dict: (orig code, index, nulls, argnames, transparent) -> (code, id) */
static PyObject *resume_cache = NULL;
/* strong dict: resume code -> (orig code, prefix, log name resume_in_<name>_at_<line>) */
static PyObject *resume_origins = NULL;
static long next_resume_id = 1;

int fj_resume_origin(PyObject *code, fj_ResumeOrigin *out)
{
    PyObject *origin = PyDict_GetItemWithError(resume_origins, code);
    if (origin == NULL)
        return PyErr_Occurred() ? -1 : 0;
    out->orig = (PyCodeObject *)PyTuple_GET_ITEM(origin, 0);
    out->prefix = (int)PyLong_AsLong(PyTuple_GET_ITEM(origin, 1));
    out->log_name = PyTuple_GET_ITEM(origin, 2);
    return 1;
}

/* Makes the resume code for point 'oindex' of the original 'orig' and
   records it under 'key'.  The cache's entry (code, id), new; NULL on error. */
static PyObject *make_resume(PyCodeObject *orig, const fj_InstrList *oil, int oindex, int nstack,
                             const unsigned char *nulls, PyObject *argnames, int transparent,
                             int oraise, PyObject *key)
{
    int prefix = 0;
    /* a handler's first instructions have no line: name it by the raise */
    PyObject *log_name = PyUnicode_FromFormat("resume_in_%U_at_%d", orig->co_name,
                                              oil->v[oraise >= 0 ? oraise : oindex].line);
    if (log_name == NULL)
        return NULL;
    PyObject *rcode = fj_resume_code(orig, oil, oindex, nstack, nulls, argnames,
                                     transparent ? NULL : log_name, transparent, oraise, &prefix);
    PyObject *org = rcode ? Py_BuildValue("(OiO)", (PyObject *)orig, prefix, log_name) : NULL;
    PyObject *entry = org ? Py_BuildValue("(Ol)", rcode, next_resume_id) : NULL;
    Py_DECREF(log_name);
    if (entry == NULL || PyDict_SetItem(resume_cache, key, entry) < 0 ||
        PyDict_SetItem(resume_origins, rcode, org) < 0)
        Py_CLEAR(entry);
    else
        next_resume_id++;
    Py_XDECREF(rcode);
    Py_XDECREF(org);
    return entry;
}

/* True for the pseudo-instructions fj_dl_split_fast_pairs splits in two. */
static int is_fast_pair(int kind)
{
    return kind == FJ_PI_LOAD_FAST_LOAD_FAST || kind == FJ_PI_STORE_FAST_LOAD_FAST ||
           kind == FJ_PI_STORE_FAST_STORE_FAST;
}

/* The index in 'il' (as decoded) of instruction 'split' of the same code
   after fj_dl_split_fast_pairs (resume code holds the split form): -2 for
   the second half of a split pair, -1 past the end. */
static int unsplit_index(const fj_InstrList *il, int split)
{
    for (int i = 0, s = 0; i < il->n; i++) {
        int w = is_fast_pair(il->v[i].p.op) ? 2 : 1;
        if (split < s + w)
            return split == s ? i : -2;
        s += w;
    }
    return -1;
}

int fj_resume_get(PyCodeObject *co, const fj_InstrList *il, int index, int nstack,
                  const unsigned char *nulls, PyObject *argnames, int transparent, int raise_at,
                  fj_ResumeRef *out)
{
    PyCodeObject *orig = co;
    const fj_InstrList *oil = il;
    fj_InstrList mapped;
    PyObject *key = NULL, *entry = NULL, *nullb = NULL;
    int rc = -1, oindex = index, oraise = raise_at;
    fj_bc_init(&mapped);
    fj_ResumeOrigin origin;
    int is_resume = fj_resume_origin((PyObject *)co, &origin);
    if (is_resume < 0)
        goto done;
    if (is_resume) {
        orig = origin.orig;
        if (fj_bc_decode(orig, &mapped) < 0)
            goto done;
        oil = &mapped;
        oindex = unsplit_index(oil, index - origin.prefix);
        if (raise_at >= 0)
            oraise = unsplit_index(oil, raise_at - origin.prefix);
        if (oindex == -2 || oraise == -2) {
            fj_unsupported("graph break inside a two-local instruction");
            goto done;
        }
    }
    if (oindex < 0 || oindex >= oil->n || (raise_at >= 0 && (oraise < 0 || oraise >= oil->n))) {
        PyErr_SetString(PyExc_SystemError, "framejit: resume point outside the original code");
        goto done;
    }
    nullb = PyBytes_FromStringAndSize((const char *)nulls, nstack);
    key = nullb ? Py_BuildValue("(OiOOii)", (PyObject *)orig, oindex, nullb, argnames, transparent,
                                oraise)
                : NULL;
    if (key == NULL)
        goto done;
    entry = Py_XNewRef(PyDict_GetItemWithError(resume_cache, key));
    if (entry == NULL && !PyErr_Occurred())
        entry = make_resume(orig, oil, oindex, nstack, nulls, argnames, transparent, oraise, key);
    if (entry == NULL)
        goto done;
    out->code = Py_NewRef(PyTuple_GET_ITEM(entry, 0));
    out->id = PyLong_AsLong(PyTuple_GET_ITEM(entry, 1));
    out->offset = oil->v[oindex].offset * 2;
    rc = 0;
done:
    fj_bc_free(&mapped);
    Py_XDECREF(key);
    Py_XDECREF(entry);
    Py_XDECREF(nullb);
    return rc;
}

void fj_resume_reset(void)
{
    next_resume_id = 1;
    PyDict_Clear(resume_cache);
    PyDict_Clear(resume_origins);
}

int fj_resume_init(void)
{
    resume_cache = PyDict_New();
    resume_origins = PyDict_New();
    return resume_cache != NULL && resume_origins != NULL ? 0 : -1;
}
