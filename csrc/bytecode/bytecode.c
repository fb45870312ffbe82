/*
** bytecode.c: CPython 3.11-3.13 instruction lists: decode, build, assemble.
**
** Responsible for: the contracts declared in bytecode.h: reading co_code,
** co_linetable and co_exceptiontable into fj_Instr arrays, the label and
** emission helpers, and the assembler (offsets, EXTENDED_ARG, zeroed caches,
** location table, exception table, stack depth, code object).  The encoders
** make the same choices as CPython's compiler (3.11 Python/compile.c, 3.12+
** Python/assemble.c): one location entry per instruction (3.11) or per run of
** instructions with equal positions (3.12+), split at 8 code units; the
** short, one-line, no-column and long forms chosen by
** write_location_info_entry's rules (unchanged since 3.11); the exception
** table's big-endian 6-bit varints (unchanged too), which is what lets a
** decode and re-assembly reproduce CPython's bytes exactly.  Everything that
** differs between versions comes from the dialect unit (dialect.h): caches,
** de-specialization, jump directions and flips, stack effects, the
** pseudo-instructions a list keeps and the assembler lowers (3.13's
** LOAD_CLOSURE), FOR_ITER's exit, location merging, the code constructor's
** minimum stack size (the code constructor itself is compat.h's fj_code_new);
** this file tests no PY_VERSION_HEX.
**
** Not responsible for: the builder's table interning (bytecode_builder.c),
** the Python test hooks (bytecode_hooks.c), the opcode metadata (the dialect unit, dialect.h).
*/
#include "bytecode.h"

#if FJ_SUPPORTED

#include <stdint.h>
#include <string.h>

/* ---- instruction lists ------------------------------------------------- */

int fj_bc_handler_transparent(const fj_InstrList *il, int h)
{
    for (int i = h; i >= 0 && i < il->n && i < h + 16; i++) {
        switch (il->v[i].p.op) {
        case FJ_PI_NOP: case FJ_PI_COPY: case FJ_PI_SWAP: case FJ_PI_POP_TOP:
        case FJ_PI_LOAD_FAST: case FJ_PI_STORE_FAST: case FJ_PI_STORE_FAST_STORE_FAST:
            continue;
        case FJ_PI_RERAISE:
            return 1;
        default:
            return 0;
        }
    }
    return 0;
}

void fj_bc_init(fj_InstrList *il)
{
    memset(il, 0, sizeof(*il));
    il->cur_line = il->cur_end_line = il->cur_col = il->cur_end_col = -1;
    il->cur_exc_target = -1;
}

void fj_bc_free(fj_InstrList *il)
{
    PyMem_Free(il->v);
    PyMem_Free(il->labels);
    fj_bc_init(il);
}

/* Makes room for 'extra' more instructions.  0, or -1 with MemoryError. */
static int instrs_reserve(fj_InstrList *il, int extra)
{
    if (il->n + extra <= il->cap)
        return 0;
    if (extra > INT_MAX / 2 - il->n) {
        PyErr_NoMemory();
        return -1;
    }
    int cap = il->cap ? il->cap : 16;
    while (cap < il->n + extra)
        cap *= 2;
    fj_Instr *v = PyMem_Realloc(il->v, (size_t)cap * sizeof(fj_Instr));
    if (v == NULL) {
        PyErr_NoMemory();
        return -1;
    }
    il->v = v;
    il->cap = cap;
    return 0;
}

static void instr_default(fj_Instr *in)
{
    in->op = NOP;
    in->arg = 0;
    in->target = -1;
    in->line = in->end_line = in->col = in->end_col = -1;
    in->exc_target = -1;
    in->exc_depth = 0;
    in->exc_lasti = 0;
    in->ext = 0;
    in->offset = 0;
    in->p.op = FJ_PI_NOP;
    in->p.a = in->p.b = 0;
}

int fj_bc_emit(fj_InstrList *il, int op, int arg)
{
    if (instrs_reserve(il, 1) < 0)
        return -1;
    fj_Instr *in = &il->v[il->n];
    instr_default(in);
    in->op = op;
    in->arg = arg;
    in->line = il->cur_line;
    in->end_line = il->cur_end_line;
    in->col = il->cur_col;
    in->end_col = il->cur_end_col;
    in->exc_target = il->cur_exc_target;
    in->exc_depth = il->cur_exc_depth;
    in->exc_lasti = il->cur_exc_lasti;
    return il->n++;
}

int fj_bc_emit_jump(fj_InstrList *il, int op, int label)
{
    int i = fj_bc_emit(il, op, 0);
    if (i >= 0)
        il->v[i].target = FJ_LABEL_REF(label);
    return i;
}

int fj_bc_new_label(fj_InstrList *il)
{
    if (il->nlabels == il->labelcap) {
        int cap = il->labelcap ? il->labelcap * 2 : 8;
        int *l = PyMem_Realloc(il->labels, (size_t)cap * sizeof(int));
        if (l == NULL) {
            PyErr_NoMemory();
            return -1;
        }
        il->labels = l;
        il->labelcap = cap;
    }
    il->labels[il->nlabels] = -1;
    return il->nlabels++;
}

int fj_bc_place_label(fj_InstrList *il, int label)
{
    if (label < 0 || label >= il->nlabels) {
        PyErr_Format(PyExc_ValueError, "bytecode: unknown label %d", label);
        return -1;
    }
    if (il->labels[label] >= 0) {
        PyErr_Format(PyExc_ValueError, "bytecode: label %d placed twice", label);
        return -1;
    }
    il->labels[label] = il->n;
    return 0;
}

void fj_bc_set_pos(fj_InstrList *il, int line, int end_line, int col, int end_col)
{
    il->cur_line = line;
    il->cur_end_line = end_line;
    il->cur_col = col;
    il->cur_end_col = end_col;
}

void fj_bc_set_handler(fj_InstrList *il, int target, int depth, int lasti)
{
    il->cur_exc_target = target;
    il->cur_exc_depth = target == -1 ? 0 : depth;
    il->cur_exc_lasti = target == -1 ? 0 : (lasti != 0);
}

int fj_bc_insert(fj_InstrList *il, int at, int count)
{
    if (at < 0 || at > il->n || count < 0) {
        PyErr_Format(PyExc_ValueError, "bytecode: cannot insert %d at %d of %d", count, at, il->n);
        return -1;
    }
    if (instrs_reserve(il, count) < 0)
        return -1;
    memmove(&il->v[at + count], &il->v[at], (size_t)(il->n - at) * sizeof(fj_Instr));
    for (int i = at; i < at + count; i++)
        instr_default(&il->v[i]);
    il->n += count;
    for (int i = 0; i < il->n; i++) {
        fj_Instr *in = &il->v[i];
        if (in->target >= at)
            in->target += count;
        if (in->exc_target >= at)
            in->exc_target += count;
    }
    for (int l = 0; l < il->nlabels; l++)
        if (il->labels[l] >= at)
            il->labels[l] += count;
    return 0;
}

/* Resolves one destination field.  0, or -1 with ValueError. */
static int resolve_one(const fj_InstrList *il, int *t, int i, const char *what)
{
    if (!FJ_IS_LABEL_REF(*t))
        return 0;
    int l = FJ_LABEL_OF(*t);
    if (l >= il->nlabels || il->labels[l] < 0) {
        PyErr_Format(PyExc_ValueError, "bytecode: %s of instruction %d uses unplaced label %d",
                     what, i, l);
        return -1;
    }
    if (il->labels[l] >= il->n) {
        PyErr_Format(PyExc_ValueError,
                     "bytecode: %s of instruction %d: label %d is after the last instruction",
                     what, i, l);
        return -1;
    }
    *t = il->labels[l];
    return 0;
}

int fj_bc_resolve_labels(fj_InstrList *il)
{
    for (int i = 0; i < il->n; i++) {
        if (resolve_one(il, &il->v[i].target, i, "jump") < 0 ||
            resolve_one(il, &il->v[i].exc_target, i, "handler") < 0)
            return -1;
    }
    return 0;
}

/* ---- decoding ---------------------------------------------------------- */

/* Location-table entry codes (Objects/locations.md, 3.11 to 3.13). */
enum {
    LOC_SHORT0 = 0,
    LOC_ONE_LINE0 = 10,
    LOC_NO_COLUMNS = 13,
    LOC_LONG = 14,
    LOC_NONE = 15,
};

typedef struct {
    const uint8_t *p, *end;
} Reader;

/* Little-endian 6-bit varint of the location table.  -1 past the end. */
static int loc_varint(Reader *r, unsigned int *out)
{
    unsigned int val = 0;
    int shift = 0;
    for (;;) {
        if (r->p >= r->end || shift > 30)
            return -1;
        uint8_t b = *r->p++;
        val |= (unsigned int)(b & 63) << shift;
        shift += 6;
        if (!(b & 64))
            break;
    }
    *out = val;
    return 0;
}

static int loc_svarint(Reader *r, int *out)
{
    unsigned int u;
    if (loc_varint(r, &u) < 0)
        return -1;
    *out = (u & 1) ? -(int)(u >> 1) : (int)(u >> 1);
    return 0;
}

/* Per-code-unit positions of 'co' into four arrays of 'n' ints (-1 = none).
** 0, or -1 with ValueError for a malformed table. */
static int decode_positions(PyCodeObject *co, int n, int *line, int *eline, int *col, int *ecol)
{
    Reader r = {(const uint8_t *)PyBytes_AS_STRING(co->co_linetable), NULL};
    r.end = r.p + PyBytes_GET_SIZE(co->co_linetable);
    int cur = co->co_firstlineno, u = 0;
    for (int k = 0; k < n; k++)
        line[k] = eline[k] = col[k] = ecol[k] = -1;
    while (r.p < r.end && u < n) {
        uint8_t first = *r.p++;
        if (!(first & 0x80))
            goto bad;
        int code = (first >> 3) & 15, len = (first & 7) + 1;
        int l = -1, el = -1, c = -1, ec = -1;
        if (code == LOC_NONE) {
        }
        else if (code == LOC_LONG) {
            int d;
            unsigned int ed, c1, ec1;
            if (loc_svarint(&r, &d) < 0 || loc_varint(&r, &ed) < 0 || loc_varint(&r, &c1) < 0 ||
                loc_varint(&r, &ec1) < 0)
                goto bad;
            cur += d;
            l = cur;
            el = cur + (int)ed;
            c = (int)c1 - 1;
            ec = (int)ec1 - 1;
        }
        else if (code == LOC_NO_COLUMNS) {
            int d;
            if (loc_svarint(&r, &d) < 0)
                goto bad;
            cur += d;
            l = el = cur;
        }
        else if (code >= LOC_ONE_LINE0) {
            if (r.end - r.p < 2)
                goto bad;
            cur += code - LOC_ONE_LINE0;
            l = el = cur;
            c = r.p[0];
            ec = r.p[1];
            r.p += 2;
        }
        else {
            if (r.p >= r.end)
                goto bad;
            uint8_t b = *r.p++;
            l = el = cur;
            c = code * 8 + ((b >> 4) & 7);
            ec = c + (b & 15);
        }
        for (int k = 0; k < len && u < n; k++, u++) {
            line[u] = l;
            eline[u] = el;
            col[u] = c;
            ecol[u] = ec;
        }
    }
    return 0;
bad:
    PyErr_SetString(PyExc_ValueError, "bytecode: malformed co_linetable");
    return -1;
}

/* Big-endian 6-bit varint of the exception table; -1 past the end. */
static int exc_varint(Reader *r, int *out)
{
    if (r->p >= r->end)
        return -1;
    uint8_t b = *r->p++;
    unsigned int val = b & 63;
    while (b & 64) {
        if (r->p >= r->end || val >= (1u << 24))
            return -1;
        b = *r->p++;
        val = (val << 6) | (b & 63);
    }
    *out = (int)val;
    return 0;
}

/* Index of the instruction a jump/handler to code unit 'u' reaches, or -1. */
static int unit_instr(const int *unit_to_instr, const fj_InstrList *il, int n, int u)
{
    if (u < 0 || u >= n)
        return -1;
    int i = unit_to_instr[u];
    /* Reaching a prefix or the opcode unit is fine; a cache unit is not. */
    if (u > il->v[i].offset + il->v[i].ext)
        return -1;
    return i;
}

int fj_bc_decode(PyCodeObject *co, fj_InstrList *out)
{
    PyObject *bytes = NULL;
    int *unit_to_instr = NULL, *pos = NULL;
    if (out->n != 0 || out->nlabels != 0) {
        PyErr_SetString(PyExc_ValueError, "bytecode: decode needs an empty list");
        return -1;
    }
    fj_bc_free(out);
    bytes = PyCode_GetCode(co);
    if (bytes == NULL)
        goto error;
    const _Py_CODEUNIT *code = (const _Py_CODEUNIT *)PyBytes_AS_STRING(bytes);
    int n = (int)(PyBytes_GET_SIZE(bytes) / sizeof(_Py_CODEUNIT));
    unit_to_instr = PyMem_Malloc(sizeof(int) * (size_t)(n + 1));
    pos = PyMem_Malloc(sizeof(int) * 4 * (size_t)(n + 1));
    if (unit_to_instr == NULL || pos == NULL) {
        PyErr_NoMemory();
        goto error;
    }
    /* Instructions. */
    for (int u = 0; u < n;) {
        int start = u, ext = 0;
        unsigned int arg = 0;
        while (u < n && _Py_OPCODE(code[u]) == EXTENDED_ARG) {
            arg = (arg | _Py_OPARG(code[u])) << 8;
            ext++;
            u++;
        }
        if (u >= n) {
            PyErr_SetString(PyExc_ValueError, "bytecode: code ends inside EXTENDED_ARG");
            goto error;
        }
        int raw = _Py_OPCODE(code[u]), op = fj_opcode_deopt(raw);
        arg |= _Py_OPARG(code[u]);
        if (!fj_opcode_is_base(op) || arg > INT_MAX) {
            PyErr_Format(PyExc_ValueError, "bytecode: bad opcode %d at offset %d", raw, 2 * u);
            goto error;
        }
        int idx = fj_bc_emit(out, fj_opcode_decoded(co, op, (int)arg), (int)arg);
        if (idx < 0)
            goto error;
        fj_Instr *in = &out->v[idx];
        in->line = in->end_line = in->col = in->end_col = -1;
        in->exc_target = -1;
        in->exc_depth = in->exc_lasti = 0;
        in->ext = ext;
        in->offset = start;
        fj_dl_lift(in);
        u += 1 + fj_opcode_caches(op);
        if (u > n) {
            PyErr_Format(PyExc_ValueError, "bytecode: code ends inside the caches of opcode %d",
                         op);
            goto error;
        }
        for (int k = start; k < u; k++)
            unit_to_instr[k] = idx;
    }
    /* Jumps. */
    for (int i = 0; i < out->n; i++) {
        fj_Instr *in = &out->v[i];
        int dir = fj_opcode_jump_dir(in->op);
        if (dir == 0)
            continue;
        long next = in->offset + in->ext + 1 + fj_opcode_caches(in->op);
        long dest = next + (long)dir * in->arg;
        int t = (dest < 0 || dest >= n) ? -1 : unit_instr(unit_to_instr, out, n, (int)dest);
        if (t < 0) {
            PyErr_Format(PyExc_ValueError, "bytecode: jump at offset %d to bad offset %ld",
                         2 * (in->offset + in->ext), 2 * dest);
            goto error;
        }
        in->target = t;
    }
    /* Positions. */
    if (decode_positions(co, n, pos, pos + n, pos + 2 * n, pos + 3 * n) < 0)
        goto error;
    for (int i = 0; i < out->n; i++) {
        fj_Instr *in = &out->v[i];
        int u = in->offset;
        in->line = pos[u];
        in->end_line = pos[n + u];
        in->col = pos[2 * n + u];
        in->end_col = pos[3 * n + u];
    }
    /* Exception table. */
    Reader r = {(const uint8_t *)PyBytes_AS_STRING(co->co_exceptiontable), NULL};
    r.end = r.p + PyBytes_GET_SIZE(co->co_exceptiontable);
    while (r.p < r.end) {
        int start, len, target, dl;
        if (!(*r.p & 0x80) || exc_varint(&r, &start) < 0 || exc_varint(&r, &len) < 0 ||
            exc_varint(&r, &target) < 0 || exc_varint(&r, &dl) < 0)
            goto bad_exc;
        int h = unit_instr(unit_to_instr, out, n, target);
        if (h < 0 || start >= n || len <= 0 || start + (long)len > n)
            goto bad_exc;
        for (int i = unit_to_instr[start]; i < out->n && out->v[i].offset < start + len; i++) {
            if (out->v[i].offset < start)
                continue;
            out->v[i].exc_target = h;
            out->v[i].exc_depth = dl >> 1;
            out->v[i].exc_lasti = dl & 1;
        }
    }
    Py_DECREF(bytes);
    PyMem_Free(unit_to_instr);
    PyMem_Free(pos);
    /* Leave the "current" state clean for later appends. */
    out->cur_line = out->cur_end_line = out->cur_col = out->cur_end_col = -1;
    out->cur_exc_target = -1;
    return 0;
bad_exc:
    PyErr_SetString(PyExc_ValueError, "bytecode: malformed co_exceptiontable");
error:
    Py_XDECREF(bytes);
    PyMem_Free(unit_to_instr);
    PyMem_Free(pos);
    fj_bc_free(out);
    return -1;
}

/* ---- stack depth ------------------------------------------------------- */

#ifndef NDEBUG
/*
** Debug builds: every instruction reachable from the entry or from an
** exception handler is reached at one stack depth from all its
** predecessors, never below zero, and RETURN_VALUE leaves an empty stack.
** 0, or -1 with SystemError naming the instruction.
*/
static int verify_depths(const fj_InstrList *il)
{
    int n = il->n, nwork = 0, rc = -1;
    int *depth = PyMem_Malloc(sizeof(int) * (size_t)(n ? n : 1));
    int *work = PyMem_Malloc(sizeof(int) * (size_t)(2 * n + 1));
    if (depth == NULL || work == NULL) {
        PyErr_NoMemory();
        goto done;
    }
    for (int k = 0; k < n; k++)
        depth[k] = -1;
#define REACH(at, d)                                                                          \
    do {                                                                                      \
        if (depth[at] < 0) {                                                                  \
            depth[at] = (d);                                                                  \
            work[nwork++] = (at);                                                             \
        }                                                                                     \
        else if (depth[at] != (d)) {                                                          \
            PyErr_Format(PyExc_SystemError,                                                   \
                         "bytecode: instruction %d reached at stack depths %d and %d", (at),  \
                         depth[at], (d));                                                     \
            goto done;                                                                        \
        }                                                                                     \
    } while (0)
    if (n > 0)
        REACH(0, 0);
    while (nwork > 0) {
        int i = work[--nwork], d = depth[i];
        const fj_Instr *in = &il->v[i];
        int eff = fj_opcode_stack_effect(in->op, in->arg, 0);
        if (in->exc_target >= 0 && in->exc_target < n)
            REACH(in->exc_target, in->exc_depth + in->exc_lasti + 1);
        if (fj_opcode_jump_dir(in->op) && in->target >= 0 && in->target < n) {
            int jd = d + fj_opcode_stack_effect(in->op, in->arg, 1);
            if (jd < 0) {
                PyErr_Format(PyExc_SystemError, "bytecode: the jump at instruction %d leaves "
                             "the stack below zero", i);
                goto done;
            }
            REACH(in->target, jd);
        }
        if (d + eff < 0 || (in->op == RETURN_VALUE && d != 1)) {
            PyErr_Format(PyExc_SystemError, "bytecode: stack depth %d at instruction %d (opcode "
                         "%d) is wrong for it", d, i, in->op);
            goto done;
        }
        if (!fj_opcode_no_fallthrough(in->op) && i + 1 < n)
            REACH(i + 1, d + eff);
    }
#undef REACH
    rc = 0;
done:
    PyMem_Free(depth);
    PyMem_Free(work);
    return rc;
}
#endif

/* Records that instruction 'i' can start at depth 'd' and queues it if that
** is deeper than seen before.  '*maxd' tracks the maximum depth. */
static void depth_push(int *depth, char *queued, int *work, int *nwork, int *maxd, int i, int d)
{
    if (d > *maxd)
        *maxd = d;
    if (d > depth[i]) {
        depth[i] = d;
        if (!queued[i]) {
            queued[i] = 1;
            work[(*nwork)++] = i;
        }
    }
}

/*
** The entry depth of the unreachable run starting at 'seek' that agrees with
** the first instruction of known depth it reaches (following fall-through
** and jumps; a RETURN_VALUE leaves the stack empty), or -1 if it reaches none
** or the answer would be negative.
*/
static int unreachable_entry_depth(const fj_InstrList *il, const int *depth, int seek)
{
    int n = il->n, rel = 0, j = seek;
    for (int steps = 0; steps < n && j >= 0 && j < n; steps++) {
        const fj_Instr *in = &il->v[j];
        if (j != seek && depth[j] >= 0)
            return depth[j] - rel >= 0 ? depth[j] - rel : -1;
        int eff = fj_opcode_stack_effect(in->op, in->arg, 0);
        if (eff == PY_INVALID_STACK_EFFECT) {
            PyErr_Clear();
            return -1;
        }
        if (in->op == RETURN_VALUE)
            return 1 - rel >= 0 ? 1 - rel : -1;
        if (fj_opcode_jump_dir(in->op) && in->target >= 0 && in->target < n) {
            int jeff = fj_opcode_stack_effect(in->op, in->arg, 1);
            if (jeff == PY_INVALID_STACK_EFFECT) {
                PyErr_Clear();
                return -1;
            }
            if (depth[in->target] >= 0)
                return depth[in->target] - rel - jeff >= 0 ? depth[in->target] - rel - jeff : -1;
            if (fj_opcode_no_fallthrough(in->op)) {
                rel += jeff;
                j = in->target;
                continue;
            }
        }
        if (fj_opcode_no_fallthrough(in->op))
            return -1;
        rel += eff;
        j++;
    }
    return -1;
}

int fj_bc_stackdepth(const fj_InstrList *il)
{
    int n = il->n, maxd = 0, nwork = 0, result = -1, i = 0;
    if (n == 0)
        return 0;
    int *depth = PyMem_Malloc(sizeof(int) * (size_t)n);
    int *work = PyMem_Malloc(sizeof(int) * (size_t)n);
    char *queued = PyMem_Calloc((size_t)n, 1);
    if (depth == NULL || work == NULL || queued == NULL) {
        PyErr_NoMemory();
        goto done;
    }
    for (int k = 0; k < n; k++)
        depth[k] = -1;
    depth_push(depth, queued, work, &nwork, &maxd, 0, 0);
    int dead = 0, seek = 0;
again:
    while (nwork > 0) {
        i = work[--nwork];
        queued[i] = 0;
        int d = depth[i];
        /* Walk the straight line from i until it ends or meets a visit at
           least as deep (which covers the rest). */
        for (;;) {
            const fj_Instr *in = &il->v[i];
            if (!fj_opcode_is_base(in->op))
                goto bad_op;
            int eff = fj_opcode_stack_effect(in->op, in->arg, 0);
            if (eff == PY_INVALID_STACK_EFFECT)
                goto bad_op;
            if (in->exc_target >= 0) {
                if (in->exc_target >= n) {
                    PyErr_Format(PyExc_ValueError,
                                 "bytecode: handler of instruction %d out of range", i);
                    goto done;
                }
                depth_push(depth, queued, work, &nwork, &maxd, in->exc_target,
                           in->exc_depth + in->exc_lasti + 1);
            }
            if (fj_opcode_jump_dir(in->op)) {
                int jeff = fj_opcode_stack_effect(in->op, in->arg, 1);
                if (in->target < 0 || in->target >= n) {
                    PyErr_Format(PyExc_ValueError,
                                 "bytecode: jump at instruction %d out of range", i);
                    goto done;
                }
                if (d + jeff < 0 && !dead)
                    goto underflow;
                depth_push(depth, queued, work, &nwork, &maxd, in->target, d + jeff);
            }
            if (d + eff < 0 && !dead)
                goto underflow;
            d = d + eff < 0 ? 0 : d + eff;
            if (d > maxd)
                maxd = d;
            if (fj_opcode_no_fallthrough(in->op) || i + 1 >= n || depth[i + 1] >= d)
                break;
            i++;
            depth[i] = d;
        }
    }
    /*
    ** Unreachable code: CPython keeps a handler whose try body is empty
    ** (reached only through its SETUP_* pseudo-instruction, which does not
    ** survive into the exception table) and counts it in co_stacksize.  Walk
    ** such runs, tolerating underflow, from the depth CPython gave them, so
    ** stack sizes match CPython's; this never lowers the depth of reachable
    ** code.  That depth is, first choice, exact: a handler's PUSH_EXC_INFO
    ** starts at the depth of its own cleanup handler (the SETUP_CLEANUP right
    ** before it ran at that depth); else the depth that makes the run agree
    ** with code of known depth it flows into (unreachable_entry_depth); else
    ** the depth the instruction before the run ends at, plus what the lost
    ** SETUP_* would have pushed.
    */
    for (; seek < n; seek++) {
        if (depth[seek] >= 0)
            continue;
        int d0 = 0;
        const fj_Instr *first = &il->v[seek];
        if (first->op == PUSH_EXC_INFO && first->exc_target >= 0)
            d0 = first->exc_depth;
        else if ((d0 = unreachable_entry_depth(il, depth, seek)) < 0) {
            d0 = 0;
            if (seek > 0 && depth[seek - 1] >= 0) {
                const fj_Instr *prev = &il->v[seek - 1];
                int e = fj_opcode_stack_effect(prev->op, prev->arg, 0);
                d0 = depth[seek - 1] + (e == PY_INVALID_STACK_EFFECT ? 0 : e);
            }
            if (first->op == PUSH_EXC_INFO)
                d0 += 1; /* a SETUP_FINALLY handler: the exception */
            else if (seek + 2 < n && first->op == LOAD_CONST && il->v[seek + 1].op == STORE_FAST &&
                     il->v[seek + 2].op == DELETE_FAST)
                d0 += 2; /* the SETUP_CLEANUP of "except ... as name": lasti, exception */
        }
        dead = 1;
        depth_push(depth, queued, work, &nwork, &maxd, seek, d0 < 0 ? 0 : d0);
        goto again;
    }
    result = fj_dl_code_stacksize(maxd);
    goto done;
bad_op:
    PyErr_Clear();
    PyErr_Format(PyExc_ValueError, "bytecode: bad opcode %d (arg %d) at instruction %d",
                 il->v[i].op, il->v[i].arg, i);
    goto done;
underflow:
    PyErr_Format(PyExc_ValueError, "bytecode: stack underflow at instruction %d (opcode %d)", i,
                 il->v[i].op);
done:
    PyMem_Free(depth);
    PyMem_Free(work);
    PyMem_Free(queued);
    return result;
}

/* ---- assembling -------------------------------------------------------- */

void fj_bc_opts_init(fj_AsmOpts *o)
{
    memset(o, 0, sizeof(*o));
    o->argcount = o->posonlyargcount = o->kwonlyargcount = -1;
    o->flags = -1;
    o->firstlineno = -1;
    o->deref_layout = FJ_DEREF_TEMPLATE;
}

typedef struct {
    uint8_t *b;
    Py_ssize_t n, cap;
} Buf;

static int buf_put(Buf *bf, uint8_t c)
{
    if (bf->n == bf->cap) {
        Py_ssize_t cap = bf->cap ? bf->cap * 2 : 64;
        uint8_t *b = PyMem_Realloc(bf->b, (size_t)cap);
        if (b == NULL) {
            PyErr_NoMemory();
            return -1;
        }
        bf->b = b;
        bf->cap = cap;
    }
    bf->b[bf->n++] = c;
    return 0;
}

static int put_loc_varint(Buf *bf, unsigned int val)
{
    while (val >= 64) {
        if (buf_put(bf, (uint8_t)(64 | (val & 63))) < 0)
            return -1;
        val >>= 6;
    }
    return buf_put(bf, (uint8_t)val);
}

static int put_loc_svarint(Buf *bf, int val)
{
    unsigned int u = val < 0 ? ((0u - (unsigned int)val) << 1) | 1 : (unsigned int)val << 1;
    return put_loc_varint(bf, u);
}

/* One location entry of 'len' (1..8) code units for 'in'; '*cur' is the
** running line.  Same form choices as compile.c write_location_info_entry. */
static int put_loc_entry(Buf *bf, const fj_Instr *in, int len, int *cur)
{
#define FIRST(code) buf_put(bf, (uint8_t)(0x80 | ((code) << 3) | (len - 1)))
    if (in->line < 0)
        return FIRST(LOC_NONE);
    int delta = in->line - *cur, col = in->col, ecol = in->end_col;
    if (col < 0 || ecol < 0) {
        if (in->end_line == in->line || in->end_line == -1) {
            *cur = in->line;
            return FIRST(LOC_NO_COLUMNS) < 0 ? -1 : put_loc_svarint(bf, delta);
        }
    }
    else if (in->end_line == in->line) {
        if (delta == 0 && col < 80 && ecol - col < 16 && ecol >= col) {
            if (FIRST(LOC_SHORT0 + (col >> 3)) < 0)
                return -1;
            return buf_put(bf, (uint8_t)(((col & 7) << 4) | (ecol - col)));
        }
        if (delta >= 0 && delta < 3 && col < 128 && ecol < 128) {
            *cur = in->line;
            if (FIRST(LOC_ONE_LINE0 + delta) < 0 || buf_put(bf, (uint8_t)col) < 0)
                return -1;
            return buf_put(bf, (uint8_t)ecol);
        }
    }
    *cur = in->line;
    if (FIRST(LOC_LONG) < 0 || put_loc_svarint(bf, delta) < 0 ||
        put_loc_varint(bf, (unsigned int)(in->end_line - in->line)) < 0 ||
        put_loc_varint(bf, (unsigned int)(col + 1)) < 0)
        return -1;
    return put_loc_varint(bf, (unsigned int)(ecol + 1));
#undef FIRST
}

/* Same source position (compile.c/assemble.c same_location). */
static int same_position(const fj_Instr *a, const fj_Instr *b)
{
    return a->line == b->line && a->end_line == b->end_line && a->col == b->col &&
           a->end_col == b->end_col;
}

static int put_exc_item(Buf *bf, int value, int msb)
{
    for (int shift = 24; shift > 0; shift -= 6) {
        if (value >= 1 << shift) {
            if (buf_put(bf, (uint8_t)(((value >> shift) & 63) | 64 | msb)) < 0)
                return -1;
            msb = 0;
        }
    }
    return buf_put(bf, (uint8_t)((value & 63) | msb));
}

static int put_exc_entry(Buf *bf, int start, int end, const fj_Instr *h, const fj_Instr *in)
{
    if (put_exc_item(bf, start, 0x80) < 0 || put_exc_item(bf, end - start, 0) < 0 ||
        put_exc_item(bf, h->offset, 0) < 0)
        return -1;
    return put_exc_item(bf, (in->exc_depth << 1) | in->exc_lasti, 0);
}

/* EXTENDED_ARG prefixes 'arg' needs. */
static int ext_needed(unsigned int arg)
{
    return arg > 0xffffff ? 3 : arg > 0xffff ? 2 : arg > 0xff ? 1 : 0;
}

static int instr_units(const fj_Instr *in, int ext)
{
    return ext + 1 + fj_opcode_caches(fj_opcode_real(in->op));
}

/* Checks opcodes, args and destinations; flips jumps whose destination
** needs the other direction.  0, or -1 with ValueError. */
static int validate(fj_InstrList *il)
{
    int n = il->n;
    for (int i = 0; i < n; i++) {
        fj_Instr *in = &il->v[i];
        if (!fj_opcode_is_base(in->op)) {
            PyErr_Format(PyExc_ValueError, "bytecode: bad opcode %d at instruction %d", in->op, i);
            return -1;
        }
        if (in->arg < 0) {
            PyErr_Format(PyExc_ValueError, "bytecode: negative arg %d at instruction %d", in->arg,
                         i);
            return -1;
        }
        if (in->ext < 0 || in->ext > 3) {
            PyErr_Format(PyExc_ValueError, "bytecode: bad EXTENDED_ARG count %d at instruction %d",
                         in->ext, i);
            return -1;
        }
        if (in->exc_target != -1) {
            if (in->exc_target < 0 || in->exc_target >= n) {
                PyErr_Format(PyExc_ValueError,
                             "bytecode: handler target %d of instruction %d out of range (0..%d)",
                             in->exc_target, i, n - 1);
                return -1;
            }
            if (in->exc_depth < 0 || in->exc_depth > (1 << 28)) {
                PyErr_Format(PyExc_ValueError, "bytecode: bad handler depth %d at instruction %d",
                             in->exc_depth, i);
                return -1;
            }
            in->exc_lasti = in->exc_lasti != 0;
        }
        int dir = fj_opcode_jump_dir(in->op);
        if (dir == 0)
            continue;
        if (in->target < 0 || in->target >= n) {
            PyErr_Format(PyExc_ValueError,
                         "bytecode: jump target %d of instruction %d out of range (0..%d)",
                         in->target, i, n - 1);
            return -1;
        }
        /* Forward reaches indices >= i+1, backward indices <= i+1. */
        if ((dir > 0 && in->target < i + 1) || (dir < 0 && in->target > i + 1)) {
            int flipped = fj_opcode_jump_flip(in->op);
            if (flipped < 0) {
                /* FOR_ITER, SEND, 3.11's JUMP_IF_*_OR_POP and 3.12+'s
                   POP_JUMP_IF_* have no backward form: never emit them with a
                   wrong offset. */
                PyErr_Format(PyExc_ValueError,
                             "bytecode: opcode %d at instruction %d cannot jump backward (to "
                             "instruction %d): CPython %s has no backward form of it",
                             in->op, i, in->target, fj_dialect.name);
                return -1;
            }
            in->op = flipped;
        }
        /* An exhausted FOR_ITER skips a fixed number of instructions at its
           target (3.12+), whatever they are: they must be the ones it skips. */
        for (int k = 0, x; in->op == FOR_ITER && (x = fj_opcode_for_iter_exit(k)) >= 0; k++) {
            if (in->target + k >= n || il->v[in->target + k].op != x) {
                PyErr_Format(PyExc_ValueError,
                             "bytecode: the FOR_ITER at instruction %d exits to instruction %d, "
                             "where CPython %s needs opcode %d at +%d (an exhausted iterator "
                             "skips it)",
                             i, in->target, fj_dialect.name, x, k);
                return -1;
            }
        }
    }
    return 0;
}

/* Sets offsets and jump args (in 'args' and in the list), growing the
** EXTENDED_ARG counts in 'ext' (which start at their minimum) until
** stable.  Returns the total size in code units, or -1 if too large. */
static long layout(fj_InstrList *il, int *args, int *ext)
{
    int n = il->n;
    long total;
    int changed;
    do {
        total = 0;
        for (int i = 0; i < n; i++) {
            il->v[i].offset = (int)total;
            total += instr_units(&il->v[i], ext[i]);
            if (total > INT_MAX / 4)
                return -1;
        }
        changed = 0;
        for (int i = 0; i < n; i++) {
            fj_Instr *in = &il->v[i];
            int dir = fj_opcode_jump_dir(in->op);
            if (dir == 0)
                continue;
            int next = in->offset + instr_units(in, ext[i]);
            int dest = il->v[in->target].offset;
            in->arg = args[i] = dir > 0 ? dest - next : next - dest;
            int need = ext_needed((unsigned int)in->arg);
            if (need > ext[i]) {
                ext[i] = need; /* sizes only grow, so this terminates */
                changed = 1;
            }
        }
    } while (changed);
    return total;
}

/*
** The localsplus index in the new layout of template slot 'j', or -1.  A
** name that is a free variable of the new code is found there whatever its
** kind in the template (resume functions turn the template's cells into
** free variables).
*/
static int remap_deref(PyCodeObject *tmpl, int j, PyObject *varnames, PyObject *cellvars,
                       PyObject *freevars)
{
    if (j < 0 || j >= tmpl->co_nlocalsplus)
        return -1;
    PyObject *name = PyTuple_GET_ITEM(tmpl->co_localsplusnames, j);
    Py_ssize_t nv = PyTuple_GET_SIZE(varnames), nc = PyTuple_GET_SIZE(cellvars);
    for (Py_ssize_t k = 0; k < PyTuple_GET_SIZE(freevars); k++)
        if (PyUnicode_Compare(PyTuple_GET_ITEM(freevars, k), name) == 0) {
            int idx = (int)nv;
            for (Py_ssize_t c = 0; c < nc; c++)
                if (PySequence_Contains(varnames, PyTuple_GET_ITEM(cellvars, c)) == 0)
                    idx++;
            return idx + (int)k;
        }
    if (fj_code_local_kind(tmpl, j) & FJ_FAST_FREE)
        return -1;
    for (Py_ssize_t k = 0; k < nv; k++)
        if (PyUnicode_Compare(PyTuple_GET_ITEM(varnames, k), name) == 0)
            return (int)k;
    int idx = (int)nv;
    for (Py_ssize_t c = 0; c < nc; c++) {
        PyObject *cn = PyTuple_GET_ITEM(cellvars, c);
        if (PySequence_Contains(varnames, cn) == 1)
            continue;
        if (PyUnicode_Compare(cn, name) == 0)
            return idx;
        idx++;
    }
    return -1;
}

/* A new tuple from a tuple or list 'v', or a new reference to 'dflt'. */
static PyObject *as_tuple(PyObject *v, PyObject *dflt)
{
    if (v == NULL)
        return Py_NewRef(dflt);
    if (PyTuple_Check(v))
        return Py_NewRef(v);
    if (PyList_Check(v))
        return PyList_AsTuple(v);
    PyErr_SetString(PyExc_TypeError, "bytecode: expected a tuple or list");
    return NULL;
}

/* 0 if every item of tuple 't' is a str, else -1 with TypeError. */
static int all_str(PyObject *t, const char *what)
{
    for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(t); i++)
        if (!PyUnicode_Check(PyTuple_GET_ITEM(t, i))) {
            PyErr_Format(PyExc_TypeError, "bytecode: %s must hold only str", what);
            return -1;
        }
    return 0;
}

PyObject *fj_bc_assemble(PyCodeObject *tmpl, fj_InstrList *il, const fj_AsmOpts *opts)
{
    fj_AsmOpts dflt;
    PyObject *tv = NULL, *tc = NULL, *tf = NULL;
    PyObject *consts = NULL, *names = NULL, *varnames = NULL, *cellvars = NULL,
             *freevars = NULL;
    PyObject *code = NULL, *linetable = NULL, *exctable = NULL, *result = NULL;
    int *ext = NULL, *args = NULL;
    Buf lt = {0}, et = {0};
    if (opts == NULL) {
        fj_bc_opts_init(&dflt);
        opts = &dflt;
    }
    if (il->n == 0) {
        PyErr_SetString(PyExc_ValueError, "bytecode: cannot assemble an empty instruction list");
        return NULL;
    }
    if (fj_bc_resolve_labels(il) < 0 || validate(il) < 0)
        return NULL;
    tv = PyCode_GetVarnames(tmpl);
    tc = PyCode_GetCellvars(tmpl);
    tf = PyCode_GetFreevars(tmpl);
    if (tv == NULL || tc == NULL || tf == NULL)
        goto error;
    consts = as_tuple(opts->consts, tmpl->co_consts);
    names = consts ? as_tuple(opts->names, tmpl->co_names) : NULL;
    varnames = names ? as_tuple(opts->varnames, tv) : NULL;
    cellvars = varnames ? as_tuple(opts->cellvars, tc) : NULL;
    freevars = cellvars ? as_tuple(opts->freevars, tf) : NULL;
    if (freevars == NULL || all_str(names, "names") < 0 || all_str(varnames, "varnames") < 0 ||
        all_str(cellvars, "cellvars") < 0 || all_str(freevars, "freevars") < 0)
        goto error;

    int n = il->n;
    ext = PyMem_Malloc(sizeof(int) * (size_t)n);
    args = PyMem_Malloc(sizeof(int) * (size_t)n);
    if (ext == NULL || args == NULL) {
        PyErr_NoMemory();
        goto error;
    }
    /* Deref args in the final layout (the list keeps the caller's). */
    int same_layout = opts->varnames == NULL && opts->cellvars == NULL && opts->freevars == NULL;
    int remap = opts->deref_layout == FJ_DEREF_TEMPLATE && !same_layout;
    for (int i = 0; i < n; i++) {
        fj_Instr *in = &il->v[i];
        args[i] = in->arg;
        if (remap && fj_opcode_is_deref(in->op)) {
            args[i] = remap_deref(tmpl, in->arg, varnames, cellvars, freevars);
            if (args[i] < 0) {
                if (!PyErr_Occurred())
                    PyErr_Format(PyExc_ValueError,
                                 "bytecode: deref arg %d of instruction %d names no cell or free "
                                 "variable of the new code",
                                 in->arg, i);
                goto error;
            }
        }
    }
    for (int i = 0; i < n; i++) { /* minimum prefixes; layout() sizes jumps */
        fj_Instr *in = &il->v[i];
        int need = fj_opcode_jump_dir(in->op) ? 0 : ext_needed((unsigned int)args[i]);
        ext[i] = need > in->ext ? need : in->ext;
    }
    long total = layout(il, args, ext);
    if (total < 0) {
        PyErr_SetString(PyExc_ValueError, "bytecode: code too large");
        goto error;
    }
    code = PyBytes_FromStringAndSize(NULL, total * (Py_ssize_t)sizeof(_Py_CODEUNIT));
    if (code == NULL)
        goto error;
    uint8_t *w = (uint8_t *)PyBytes_AS_STRING(code);
    for (int i = 0; i < n; i++) {
        fj_Instr *in = &il->v[i];
        unsigned int a = (unsigned int)args[i];
        for (int k = ext[i]; k > 0; k--) {
            *w++ = EXTENDED_ARG;
            *w++ = (uint8_t)((a >> (8 * k)) & 0xff);
        }
        int real = fj_opcode_real(in->op);
        *w++ = (uint8_t)real;
        *w++ = (uint8_t)(a & 0xff);
        int caches = fj_opcode_caches(real);
        memset(w, 0, (size_t)caches * sizeof(_Py_CODEUNIT));
        w += caches * sizeof(_Py_CODEUNIT);
    }
    /* Location table: one entry per instruction (3.11) or per run of
       instructions with equal positions (3.12+), split every 8 units. */
    int firstlineno = opts->firstlineno >= 0 ? opts->firstlineno : tmpl->co_firstlineno;
    int cur = firstlineno, merge = fj_dl_merge_locations();
    for (int i = 0; i < n;) {
        int units = instr_units(&il->v[i], ext[i]), j = i + 1;
        for (; merge && j < n && same_position(&il->v[i], &il->v[j]); j++)
            units += instr_units(&il->v[j], ext[j]);
        for (; units > 8; units -= 8)
            if (put_loc_entry(&lt, &il->v[i], 8, &cur) < 0)
                goto error;
        if (put_loc_entry(&lt, &il->v[i], units, &cur) < 0)
            goto error;
        i = j;
    }
    /* Exception table: runs of instructions with the same handler. */
    for (int i = 0; i < n;) {
        fj_Instr *in = &il->v[i];
        if (in->exc_target < 0) {
            i++;
            continue;
        }
        int j = i + 1;
        while (j < n && il->v[j].exc_target == in->exc_target &&
               il->v[j].exc_depth == in->exc_depth && il->v[j].exc_lasti == in->exc_lasti)
            j++;
        int end = j < n ? il->v[j].offset
                        : il->v[n - 1].offset + instr_units(&il->v[n - 1], ext[n - 1]);
        if (put_exc_entry(&et, in->offset, end, &il->v[in->exc_target], in) < 0)
            goto error;
        i = j;
    }
    int stacksize = fj_bc_stackdepth(il);
    if (stacksize < 0)
        goto error;
#ifndef NDEBUG
    if (verify_depths(il) < 0)
        goto error;
#endif
    linetable = PyBytes_FromStringAndSize((const char *)lt.b, lt.n);
    exctable = PyBytes_FromStringAndSize((const char *)et.b, et.n);
    if (linetable == NULL || exctable == NULL)
        goto error;
    result = (PyObject *)fj_code_new(
        opts->argcount >= 0 ? opts->argcount : tmpl->co_argcount,
        opts->posonlyargcount >= 0 ? opts->posonlyargcount : tmpl->co_posonlyargcount,
        opts->kwonlyargcount >= 0 ? opts->kwonlyargcount : tmpl->co_kwonlyargcount,
        (int)PyTuple_GET_SIZE(varnames), stacksize, opts->flags >= 0 ? opts->flags : tmpl->co_flags,
        code, consts, names, varnames, freevars, cellvars, tmpl->co_filename,
        opts->name ? opts->name : tmpl->co_name, opts->qualname ? opts->qualname : tmpl->co_qualname,
        firstlineno, linetable, exctable);
error:
    Py_XDECREF(tv);
    Py_XDECREF(tc);
    Py_XDECREF(tf);
    Py_XDECREF(consts);
    Py_XDECREF(names);
    Py_XDECREF(varnames);
    Py_XDECREF(cellvars);
    Py_XDECREF(freevars);
    Py_XDECREF(code);
    Py_XDECREF(linetable);
    Py_XDECREF(exctable);
    PyMem_Free(ext);
    PyMem_Free(args);
    PyMem_Free(lt.b);
    PyMem_Free(et.b);
    return result;
}

#endif /* FJ_SUPPORTED */
