/*
** bytecode.h: decoding, building and assembling CPython bytecode (3.11-3.13).
**
** Responsible for: turning a code object into an editable instruction list
** (fj_bc_decode), building new instruction lists (labels, positions,
** exception handlers, constant/name/varname interning: fj_Builder), and
** turning an instruction list back into a code object (fj_bc_assemble):
** jump offsets and EXTENDED_ARG prefixes, zeroed inline caches, the
** location table (co_linetable), the exception table, co_stacksize and the
** localsplus layout.  Decoding then assembling a code object compiled by
** CPython gives back identical co_code, co_linetable, co_exceptiontable and
** co_stacksize (tests/test_bytecode.py checks the whole standard library).
**
** Not responsible for: what the instructions mean (the tracer), liveness or
** resume-function policy (the compiler), nor installing code on frames
** (evalframe), nor what differs between versions (the dialect unit,
** dialect.h).  Everything below compiles to nothing when FJ_SUPPORTED is 0,
** except fj_bytecode_init.
**
** Model.  An instruction list is an array of fj_Instr.  Instructions are
** whole: EXTENDED_ARG prefixes are folded into 'arg' and inline CACHE units
** are implicit (the assembler writes zeros).  Jumps and exception handlers
** name their destination by instruction *index*, so instructions can be
** inserted and removed (fj_bc_insert keeps indices right); the assembler
** computes every offset.  Offsets are in code units (2 bytes) unless a name
** says bytes.
*/
#ifndef FJ_BYTECODE_H
#define FJ_BYTECODE_H
#include "dialect.h"

/* Adds this subsystem's test hooks (_bc_*) to framejit._C. -1 on error. */
/* Adds the bytecode test hooks (bc_decode, bc_assemble, ...) to 'testing'
   (framejit._C._testing). */
int fj_bytecode_init(PyObject *testing);

#if FJ_SUPPORTED

/* A reference to a label in fj_Instr.target / exc_target (see fj_bc_new_label). */
#define FJ_LABEL_REF(label) (-2 - (label))
#define FJ_IS_LABEL_REF(t) ((t) <= -2)
#define FJ_LABEL_OF(t) (-2 - (t))

typedef struct fj_Instr {
    int op;     /* base opcode: never CACHE, EXTENDED_ARG or a specialized form */
    int arg;    /* full oparg (EXTENDED_ARG folded in); >= 0.  For jumps the
                   assembler recomputes it from 'target'. */
    int target; /* relative jumps (fj_opcode_jump_dir(op) != 0): index of the
                   destination instruction, or FJ_LABEL_REF(l); -1 otherwise */
    int line, end_line, col, end_col; /* source position; -1 = none
                   (line -1 = "no location", col -1 = no column info) */
    int exc_target; /* index of the exception handler covering this
                   instruction (or FJ_LABEL_REF(l)); -1 = not covered */
    int exc_depth;  /* stack depth to unwind to before pushing the exception */
    int exc_lasti;  /* 1 if the handler also gets the offending offset pushed */
    int ext;    /* decode: number of EXTENDED_ARG prefixes found.  assemble:
                   the minimum to emit (0 lets the assembler choose). */
    int offset; /* code-unit offset of the instruction's first unit (its first
                   EXTENDED_ARG prefix if any).  Set by decode and by
                   assemble; ignored on input. */
    fj_Pseudo p; /* the version-free pseudo-instruction (dialect.h): set by
                   decode; not read by the assembler */
} fj_Instr;

/*
** An instruction list.  Start it with fj_bc_init (a zeroed struct is safe
** to free but stamps position line 0); release with fj_bc_free.  All memory is owned by the list.
** The "current" fields are the state the fj_bc_emit* functions stamp on
** each appended instruction.
*/
typedef struct fj_InstrList {
    fj_Instr *v;            /* owned; n used, cap allocated */
    int n, cap;
    int *labels;            /* owned; label -> instruction index, -1 unplaced */
    int nlabels, labelcap;
    int cur_line, cur_end_line, cur_col, cur_end_col; /* position to stamp */
    int cur_exc_target, cur_exc_depth, cur_exc_lasti; /* handler to stamp */
} fj_InstrList;

/* Empties 'il' (no allocation): position none, no handler. */
void fj_bc_init(fj_InstrList *il);
/* Frees what 'il' owns and leaves it empty (reusable).  Safe on an empty list. */
void fj_bc_free(fj_InstrList *il);

/*
** Decodes 'co' (its de-specialized bytes, as PyCode_GetCode gives) into
** 'out', which must be empty.  Fills every fj_Instr field; jump and handler
** destinations become indices.  Returns 0, or -1 with an exception set
** (ValueError for malformed code) and 'out' emptied.
*/
int fj_bc_decode(PyCodeObject *co, fj_InstrList *out);

/*
** True when the exception handler at instruction 'h' of decoded list 'il'
** only restores fast locals and re-raises: stack shuffles (COPY, SWAP,
** POP_TOP), LOAD_FAST/STORE_FAST and NOPs, then RERAISE, with no jump.  An
** exception that leaves the frame without running such a handler differs
** from CPython only in the dead frame's locals (3.12's inlined
** comprehensions, PEP 709, restore the iteration variable so).
*/
int fj_bc_handler_transparent(const fj_InstrList *il, int h);

/* ---- building ---------------------------------------------------------- */

/*
** Appends instruction (op, arg) stamped with the current position and
** handler.  Returns its index, or -1 with MemoryError set.  No validation
** happens here; the assembler checks everything.
*/
int fj_bc_emit(fj_InstrList *il, int op, int arg);
/* Appends relative jump 'op' to 'label' (placed before or after).  As fj_bc_emit. */
int fj_bc_emit_jump(fj_InstrList *il, int op, int label);
/* A new, unplaced label id (>= 0), or -1 with MemoryError set. */
int fj_bc_new_label(fj_InstrList *il);
/* Places 'label' at the next instruction to be appended.  -1 (ValueError) if
** the label is unknown or already placed. */
int fj_bc_place_label(fj_InstrList *il, int label);
/* Sets the position stamped on following instructions (-1 = none). */
void fj_bc_set_pos(fj_InstrList *il, int line, int end_line, int col, int end_col);
/*
** Sets the exception handler stamped on following instructions: 'target'
** is an instruction index or FJ_LABEL_REF(label), or -1 for none; 'depth'
** is the stack depth kept under the exception; 'lasti' pushes the offset.
*/
void fj_bc_set_handler(fj_InstrList *il, int target, int depth, int lasti);
/*
** Opens 'count' default-initialised slots (op NOP, no position, no handler)
** before index 'at' (0 <= at <= n) and renumbers every jump, handler and
** label so it still reaches the same original instruction.  Returns 0, or
** -1 with an exception set.
*/
int fj_bc_insert(fj_InstrList *il, int at, int count);
/*
** Replaces label references in targets by instruction indices.  -1 with
** ValueError if a label is unplaced or placed past the last instruction.
** fj_bc_assemble calls it; call it yourself before reading targets.
*/
int fj_bc_resolve_labels(fj_InstrList *il);

/* ---- assembling -------------------------------------------------------- */

/* How deref opargs (MAKE_CELL, LOAD_CLOSURE, LOAD_DEREF, STORE_DEREF,
** DELETE_DEREF, LOAD_CLASSDEREF) in the list are to be read. */
enum {
    FJ_DEREF_TEMPLATE = 0, /* index the template's localsplus; the assembler
                              re-targets them by name to the new layout */
    FJ_DEREF_FINAL = 1,    /* already index the new code's localsplus */
};

/*
** Overrides for fj_bc_assemble; fj_bc_opts_init sets "keep the template's"
** everywhere.  Object fields are borrowed for the call.  The localsplus
** layout of the result is: varnames, then cellvars not in varnames, then
** freevars (as PyCode_NewWithPosOnlyArgs builds it); co_nlocals is
** len(varnames).  Adding varnames after the template's shifts the cell and
** free slots; with FJ_DEREF_TEMPLATE the assembler fixes the deref opargs.
** A new varname must not equal a cellvar name (the slots would merge).
*/
typedef struct {
    PyObject *consts, *names;             /* tuples or lists */
    PyObject *varnames, *cellvars, *freevars; /* tuples or lists of str */
    PyObject *name, *qualname;            /* str */
    int argcount, posonlyargcount, kwonlyargcount; /* -1 = template's */
    int flags;                            /* -1 = template's */
    int firstlineno;                      /* -1 = template's */
    int deref_layout;                     /* FJ_DEREF_TEMPLATE (default) */
} fj_AsmOpts;

void fj_bc_opts_init(fj_AsmOpts *o);

/*
** Assembles 'il' into a new code object based on 'tmpl' (filename and
** every field 'opts' does not override; opts may be NULL).  Resolves
** labels; flips a jump between its FORWARD and BACKWARD form when its
** destination requires it (FOR_ITER/SEND/JUMP_IF_*_OR_POP can only go
** forward); chooses EXTENDED_ARG prefixes; computes the line table, the
** exception table (consecutive instructions with the same handler become
** one entry) and co_stacksize.  Rewrites op/arg of jumps, deref args are
** left as given, and sets every 'offset' in 'il'.  Returns a new
** reference, or NULL with an exception set (ValueError for a bad opcode,
** arg, jump or handler destination, or stack underflow).
*/
PyObject *fj_bc_assemble(PyCodeObject *tmpl, fj_InstrList *il, const fj_AsmOpts *opts);

/*
** The maximum stack depth of 'il' (indices resolved, no labels): a fixed
** point over the control-flow graph from instruction 0 with the version's
** stack effects (fj_opcode_stack_effect); a handler starts at exc_depth +
** exc_lasti + 1.  Returns >= 0,
** or -1 with ValueError set (bad opcode, underflow).
*/
int fj_bc_stackdepth(const fj_InstrList *il);

/* ---- builder: an instruction list plus the code's tables --------------- */

/*
** The compiler's code generator.  Holds a template code object and
** growable copies of its co_consts, co_names and co_varnames, so emitted
** instructions can refer to new constants, names and locals by index.
*/
typedef struct {
    fj_InstrList il;
    PyCodeObject *tmpl; /* strong */
    PyObject *consts;   /* strong list, starts as the template's co_consts */
    PyObject *names;    /* strong list, starts as the template's co_names */
    PyObject *varnames; /* strong list, starts as the template's co_varnames */
} fj_Builder;

/* Initialises 'b' from 'tmpl' (empty instruction list).  0, or -1 with an
** exception set ('b' is then safe to clear). */
int fj_builder_init(fj_Builder *b, PyCodeObject *tmpl);
/* Releases everything 'b' holds.  Safe on a zeroed or cleared builder. */
void fj_builder_clear(fj_Builder *b);
/*
** Index of 'v' in the constants, appending it if absent.  A constant is
** reused when it is the same object, or an equal int, str or bytes of the
** exact same type (never 1 for True or 0.0 for -0.0).  -1 on error.
*/
int fj_builder_const(fj_Builder *b, PyObject *v);
/* Index of str 'name' in co_names, appending it if absent.  -1 on error. */
int fj_builder_name(fj_Builder *b, PyObject *name);
/* Index of local 'name' (the LOAD_FAST arg), appending it if absent. -1 on error. */
int fj_builder_varname(fj_Builder *b, PyObject *name);
/* Template localsplus index of cell or free variable 'name' (the deref
** oparg under FJ_DEREF_TEMPLATE); -1 with ValueError if there is none. */
int fj_builder_deref(fj_Builder *b, PyObject *name);
/* Emitting helpers; each returns the new instruction's index or -1. */
int fj_builder_load_const(fj_Builder *b, PyObject *v);          /* LOAD_CONST */
int fj_builder_load_global(fj_Builder *b, PyObject *name, int push_null); /* arg name<<1|push_null */
int fj_builder_load_attr(fj_Builder *b, PyObject *name);        /* LOAD_ATTR */
int fj_builder_load_method(fj_Builder *b, PyObject *name);      /* LOAD_METHOD */
int fj_builder_load_fast(fj_Builder *b, PyObject *name);        /* LOAD_FAST, adds the local */
int fj_builder_store_fast(fj_Builder *b, PyObject *name);       /* STORE_FAST, adds the local */
/* PRECALL nargs; CALL nargs (after KW_NAMES i when kwnames is a non-empty
** tuple of keyword names, counted in nargs).  Index of the CALL or -1. */
int fj_builder_call(fj_Builder *b, int nargs, PyObject *kwnames);
/*
** Assembles the builder's instructions with its consts/names/varnames
** (opts may add other overrides; its consts/names/varnames are ignored).
** New reference, or NULL with an exception set.
*/
PyObject *fj_builder_assemble(fj_Builder *b, const fj_AsmOpts *opts);

#endif /* FJ_SUPPORTED */
#endif /* FJ_BYTECODE_H */
