/*
** dialect_313.c: CPython 3.13's bytecode (see dialect.h).
**
** Responsible for: 3.13's opcode metadata (and the extension's own copy of
** the opcode metadata tables, which libpython keeps private), lifting 3.13
** instructions to pseudo-instructions, and emitting 3.13's spelling of calls,
** global and method loads and function creation.
**
** 3.13 in short: calls are CALL n, or LOAD_CONST kwnames; CALL_KW n, over
** [callable, NULL] or [method, self]: LOAD_GLOBAL (name << 1 | push NULL)
** and LOAD_ATTR (name << 1 | method bit) push the NULL/self *above* the
** callable (fj_dialect.null_after); MAKE_FUNCTION takes only the code and
** SET_FUNCTION_ATTRIBUTE flag adds one of defaults, kwdefaults, annotations,
** closure (the compiler emits them from the highest flag to the lowest: each
** sets the entry just below the function); COMPARE_OP's oparg is cmp << 5 |
** 16 (convert to bool) | specialization mask; TO_BOOL precedes conditional
** jumps; f-strings are CONVERT_VALUE + FORMAT_SIMPLE/FORMAT_WITH_SPEC;
** LOAD_FAST_LOAD_FAST, STORE_FAST_LOAD_FAST and STORE_FAST_STORE_FAST pack
** two 4-bit local indices; FOR_ITER's exit is END_FOR, POP_TOP, both skipped
** by an exhausted iterator; conditional jumps and JUMP_BACKWARD have an
** inline cache; conditional jumps still go forward only.
**
** LOAD_CLOSURE is a pseudo-instruction (opcode 258) that the compiler writes
** as LOAD_FAST of the cell's slot.  Instruction lists keep op = LOAD_CLOSURE
** (so fj_opcode_is_deref sees it and the assembler re-targets it by name
** under FJ_DEREF_TEMPLATE); the assembler writes fj_opcode_real(op) =
** LOAD_FAST; decoding turns a LOAD_FAST of a cell or free slot back into
** LOAD_CLOSURE (fj_opcode_decoded).  Line and exception tables keep 3.11's
** formats.
*/
/* Every dialect unit is compiled; only the running version's defines the
** opcode tables (compat.h) and the dialect: PY_VERSION_HEX comes first. */
#include <patchlevel.h>
#if PY_VERSION_HEX >= 0x030D0000 && PY_VERSION_HEX < 0x030E0000
#define FJ_DEFINE_OPCODE_TABLES 1
#endif
#include "bytecode.h"

#if FJ_SUPPORTED && PY_VERSION_HEX >= 0x030D0000 && PY_VERSION_HEX < 0x030E0000

/* INTRINSIC_* numbers of CALL_INTRINSIC_1 and the SET_FUNCTION_ATTRIBUTE
** flags (internal headers without state). */
#ifndef Py_BUILD_CORE
#define Py_BUILD_CORE 1
#define FJ_UNDEF_BUILD_CORE
#endif
#include <internal/pycore_intrinsics.h>
#include <internal/pycore_opcode_utils.h>
#ifdef FJ_UNDEF_BUILD_CORE
#undef Py_BUILD_CORE
#undef FJ_UNDEF_BUILD_CORE
#endif

const fj_Dialect fj_dialect = {"3.13", 1};

/* The base opcode of an INSTRUMENTED_* opcode (sys.monitoring), or 0 for
** INSTRUMENTED_LINE/INSTRUMENTED_INSTRUCTION, whose original opcode lives in
** the code's monitoring data, and for anything else. */
static int deinstrument(int op)
{
    switch (op) {
    case INSTRUMENTED_RESUME: return RESUME;
    case INSTRUMENTED_END_FOR: return END_FOR;
    case INSTRUMENTED_END_SEND: return END_SEND;
    case INSTRUMENTED_RETURN_VALUE: return RETURN_VALUE;
    case INSTRUMENTED_RETURN_CONST: return RETURN_CONST;
    case INSTRUMENTED_YIELD_VALUE: return YIELD_VALUE;
    case INSTRUMENTED_LOAD_SUPER_ATTR: return LOAD_SUPER_ATTR;
    case INSTRUMENTED_FOR_ITER: return FOR_ITER;
    case INSTRUMENTED_CALL: return CALL;
    case INSTRUMENTED_CALL_KW: return CALL_KW;
    case INSTRUMENTED_CALL_FUNCTION_EX: return CALL_FUNCTION_EX;
    case INSTRUMENTED_JUMP_FORWARD: return JUMP_FORWARD;
    case INSTRUMENTED_JUMP_BACKWARD: return JUMP_BACKWARD;
    case INSTRUMENTED_POP_JUMP_IF_FALSE: return POP_JUMP_IF_FALSE;
    case INSTRUMENTED_POP_JUMP_IF_TRUE: return POP_JUMP_IF_TRUE;
    case INSTRUMENTED_POP_JUMP_IF_NONE: return POP_JUMP_IF_NONE;
    case INSTRUMENTED_POP_JUMP_IF_NOT_NONE: return POP_JUMP_IF_NOT_NONE;
    default: return 0;
    }
}

int fj_opcode_caches(int op)
{
    return op >= 0 && op < 256 ? _PyOpcode_Caches[op] : 0;
}

int fj_opcode_deopt(int op)
{
    if (op < 0 || op >= 256)
        return 0;
    if (op >= MIN_INSTRUMENTED_OPCODE)
        return deinstrument(op);
    return _PyOpcode_Deopt[op];
}

/* ENTER_EXECUTOR (a tier-2 trace's entry, only in the live bytecode) and
** RESERVED are not instructions of compiled code; LOAD_CLOSURE is the one
** pseudo-instruction a list may carry (written as LOAD_FAST). */
int fj_opcode_is_base(int op)
{
    if (op == LOAD_CLOSURE)
        return 1;
    return op > 0 && op < MIN_INSTRUMENTED_OPCODE && op != EXTENDED_ARG && op != RESERVED &&
           op != ENTER_EXECUTOR && _PyOpcode_Deopt[op] == op;
}

/* 3.13 has no absolute jumps and no backward conditional jumps. */
int fj_opcode_jump_dir(int op)
{
    switch (op) {
    case JUMP_FORWARD: case POP_JUMP_IF_FALSE: case POP_JUMP_IF_TRUE: case POP_JUMP_IF_NONE:
    case POP_JUMP_IF_NOT_NONE: case FOR_ITER: case SEND:
        return 1;
    case JUMP_BACKWARD: case JUMP_BACKWARD_NO_INTERRUPT:
        return -1;
    default:
        return 0;
    }
}

int fj_opcode_jump_flip(int op)
{
    switch (op) {
    case JUMP_FORWARD: return JUMP_BACKWARD;
    case JUMP_BACKWARD: case JUMP_BACKWARD_NO_INTERRUPT: return JUMP_FORWARD;
    default: return -1; /* POP_JUMP_IF_*, FOR_ITER, SEND: forward only */
    }
}

int fj_opcode_no_fallthrough(int op)
{
    return op == JUMP_FORWARD || op == JUMP_BACKWARD || op == JUMP_BACKWARD_NO_INTERRUPT ||
           op == RETURN_VALUE || op == RETURN_CONST || op == RAISE_VARARGS || op == RERAISE;
}

/* 3.13's PyCompile_OpcodeStackEffectWithJump reads the generated metadata
** (_PyOpcode_num_popped/pushed), which is what the compiler's own stack
** depth pass uses, and knows LOAD_CLOSURE (+1). */
int fj_opcode_stack_effect(int op, int arg, int jump)
{
    return PyCompile_OpcodeStackEffectWithJump(op, arg, jump);
}

int fj_opcode_is_deref(int op)
{
    return op == MAKE_CELL || op == LOAD_CLOSURE || op == LOAD_DEREF || op == STORE_DEREF ||
           op == DELETE_DEREF || op == LOAD_FROM_DICT_OR_DEREF;
}

int fj_opcode_real(int op)
{
    return op == LOAD_CLOSURE ? LOAD_FAST : op;
}

/* The compiler lowers LOAD_CLOSURE to LOAD_FAST, and never loads a cell or
** free slot with LOAD_FAST otherwise (reads go through LOAD_DEREF). */
int fj_opcode_decoded(PyCodeObject *co, int op, int arg)
{
    if (op == LOAD_FAST && arg >= 0 && arg < FJ_CODE_NLOCALSPLUS(co) &&
        (fj_code_local_kind(co, arg) & (FJ_FAST_CELL | FJ_FAST_FREE)))
        return LOAD_CLOSURE;
    return op;
}

int fj_opcode_for_iter_exit(int k)
{
    return k == 0 ? END_FOR : k == 1 ? POP_TOP : -1;
}

int fj_dl_merge_locations(void)
{
    return 1;
}

/* 3.13's code constructor raises a stack size of 0 to 1
** (code.replace(co_stacksize=0).co_stacksize == 1). */
int fj_dl_code_stacksize(int depth)
{
    return depth > 0 ? depth : 1;
}

/* ---- lifting ----------------------------------------------------------- */

void fj_dl_lift(fj_Instr *in)
{
    int op = in->op, arg = in->arg, k = FJ_PI_OTHER, a = arg, b = 0;
    switch (op) {
    case NOP: case RESUME: case CACHE: case EXTENDED_ARG: k = FJ_PI_NOP; break;
    case POP_TOP: k = FJ_PI_POP_TOP; break;
    case PUSH_NULL: k = FJ_PI_PUSH_NULL; break;
    case COPY: k = FJ_PI_COPY; break;
    case SWAP: k = FJ_PI_SWAP; break;
    case LOAD_CONST: k = FJ_PI_LOAD_CONST; break;
    case RETURN_VALUE: k = FJ_PI_RETURN_VALUE; break;
    case RETURN_CONST: k = FJ_PI_RETURN_CONST; break;
    case LOAD_FAST: case LOAD_FAST_CHECK: k = FJ_PI_LOAD_FAST; break;
    case LOAD_FAST_AND_CLEAR: k = FJ_PI_LOAD_FAST_AND_CLEAR; break;
    case LOAD_FAST_LOAD_FAST: k = FJ_PI_LOAD_FAST_LOAD_FAST; a = arg >> 4; b = arg & 15; break;
    case STORE_FAST: k = FJ_PI_STORE_FAST; break;
    case STORE_FAST_LOAD_FAST: k = FJ_PI_STORE_FAST_LOAD_FAST; a = arg >> 4; b = arg & 15; break;
    case STORE_FAST_STORE_FAST:
        k = FJ_PI_STORE_FAST_STORE_FAST; a = arg >> 4; b = arg & 15; break;
    case DELETE_FAST: k = FJ_PI_DELETE_FAST; break;
    case MAKE_CELL: k = FJ_PI_MAKE_CELL; break;
    case COPY_FREE_VARS: k = FJ_PI_COPY_FREE_VARS; break;
    case LOAD_CLOSURE: k = FJ_PI_LOAD_CLOSURE; break;
    case LOAD_DEREF: k = FJ_PI_LOAD_DEREF; break;
    case STORE_DEREF: k = FJ_PI_STORE_DEREF; break;
    case DELETE_DEREF: k = FJ_PI_DELETE_DEREF; break;
    case LOAD_GLOBAL: k = FJ_PI_LOAD_GLOBAL; a = arg >> 1; b = arg & 1; break;
    case STORE_GLOBAL: k = FJ_PI_STORE_GLOBAL; break;
    case DELETE_GLOBAL: k = FJ_PI_DELETE_GLOBAL; break;
    case LOAD_ATTR: k = (arg & 1) ? FJ_PI_LOAD_METHOD : FJ_PI_LOAD_ATTR; a = arg >> 1; break;
    case STORE_ATTR: k = FJ_PI_STORE_ATTR; break;
    case DELETE_ATTR: k = FJ_PI_DELETE_ATTR; break;
    case CALL: k = FJ_PI_CALL; break;
    case CALL_KW: k = FJ_PI_CALL; b = 1; break;
    case CALL_FUNCTION_EX: k = FJ_PI_CALL_FUNCTION_EX; a = arg & 1; break;
    case MAKE_FUNCTION: k = FJ_PI_MAKE_FUNCTION; a = 0; break;
    case SET_FUNCTION_ATTRIBUTE: k = FJ_PI_SET_FUNCTION_ATTRIBUTE; break;
    case BINARY_OP: k = FJ_PI_BINARY_OP; break;
    case COMPARE_OP: k = FJ_PI_COMPARE_OP; a = arg >> 5; b = (arg >> 4) & 1; break;
    case IS_OP: k = FJ_PI_IS_OP; break;
    case CONTAINS_OP: k = FJ_PI_CONTAINS_OP; break;
    case UNARY_NOT: k = FJ_PI_UNARY_NOT; break;
    case UNARY_NEGATIVE: k = FJ_PI_UNARY_NEGATIVE; break;
    case UNARY_INVERT: k = FJ_PI_UNARY_INVERT; break;
    case TO_BOOL: k = FJ_PI_TO_BOOL; break;
    case CALL_INTRINSIC_1:
        if (arg == INTRINSIC_UNARY_POSITIVE) {
            k = FJ_PI_UNARY_POSITIVE;
            a = 0;
        }
        else if (arg == INTRINSIC_LIST_TO_TUPLE) {
            k = FJ_PI_LIST_TO_TUPLE;
            a = 0;
        }
        break;
    case BINARY_SUBSCR: k = FJ_PI_BINARY_SUBSCR; break;
    case STORE_SUBSCR: k = FJ_PI_STORE_SUBSCR; break;
    case DELETE_SUBSCR: k = FJ_PI_DELETE_SUBSCR; break;
    case BINARY_SLICE: k = FJ_PI_BINARY_SLICE; break;
    case STORE_SLICE: k = FJ_PI_STORE_SLICE; break;
    case BUILD_TUPLE: k = FJ_PI_BUILD_TUPLE; break;
    case BUILD_LIST: k = FJ_PI_BUILD_LIST; break;
    case BUILD_MAP: k = FJ_PI_BUILD_MAP; break;
    case BUILD_CONST_KEY_MAP: k = FJ_PI_BUILD_CONST_KEY_MAP; break;
    case BUILD_SLICE: k = FJ_PI_BUILD_SLICE; break;
    case BUILD_STRING: k = FJ_PI_BUILD_STRING; break;
    case MAP_ADD: k = FJ_PI_MAP_ADD; break;
    case DICT_UPDATE: k = FJ_PI_DICT_UPDATE; break;
    case DICT_MERGE: k = FJ_PI_DICT_MERGE; break;
    case LIST_APPEND: k = FJ_PI_LIST_APPEND; break;
    case LIST_EXTEND: k = FJ_PI_LIST_EXTEND; break;
    case CONVERT_VALUE: k = FJ_PI_CONVERT_VALUE; break;
    case FORMAT_SIMPLE: k = FJ_PI_FORMAT; a = 0; b = 0; break;
    case FORMAT_WITH_SPEC: k = FJ_PI_FORMAT; a = 0; b = 1; break;
    case UNPACK_SEQUENCE: k = FJ_PI_UNPACK_SEQUENCE; break;
    case UNPACK_EX: k = FJ_PI_UNPACK_EX; break;
    case GET_ITER: k = FJ_PI_GET_ITER; break;
    case BEFORE_WITH: k = FJ_PI_BEFORE_WITH; break;
    case PUSH_EXC_INFO: k = FJ_PI_PUSH_EXC_INFO; break;
    /* An exhausted iterator pops itself and jumps past the END_FOR and the
       POP_TOP at the target (bytecodes.c: JUMPBY(oparg + 2)). */
    case FOR_ITER: k = FJ_PI_FOR_ITER; a = 0; b = 2; break;
    case JUMP_FORWARD: case JUMP_BACKWARD: case JUMP_BACKWARD_NO_INTERRUPT:
        k = FJ_PI_JUMP; a = 0; break;
    case POP_JUMP_IF_FALSE: k = FJ_PI_POP_JUMP_IF; a = FJ_IF_FALSE; break;
    case POP_JUMP_IF_TRUE: k = FJ_PI_POP_JUMP_IF; a = FJ_IF_TRUE; break;
    case POP_JUMP_IF_NONE: k = FJ_PI_POP_JUMP_IF; a = FJ_IF_NONE; break;
    case POP_JUMP_IF_NOT_NONE: k = FJ_PI_POP_JUMP_IF; a = FJ_IF_NOT_NONE; break;
    case IMPORT_NAME: k = FJ_PI_IMPORT_NAME; break;
    case IMPORT_FROM: k = FJ_PI_IMPORT_FROM; break;
    case RAISE_VARARGS: k = FJ_PI_RAISE_VARARGS; break;
    case RERAISE: k = FJ_PI_RERAISE; break;
    default: break;
    }
    in->p.op = k;
    in->p.a = a;
    in->p.b = b;
}

/* ---- rewriting --------------------------------------------------------- */

/* The two single instructions of a two-local one: 0, or -1 if 'op' is none. */
static int split_ops(int op, int *first, int *second)
{
    switch (op) {
    case LOAD_FAST_LOAD_FAST: *first = LOAD_FAST; *second = LOAD_FAST; return 0;
    case STORE_FAST_LOAD_FAST: *first = STORE_FAST; *second = LOAD_FAST; return 0;
    case STORE_FAST_STORE_FAST: *first = STORE_FAST; *second = STORE_FAST; return 0;
    default: return -1;
    }
}

/* Each two-local instruction at i becomes (first, oparg >> 4) at i and
** (second, oparg & 15) at i + 1: jumps to it still reach its first half,
** both halves keep its position and handler. */
int fj_dl_split_fast_pairs(fj_InstrList *il)
{
    for (int i = 0; i < il->n; i++) {
        int first, second;
        if (split_ops(il->v[i].op, &first, &second) < 0)
            continue;
        if (fj_bc_insert(il, i + 1, 1) < 0)
            return -1;
        fj_Instr *a = &il->v[i], *b = &il->v[i + 1];
        int arg = a->arg;
        *b = *a;
        a->op = first;
        a->arg = arg >> 4;
        b->op = second;
        b->arg = arg & 15;
        a->ext = b->ext = 0;
        b->target = -1;
        b->offset = a->offset;
        fj_dl_lift(a);
        fj_dl_lift(b);
        i++;
    }
    return 0;
}

int fj_dl_fast_local_arg(const fj_Instr *in)
{
    switch (in->op) {
    case LOAD_FAST: case LOAD_FAST_CHECK: case LOAD_FAST_AND_CLEAR: case STORE_FAST:
    case DELETE_FAST:
        return 1; /* LOAD_FAST of a cell decodes as LOAD_CLOSURE (fj_opcode_decoded) */
    default:
        return 0;
    }
}

/* ---- emitting ---------------------------------------------------------- */

int fj_dl_load_global(fj_InstrList *il, int name_ix, int push_null)
{
    return fj_bc_emit(il, LOAD_GLOBAL, name_ix << 1 | (push_null != 0));
}

int fj_dl_load_attr(fj_InstrList *il, int name_ix)
{
    return fj_bc_emit(il, LOAD_ATTR, name_ix << 1);
}

int fj_dl_load_method(fj_InstrList *il, int name_ix)
{
    return fj_bc_emit(il, LOAD_ATTR, name_ix << 1 | 1);
}

int fj_dl_null_before(fj_InstrList *il)
{
    (void)il;
    return 0;
}

int fj_dl_null_after(fj_InstrList *il)
{
    return fj_bc_emit(il, PUSH_NULL, 0) < 0 ? -1 : 0;
}

int fj_dl_call(fj_InstrList *il, int nargs, int kw_ix)
{
    if (kw_ix >= 0) {
        if (fj_bc_emit(il, LOAD_CONST, kw_ix) < 0)
            return -1;
        return fj_bc_emit(il, CALL_KW, nargs);
    }
    return fj_bc_emit(il, CALL, nargs);
}

/* compile.c (compiler_make_closure): MAKE_FUNCTION, then closure,
** annotations, kwdefaults, defaults: each SET_FUNCTION_ATTRIBUTE takes the
** entry right below the function, the last pushed first. */
int fj_dl_make_function(fj_InstrList *il, int flags)
{
    static const int order[] = {MAKE_FUNCTION_CLOSURE, MAKE_FUNCTION_ANNOTATIONS,
                                MAKE_FUNCTION_KWDEFAULTS, MAKE_FUNCTION_DEFAULTS};
    int last = fj_bc_emit(il, MAKE_FUNCTION, 0);
    for (size_t i = 0; i < sizeof order / sizeof order[0] && last >= 0; i++)
        if (flags & order[i])
            last = fj_bc_emit(il, SET_FUNCTION_ATTRIBUTE, order[i]);
    return last;
}

int fj_dl_load_closure(fj_InstrList *il, int ix)
{
    return fj_bc_emit(il, LOAD_CLOSURE, ix);
}

#endif
