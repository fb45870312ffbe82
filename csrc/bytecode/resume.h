/*
** resume.h: graph breaks: where a frame can be split, and the resume
** functions that continue it.
**
** Responsible for: deciding whether a break at a top-frame instruction can
** be resumed (an instruction whose stack effect is known, or inside a loop
** the whole loop;
** under a try/with block it also resumes at the handler), the liveness of fast locals, and synthesizing the
** code of __resume_at_<offset>_<n> functions from the original code: a
** prologue that pushes the saved stack (RESUME, LOAD_FAST ___stack<i> or
** PUSH_NULL, JUMP_FORWARD) followed by the original instructions.
**
** Not responsible for: the code that runs before the break (codegen.c) or
** the restart policy (compiler.c).
*/
#ifndef FJ_RESUME_H
#define FJ_RESUME_H

#include "bytecode.h"

typedef enum {
    FJ_BREAK_CALL,    /* a call: [KW_NAMES] PRECALL CALL run in CPython */
    FJ_BREAK_JUMP,    /* a conditional jump on a value the trace cannot know */
    FJ_BREAK_GENERIC, /* one instruction with a known stack effect */
    FJ_BREAK_REGION,  /* a loop run whole in CPython: an inlined comprehension (3.12+, PEP 709),
                         from its GET_ITER to the restore of the locals it saved, or the
                         outermost for loop around the break, from its GET_ITER to its exit */
} fj_BreakKind;

typedef struct {
    fj_BreakKind kind;
    int first, last; /* original instructions run in CPython, inclusive */
    int npop, npush; /* stack entries they consume and produce */
    int nresume;     /* 0 (raise), 1 or 2 (jump: fallthrough then target) */
    int resume[2];   /* instruction indices where execution continues */
    /* The break is under an exception handler (a try or with block): if the
       instructions run in CPython raise, execution continues at 'handler'
       (-1: none) with the stack cut to 'hdepth' entries, [the offset of the
       raising instruction if 'hlasti'], the exception. */
    int handler, hdepth, hlasti;
    /* FJ_BREAK_REGION of a loop: the locals it binds are bound only if its body
       runs (fj_resume_region_defs' are "maybe") */
    int maybe_defs;
} fj_BreakPlan;

/*
** Plans a break at instruction 'index' of 'il' (decoded from 'co').
** Returns 0 with 'plan' filled, or -1 with fj_Unsupported set saying why
** the frame cannot be split there (it then runs whole in CPython).
*/
int fj_resume_plan(PyCodeObject *co, const fj_InstrList *il, int index, fj_BreakPlan *plan);

/*
** The fast locals a FJ_BREAK_REGION plan's instructions leave bound that the
** trace did not see bound (the comprehension's result stored to a local),
** not those it saved and restored.  Fills defs[0..nlocalsplus) with 0/1.
*/
void fj_resume_region_defs(PyCodeObject *co, const fj_InstrList *il, const fj_BreakPlan *plan,
                           unsigned char *defs);

/*
** The resume functions see the frame's cell variables as free variables, so
** reading or deleting one that is unbound there raises NameError ("free
** variable") where CPython raises UnboundLocalError.  Returns 0 when no
** instruction from 'first' on can do that: none deletes a cell variable
** (DELETE_DEREF) and none reads one that 'unbound' (per fast-local slot,
** 0/1) marks unbound at the break.  Otherwise -1 with fj_Unsupported (the
** frame then runs whole in CPython).
*/
int fj_resume_cells_ok(PyCodeObject *co, const fj_InstrList *il, int first,
                       const unsigned char *unbound);

/*
** Fast locals live at instruction 'index' (read on some path before being
** written).  Fills live[0..nlocalsplus) with 0/1.  Returns 0, -1 on error.
*/
int fj_resume_liveness(PyCodeObject *co, const fj_InstrList *il, int index,
                       unsigned char *live);

/*
** The code object of a function that resumes 'co' at instruction 'index'
** of its decoded list 'il': parameters are ___stack<i> for each stack slot
** not marked in 'nulls' (nstack slots, bottom first), then 'argnames'
** (tuple of local names).  Its co_name/co_qualname are 'name' (the logs'
** resume_in_<f>_at_<line>), or the original's when 'name' is NULL (run
** mode's transparent names).  The
** original's cells and free variables become its free variables (cells
** first): the caller passes the frame's cells as its closure.
** With 'clear_stack' the prologue deletes the ___stack<i> parameters once
** it has pushed them (run mode: the stack values then live exactly as long
** as without framejit).  '*prefix' receives the number of instructions put
** before the original ones.  With 'raise_at' >= 0, 'index' is the handler
** of instruction 'raise_at' and the last stack slot is the exception: when
** the handler takes the offending offset, the prologue pushes raise_at's
** offset in the new code before it (what RERAISE 1 restores f_lasti to).
** Returns a new reference, NULL on error.
*/
PyObject *fj_resume_code(PyCodeObject *co, const fj_InstrList *il, int index, int nstack,
                         const unsigned char *nulls, PyObject *argnames, PyObject *name,
                         int clear_stack, int raise_at, int *prefix);

/*
** The resume functions made so far, one per resume point: the cache and the
** map from each resume code back to the code it continues.
*/
typedef struct {
    PyObject *code; /* strong: the resume code */
    long id;        /* n of __resume_at_<offset>_<n>, unique per resume code */
    int offset;     /* byte offset of the resume point in the original code */
} fj_ResumeRef;

/*
** The resume code for a break of 'co' at instruction 'index' of 'il' (the
** arguments as fj_resume_code's).  When 'co' is itself resume code the
** point is mapped back to the original, so breaks in resume functions make
** functions that resume the original code.  Made once per (original code,
** point, nulls, argnames, transparent, raise_at).  0 with 'out' filled, -1 on error.
*/
int fj_resume_get(PyCodeObject *co, const fj_InstrList *il, int index, int nstack,
                  const unsigned char *nulls, PyObject *argnames, int transparent, int raise_at,
                  fj_ResumeRef *out);

typedef struct {
    PyCodeObject *orig; /* borrowed: the code it continues */
    int prefix;         /* instructions of its prologue, before the original ones */
    PyObject *log_name; /* borrowed str: resume_in_<name>_at_<line> */
} fj_ResumeOrigin;

/* 1 with 'out' filled if 'code' is resume code made by fj_resume_get, 0 if
   not, -1 on error. */
int fj_resume_origin(PyObject *code, fj_ResumeOrigin *out);

/* Forgets every resume function (framejit.reset()); ids start again at 1. */
void fj_resume_reset(void);

int fj_resume_init(void);

#endif
