/*
** dialect.h: one CPython version's bytecode, seen through version-free
** pseudo-instructions.
**
** Responsible for: the interface every dialect unit implements
** (dialect_311.c, dialect_312.c, dialect_313.c; every unit is compiled, and
** only the running CPython's has content, under its own version #if): the
** opcode metadata the assembler needs
** (inline caches, de-specialization, jump directions, stack effects), the
** lifting of a real instruction into a pseudo-instruction (fj_dl_lift), and
** the emitters for the sequences whose shape differs per version (a call, a
** global or method load, the NULL beside a callable, a function creation).
**
** Not responsible for: the runtime interface (frames, code extra, the eval
** hook: compat.h), decoding and assembling (bytecode.c, which keeps the
** real opcode and oparg of every instruction so a round trip is exact).
**
** Model.  Decoding keeps each real instruction (fj_Instr.op/arg, one entry
** per instruction, EXTENDED_ARG folded, caches implicit) and fills its
** pseudo-instruction fj_Instr.p: what the tracer, resume planning and
** liveness switch on.  A pseudo-instruction has a kind (FJ_PI_*; the graph's
** FJ_OP_* are operator kinds, unrelated) and two
** normalized operands a and b; jump destinations stay in fj_Instr.target.
** Kinds follow the real instructions closely: where versions spell one
** operation differently (LOAD_METHOD or LOAD_ATTR with the method bit,
** COMPARE_OP's shifted oparg, FORMAT_VALUE or CONVERT_VALUE + FORMAT_*),
** every spelling lifts to one kind; where a version splits an operation over
** several instructions (3.11's KW_NAMES + PRECALL + CALL, 3.13's MAKE_FUNCTION
** + SET_FUNCTION_ATTRIBUTE) each instruction lifts to its own kind and the
** tracer keeps the pending state.  An instruction with no kind below lifts
** to FJ_PI_OTHER: the tracer refuses it by its real name.
**
** Stack layout of a call (the tracer and code generation mirror it):
** 3.11/3.12 push [NULL, callable] or [method, self], 3.13 [callable, NULL]
** or [method, self]; fj_dialect.null_after says which.  Everything that
** reads such a pair takes the non-NULL one of the two when one is NULL.
*/
#ifndef FJ_DIALECT_H
#define FJ_DIALECT_H
#include "compat.h"

#if FJ_SUPPORTED

/*
** Pseudo-instruction kinds.  Operands: a, b (0 when not listed);
** "target" = fj_Instr.target.  Stack effects as CPython's for the version.
*/
typedef enum {
    FJ_PI_OTHER = 0,        /* not modelled: refused by the tracer by its real name */
    FJ_PI_NOP,              /* no effect: NOP, RESUME, CACHE, EXTENDED_ARG */
    FJ_PI_PRECALL,          /* no effect; belongs to the CALL after it (3.11) */
    FJ_PI_POP_TOP,          /* pop */
    FJ_PI_PUSH_NULL,        /* push NULL */
    FJ_PI_COPY,             /* a: push a copy of the a-th entry (1 = top) */
    FJ_PI_SWAP,             /* a: swap the top with the a-th entry */
    FJ_PI_LOAD_CONST,       /* a: co_consts index */
    FJ_PI_RETURN_VALUE,     /* return the top */
    FJ_PI_RETURN_CONST,     /* a: return co_consts[a] (3.12+) */
    FJ_PI_LOAD_FAST,        /* a: localsplus index (also LOAD_FAST_CHECK) */
    FJ_PI_LOAD_FAST_AND_CLEAR, /* a: push the local or NULL, then unbind it (3.12+) */
    FJ_PI_LOAD_FAST_LOAD_FAST, /* a, b: push local a, then local b (3.13) */
    FJ_PI_STORE_FAST,       /* a: pop into local a */
    FJ_PI_STORE_FAST_LOAD_FAST, /* a, b: pop into local a, then push local b (3.13) */
    FJ_PI_STORE_FAST_STORE_FAST, /* a, b: pop into local a, then pop into local b (3.13) */
    FJ_PI_DELETE_FAST,      /* a: unbind local a */
    FJ_PI_MAKE_CELL,        /* a: localsplus index of the cell */
    FJ_PI_COPY_FREE_VARS,   /* a: number of free variables */
    FJ_PI_LOAD_CLOSURE,     /* a: push the cell in slot a (3.13 spells it LOAD_FAST) */
    FJ_PI_LOAD_DEREF,       /* a: push the contents of the cell in slot a */
    FJ_PI_STORE_DEREF,      /* a: pop into the cell in slot a */
    FJ_PI_DELETE_DEREF,     /* a: empty the cell in slot a */
    FJ_PI_LOAD_GLOBAL,      /* a: co_names index; b: 1 = push NULL beside it */
    FJ_PI_STORE_GLOBAL,     /* a: co_names index */
    FJ_PI_DELETE_GLOBAL,    /* a: co_names index */
    FJ_PI_LOAD_ATTR,        /* a: co_names index: replace the top by its attribute */
    FJ_PI_LOAD_METHOD,      /* a: co_names index: replace obj by [method, self] or the
                               NULL/attribute pair (3.11 LOAD_METHOD, 3.12+ LOAD_ATTR|1) */
    FJ_PI_STORE_ATTR,       /* a: co_names index: [value, obj] */
    FJ_PI_DELETE_ATTR,      /* a: co_names index */
    FJ_PI_KW_NAMES,         /* a: co_consts index of the next call's keyword names (3.11/3.12) */
    FJ_PI_CALL,             /* a: arguments (keywords included); b: 1 = the keyword names
                               tuple is on top of the arguments (3.13 CALL_KW) */
    FJ_PI_CALL_FUNCTION_EX, /* a: 1 = a kwargs mapping is on top */
    FJ_PI_MAKE_FUNCTION,    /* a: MAKE_FUNCTION flags (0x01 defaults, 0x02 kwdefaults,
                               0x04 annotations, 0x08 closure; 3.13: always 0) */
    FJ_PI_SET_FUNCTION_ATTRIBUTE, /* a: one MAKE_FUNCTION flag: [attr, func] -> [func] (3.13) */
    FJ_PI_BINARY_OP,        /* a: NB_* operator */
    FJ_PI_COMPARE_OP,       /* a: Py_LT..Py_GE; b: 1 = result converted to bool (3.13) */
    FJ_PI_IS_OP,            /* a: 1 = 'is not' */
    FJ_PI_CONTAINS_OP,      /* a: 1 = 'not in' */
    FJ_PI_UNARY_NOT,
    FJ_PI_UNARY_NEGATIVE,
    FJ_PI_UNARY_POSITIVE,   /* 3.12+: CALL_INTRINSIC_1 INTRINSIC_UNARY_POSITIVE */
    FJ_PI_UNARY_INVERT,
    FJ_PI_TO_BOOL,          /* replace the top by bool(top) (3.13) */
    FJ_PI_BINARY_SUBSCR,    /* [obj, key] -> obj[key] */
    FJ_PI_STORE_SUBSCR,     /* [value, obj, key] */
    FJ_PI_DELETE_SUBSCR,    /* [obj, key] */
    FJ_PI_BINARY_SLICE,     /* [obj, start, stop] -> obj[start:stop] (3.12+) */
    FJ_PI_STORE_SLICE,      /* [value, obj, start, stop] (3.12+) */
    FJ_PI_BUILD_TUPLE,      /* a: items */
    FJ_PI_BUILD_LIST,       /* a: items */
    FJ_PI_BUILD_MAP,        /* a: key/value pairs */
    FJ_PI_BUILD_CONST_KEY_MAP, /* a: values; keys tuple on top */
    FJ_PI_BUILD_SLICE,      /* a: 2 or 3 */
    FJ_PI_BUILD_STRING,     /* a: pieces */
    FJ_PI_MAP_ADD,          /* a: depth of the dict */
    FJ_PI_DICT_UPDATE,      /* a: depth of the dict */
    FJ_PI_DICT_MERGE,       /* a: depth of the dict */
    FJ_PI_LIST_APPEND,      /* a: depth of the list */
    FJ_PI_LIST_EXTEND,      /* a: depth of the list */
    FJ_PI_LIST_TO_TUPLE,    /* 3.12+: CALL_INTRINSIC_1 INTRINSIC_LIST_TO_TUPLE */
    FJ_PI_FORMAT,           /* a: conversion (0 none, 1 str, 2 repr, 3 ascii); b: 1 = a
                               format spec is on top (3.11/3.12 FORMAT_VALUE, 3.13
                               FORMAT_SIMPLE/FORMAT_WITH_SPEC with a == 0) */
    FJ_PI_CONVERT_VALUE,    /* a: conversion 1..3 (3.13) */
    FJ_PI_UNPACK_SEQUENCE,  /* a: count */
    FJ_PI_UNPACK_EX,        /* a: before | after << 8 */
    FJ_PI_GET_ITER,
    FJ_PI_FOR_ITER,         /* target: the loop's exit; b: instructions there that an
                               exhausted iterator skips (3.12 END_FOR, 3.13 END_FOR POP_TOP) */
    FJ_PI_JUMP,             /* target (either direction) */
    FJ_PI_POP_JUMP_IF,      /* target; a: FJ_IF_*: pop the top, jump if the test holds */
    FJ_PI_JUMP_IF_OR_POP,   /* target; a: FJ_IF_TRUE/FALSE: jump keeping the top if the
                               test holds, else pop it (3.11) */
    FJ_PI_IMPORT_NAME,      /* a: co_names index: [level, fromlist] -> module */
    FJ_PI_IMPORT_FROM,      /* a: co_names index: [module] -> [module, attribute] */
    FJ_PI_RAISE_VARARGS,    /* a: 0..2 operands */
    FJ_PI_RERAISE,          /* re-raise the exception on top (a: 1 = set f_lasti from below) */
    FJ_PI_BEFORE_WITH,      /* [cm] -> [cm.__exit__, cm.__enter__()] */
    FJ_PI_PUSH_EXC_INFO,    /* [exc] -> [previous exception, exc]: a handler starts */
    FJ_PI__COUNT
} fj_PIKind;

enum { FJ_IF_FALSE = 0, FJ_IF_TRUE = 1, FJ_IF_NONE = 2, FJ_IF_NOT_NONE = 3 };

/* A pseudo-instruction: fj_Instr.p. */
typedef struct {
    int op; /* fj_PIKind */
    int a, b;
} fj_Pseudo;

/* What one dialect is (fj_dialect, defined by the compiled dialect unit). */
typedef struct {
    const char *name;      /* "3.11" */
    int null_after;        /* 1: the NULL of a call pair sits above the callable (3.13) */
} fj_Dialect;
extern const fj_Dialect fj_dialect;

/* ---- opcode metadata (real opcodes of this version) ---------------------- */

/* Inline cache entries after an instruction with base opcode 'op'. */
int fj_opcode_caches(int op);
/* The base opcode of a possibly specialized or instrumented opcode 'op'. */
int fj_opcode_deopt(int op);
/* True if 'op' is a base (unspecialized, real) opcode an instruction may carry. */
int fj_opcode_is_base(int op);
/* Direction of relative jump 'op': +1 forward, -1 backward, 0 not a jump. */
int fj_opcode_jump_dir(int op);
/* The same jump in the other direction, or -1 if 'op' has only one. */
int fj_opcode_jump_flip(int op);
/* True if control never falls through from 'op' to the next instruction. */
int fj_opcode_no_fallthrough(int op);
/* Stack effect of (op, arg) when it falls through (jump 0) or jumps (jump 1);
   PY_INVALID_STACK_EFFECT for a bad opcode. */
int fj_opcode_stack_effect(int op, int arg, int jump);
/* True if 'op' takes a cell/free localsplus index as its arg. */
int fj_opcode_is_deref(int op);

/* ---- lifting and emitting ----------------------------------------------- */

struct fj_Instr;
struct fj_InstrList;

/* Fills in->p from in->op and in->arg (the real instruction). */
void fj_dl_lift(struct fj_Instr *in);

/*
** Emitters: each appends this version's spelling of one operation to 'il'
** (stamped like fj_bc_emit) and returns the index of its last instruction,
** or -1 with MemoryError set.
*/
/* Push global co_names['name_ix'], with a NULL beside it (push_null) for a call. */
int fj_dl_load_global(struct fj_InstrList *il, int name_ix, int push_null);
/* Replace the top by its attribute co_names['name_ix']. */
int fj_dl_load_attr(struct fj_InstrList *il, int name_ix);
/* Replace the top by the method pair for co_names['name_ix'] (ready for fj_dl_call). */
int fj_dl_load_method(struct fj_InstrList *il, int name_ix);
/* Push the NULL of a call pair: emit fj_dl_null_before, load the callable,
   emit fj_dl_null_after; one of the two emits PUSH_NULL, the other nothing.
   These two return 0, or -1 with MemoryError set. */
int fj_dl_null_before(struct fj_InstrList *il);
int fj_dl_null_after(struct fj_InstrList *il);
/* Call the pair under 'nargs' arguments; the last len(kwnames) are keywords
   when kw_ix >= 0 (co_consts index of the names tuple). */
int fj_dl_call(struct fj_InstrList *il, int nargs, int kw_ix);
/* Make a function from the code object on top and, below it in MAKE_FUNCTION
   order, what 'flags' says (3.13: MAKE_FUNCTION + SET_FUNCTION_ATTRIBUTE). */
int fj_dl_make_function(struct fj_InstrList *il, int flags);
/* Push the cell of localsplus slot 'ix' (for a closure tuple). */
int fj_dl_load_closure(struct fj_InstrList *il, int ix);

/*
** Rewriting decoded code (resume functions renumber fast locals).
** fj_dl_split_fast_pairs replaces every instruction that names two fast
** locals in one oparg (3.13's LOAD_FAST_LOAD_FAST, STORE_FAST_LOAD_FAST,
** STORE_FAST_STORE_FAST) by the two single instructions, keeping jumps and
** handlers right; 0, or -1 with an exception.  fj_dl_fast_local_arg is true
** when in->arg is the localsplus index of a fast local (not a cell) that a
** renumbering must rewrite (LOAD_FAST and its checked/clearing forms,
** STORE_FAST, DELETE_FAST).
*/
int fj_dl_split_fast_pairs(struct fj_InstrList *il);
int fj_dl_fast_local_arg(const struct fj_Instr *in);

/* ---- assembler hooks ---------------------------------------------------- */

/* The opcode the assembler writes for list opcode 'op': 'op' itself, except a
   pseudo-instruction the version's compiler lowers (3.13: LOAD_CLOSURE ->
   LOAD_FAST of the same slot).  fj_opcode_is_base accepts such a pseudo op. */
int fj_opcode_real(int op);
/* The list opcode for real instruction (op = fj_opcode_deopt(raw), arg) decoded
   from 'co': 'op', except where the compiler lowered a pseudo-instruction the
   list keeps (3.13: LOAD_FAST of a cell or free slot -> LOAD_CLOSURE). */
int fj_opcode_decoded(PyCodeObject *co, int op, int arg);
/* The k-th (from 0) opcode at a FOR_ITER's target that an exhausted iterator
   skips (3.12: END_FOR; 3.13: END_FOR, POP_TOP), or -1 once k is past them;
   the assembler refuses a FOR_ITER whose target does not start with them. */
int fj_opcode_for_iter_exit(int k);
/* True if one co_linetable entry covers a run of consecutive instructions
   with equal positions (3.12+), false for one entry per instruction (3.11). */
int fj_dl_merge_locations(void);
/* The co_stacksize CPython gives code whose deepest stack is 'depth' (3.13's
   code constructor raises 0 to 1). */
int fj_dl_code_stacksize(int depth);

#endif /* FJ_SUPPORTED */
#endif /* FJ_DIALECT_H */
