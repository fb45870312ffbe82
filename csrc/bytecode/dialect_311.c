/*
** dialect_311.c: CPython 3.11's bytecode (see dialect.h).
**
** Responsible for: 3.11's opcode metadata (and the extension's own copy of
** _PyOpcode_Caches/_PyOpcode_Deopt, which libpython 3.11 keeps private),
** lifting 3.11 instructions to pseudo-instructions, and emitting 3.11's
** spelling of calls, global and method loads and function creation.
**
** 3.11 in short: calls are [KW_NAMES k] PRECALL n, CALL n over
** [NULL, callable] or [method, self]; LOAD_GLOBAL's oparg is name << 1 |
** push NULL (NULL pushed first); LOAD_METHOD is its own opcode; conditional
** jumps have FORWARD and BACKWARD forms and JUMP_IF_*_OR_POP; COMPARE_OP's
** oparg is the comparison; FORMAT_VALUE carries conversion and spec flags.
*/
/* Every dialect unit is compiled; only the running version's defines the
** opcode tables (compat.h) and the dialect: PY_VERSION_HEX comes first. */
#include <patchlevel.h>
#if PY_VERSION_HEX >= 0x030B0000 && PY_VERSION_HEX < 0x030C0000
#define FJ_DEFINE_OPCODE_TABLES 1
#endif
#include "bytecode.h"

#if FJ_SUPPORTED && PY_VERSION_HEX >= 0x030B0000 && PY_VERSION_HEX < 0x030C0000

const fj_Dialect fj_dialect = {"3.11", 0};

int fj_opcode_caches(int op)
{
    return op >= 0 && op < 256 ? _PyOpcode_Caches[op] : 0;
}

int fj_opcode_deopt(int op)
{
    return op >= 0 && op < 256 ? _PyOpcode_Deopt[op] : 0;
}

int fj_opcode_is_base(int op)
{
    return op > 0 && op < 256 && op != EXTENDED_ARG && _PyOpcode_Deopt[op] == op;
}

/* 3.11 has no absolute jumps. */
int fj_opcode_jump_dir(int op)
{
    switch (op) {
    case JUMP_FORWARD: case POP_JUMP_FORWARD_IF_FALSE: case POP_JUMP_FORWARD_IF_TRUE:
    case POP_JUMP_FORWARD_IF_NONE: case POP_JUMP_FORWARD_IF_NOT_NONE:
    case JUMP_IF_FALSE_OR_POP: case JUMP_IF_TRUE_OR_POP: case FOR_ITER: case SEND:
        return 1;
    case JUMP_BACKWARD: case JUMP_BACKWARD_NO_INTERRUPT: case POP_JUMP_BACKWARD_IF_FALSE:
    case POP_JUMP_BACKWARD_IF_TRUE: case POP_JUMP_BACKWARD_IF_NONE:
    case POP_JUMP_BACKWARD_IF_NOT_NONE:
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
    case POP_JUMP_FORWARD_IF_FALSE: return POP_JUMP_BACKWARD_IF_FALSE;
    case POP_JUMP_FORWARD_IF_TRUE: return POP_JUMP_BACKWARD_IF_TRUE;
    case POP_JUMP_FORWARD_IF_NONE: return POP_JUMP_BACKWARD_IF_NONE;
    case POP_JUMP_FORWARD_IF_NOT_NONE: return POP_JUMP_BACKWARD_IF_NOT_NONE;
    case POP_JUMP_BACKWARD_IF_FALSE: return POP_JUMP_FORWARD_IF_FALSE;
    case POP_JUMP_BACKWARD_IF_TRUE: return POP_JUMP_FORWARD_IF_TRUE;
    case POP_JUMP_BACKWARD_IF_NONE: return POP_JUMP_FORWARD_IF_NONE;
    case POP_JUMP_BACKWARD_IF_NOT_NONE: return POP_JUMP_FORWARD_IF_NOT_NONE;
    default: return -1;
    }
}

int fj_opcode_no_fallthrough(int op)
{
    return op == JUMP_FORWARD || op == JUMP_BACKWARD || op == JUMP_BACKWARD_NO_INTERRUPT ||
           op == RETURN_VALUE || op == RAISE_VARARGS || op == RERAISE;
}

/* 3.11's PyCompile_OpcodeStackEffectWithJump says 0 for RETURN_GENERATOR,
** but the generator's frame resumes after it with the sent value pushed
** (the POP_TOP that follows removes it), so it counts +1 here. */
int fj_opcode_stack_effect(int op, int arg, int jump)
{
    if (op == RETURN_GENERATOR)
        return 1;
    return PyCompile_OpcodeStackEffectWithJump(op, arg, jump);
}

int fj_opcode_is_deref(int op)
{
    return op == MAKE_CELL || op == LOAD_CLOSURE || op == LOAD_DEREF || op == STORE_DEREF ||
           op == DELETE_DEREF || op == LOAD_CLASSDEREF;
}

/* 3.11 lowers no pseudo-instruction the list keeps. */
int fj_opcode_real(int op)
{
    return op;
}

int fj_opcode_decoded(PyCodeObject *co, int op, int arg)
{
    (void)co;
    (void)arg;
    return op;
}

int fj_opcode_for_iter_exit(int k)
{
    (void)k;
    return -1; /* an exhausted FOR_ITER lands on its target */
}

int fj_dl_merge_locations(void)
{
    return 0;
}

int fj_dl_code_stacksize(int depth)
{
    return depth;
}

/* ---- lifting ----------------------------------------------------------- */

void fj_dl_lift(fj_Instr *in)
{
    int op = in->op, arg = in->arg, k = FJ_PI_OTHER, a = arg, b = 0;
    switch (op) {
    case NOP: case RESUME: case CACHE: case EXTENDED_ARG: k = FJ_PI_NOP; break;
    case PRECALL: k = FJ_PI_PRECALL; break;
    case IMPORT_NAME: k = FJ_PI_IMPORT_NAME; break;
    case IMPORT_FROM: k = FJ_PI_IMPORT_FROM; break;
    case RAISE_VARARGS: k = FJ_PI_RAISE_VARARGS; break;
    case RERAISE: k = FJ_PI_RERAISE; break;
    case POP_TOP: k = FJ_PI_POP_TOP; break;
    case PUSH_NULL: k = FJ_PI_PUSH_NULL; break;
    case COPY: k = FJ_PI_COPY; break;
    case SWAP: k = FJ_PI_SWAP; break;
    case LOAD_CONST: k = FJ_PI_LOAD_CONST; break;
    case RETURN_VALUE: k = FJ_PI_RETURN_VALUE; break;
    case LOAD_FAST: k = FJ_PI_LOAD_FAST; break;
    case STORE_FAST: k = FJ_PI_STORE_FAST; break;
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
    case LOAD_ATTR: k = FJ_PI_LOAD_ATTR; break;
    case LOAD_METHOD: k = FJ_PI_LOAD_METHOD; break;
    case STORE_ATTR: k = FJ_PI_STORE_ATTR; break;
    case DELETE_ATTR: k = FJ_PI_DELETE_ATTR; break;
    case KW_NAMES: k = FJ_PI_KW_NAMES; break;
    case CALL: k = FJ_PI_CALL; break;
    case CALL_FUNCTION_EX: k = FJ_PI_CALL_FUNCTION_EX; a = arg & 1; break;
    case MAKE_FUNCTION: k = FJ_PI_MAKE_FUNCTION; break;
    case BINARY_OP: k = FJ_PI_BINARY_OP; break;
    case COMPARE_OP: k = FJ_PI_COMPARE_OP; break;
    case IS_OP: k = FJ_PI_IS_OP; break;
    case CONTAINS_OP: k = FJ_PI_CONTAINS_OP; break;
    case UNARY_NOT: k = FJ_PI_UNARY_NOT; break;
    case UNARY_NEGATIVE: k = FJ_PI_UNARY_NEGATIVE; break;
    case UNARY_POSITIVE: k = FJ_PI_UNARY_POSITIVE; break;
    case UNARY_INVERT: k = FJ_PI_UNARY_INVERT; break;
    case BINARY_SUBSCR: k = FJ_PI_BINARY_SUBSCR; break;
    case STORE_SUBSCR: k = FJ_PI_STORE_SUBSCR; break;
    case DELETE_SUBSCR: k = FJ_PI_DELETE_SUBSCR; break;
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
    case LIST_TO_TUPLE: k = FJ_PI_LIST_TO_TUPLE; break;
    case FORMAT_VALUE: k = FJ_PI_FORMAT; a = arg & 3; b = (arg & 4) != 0; break;
    case UNPACK_SEQUENCE: k = FJ_PI_UNPACK_SEQUENCE; break;
    case UNPACK_EX: k = FJ_PI_UNPACK_EX; break;
    case GET_ITER: k = FJ_PI_GET_ITER; break;
    case BEFORE_WITH: k = FJ_PI_BEFORE_WITH; break;
    case PUSH_EXC_INFO: k = FJ_PI_PUSH_EXC_INFO; break;
    case FOR_ITER: k = FJ_PI_FOR_ITER; a = 0; b = 0; break;
    case JUMP_FORWARD: case JUMP_BACKWARD: case JUMP_BACKWARD_NO_INTERRUPT:
        k = FJ_PI_JUMP; a = 0; break;
    case POP_JUMP_FORWARD_IF_FALSE: case POP_JUMP_BACKWARD_IF_FALSE:
        k = FJ_PI_POP_JUMP_IF; a = FJ_IF_FALSE; break;
    case POP_JUMP_FORWARD_IF_TRUE: case POP_JUMP_BACKWARD_IF_TRUE:
        k = FJ_PI_POP_JUMP_IF; a = FJ_IF_TRUE; break;
    case POP_JUMP_FORWARD_IF_NONE: case POP_JUMP_BACKWARD_IF_NONE:
        k = FJ_PI_POP_JUMP_IF; a = FJ_IF_NONE; break;
    case POP_JUMP_FORWARD_IF_NOT_NONE: case POP_JUMP_BACKWARD_IF_NOT_NONE:
        k = FJ_PI_POP_JUMP_IF; a = FJ_IF_NOT_NONE; break;
    case JUMP_IF_FALSE_OR_POP: k = FJ_PI_JUMP_IF_OR_POP; a = FJ_IF_FALSE; break;
    case JUMP_IF_TRUE_OR_POP: k = FJ_PI_JUMP_IF_OR_POP; a = FJ_IF_TRUE; break;
    default: break;
    }
    in->p.op = k;
    in->p.a = a;
    in->p.b = b;
}

/* ---- emitting ---------------------------------------------------------- */

int fj_dl_load_global(fj_InstrList *il, int name_ix, int push_null)
{
    return fj_bc_emit(il, LOAD_GLOBAL, name_ix << 1 | (push_null != 0));
}

int fj_dl_load_attr(fj_InstrList *il, int name_ix)
{
    return fj_bc_emit(il, LOAD_ATTR, name_ix);
}

int fj_dl_load_method(fj_InstrList *il, int name_ix)
{
    return fj_bc_emit(il, LOAD_METHOD, name_ix);
}

int fj_dl_null_before(fj_InstrList *il)
{
    return fj_bc_emit(il, PUSH_NULL, 0) < 0 ? -1 : 0;
}

int fj_dl_null_after(fj_InstrList *il)
{
    (void)il;
    return 0;
}

int fj_dl_call(fj_InstrList *il, int nargs, int kw_ix)
{
    if (kw_ix >= 0 && fj_bc_emit(il, KW_NAMES, kw_ix) < 0)
        return -1;
    if (fj_bc_emit(il, PRECALL, nargs) < 0)
        return -1;
    return fj_bc_emit(il, CALL, nargs);
}

int fj_dl_make_function(fj_InstrList *il, int flags)
{
    return fj_bc_emit(il, MAKE_FUNCTION, flags);
}

int fj_dl_load_closure(fj_InstrList *il, int ix)
{
    return fj_bc_emit(il, LOAD_CLOSURE, ix);
}

/* ---- rewriting --------------------------------------------------------- */

int fj_dl_split_fast_pairs(fj_InstrList *il)
{
    (void)il; /* 3.11 has no two-local instructions */
    return 0;
}

int fj_dl_fast_local_arg(const fj_Instr *in)
{
    return in->op == LOAD_FAST || in->op == STORE_FAST || in->op == DELETE_FAST;
}

#endif
