/*
** trace.h: the symbolic interpreter of CPython bytecode.
**
** Responsible for: running a frame's code over symbolic values (fj_Var):
** arrays are graph nodes, Python constants stay constants, containers hold
** Vars, user functions are inlined; every fact the trace used about an input
** becomes a guard (through its fj_Source); what cannot be captured raises
** the private exception fj_Unsupported with a reason, and the tracer records
** the instruction where it happened (the graph-break point).
**
** Not responsible for: the op table (ops.c), the graph (graph.c), building
** the output code (codegen.c) or deciding what to do with a result
** (compiler.c).
**
** Opcode handlers are split by family: trace.c (the loop, frames, control
** flow, loads and stores, building containers) and trace_call.c (calls,
** attributes, subscripts, operators: everything that can reach the graph).
*/
#ifndef FJ_TRACE_H
#define FJ_TRACE_H

#include "bytecode.h"
#include "guards.h"
#include "source.h"

/* Kinds of symbolic values. */
typedef enum {
    FJ_VAR_CONST, /* obj: a known Python object (immutable value, module, function, class...) */
    FJ_VAR_NODE,  /* obj: the fj_Node of an array or NumPy scalar in the graph */
    FJ_VAR_TUPLE, /* items: list of Var */
    FJ_VAR_LIST,  /* items: list of Var; an input's, once mutated: see fj_trace_list_resized */
    FJ_VAR_DICT,  /* items: dict of constant key -> Var */
    FJ_VAR_ITER,  /* items: list of Var (or obj: a range), pos: next index;
                     extra: zip's lazy steps (see fj_trace_iter_step) or NULL;
                     extra2: np.ndindex / ndenumerate's (shape, array Var or None), whose
                     items are index tuples made from the range's (fj_trace_nd_item) */
    FJ_VAR_FUNC,  /* obj: code; items: closure tuple Var (or NULL); extra: defaults, kwdefaults */
    FJ_VAR_CELL,  /* items: list [contents Var] (empty when unbound) */
    FJ_VAR_METHOD,/* obj: method name; extra: self Var */
    FJ_VAR_NULL,  /* the NULL of PUSH_NULL / LOAD_GLOBAL / LOAD_METHOD */
    FJ_VAR_OBJ,   /* obj: an opaque object from an input; only its attributes may be read */
    FJ_VAR_INST,  /* an instance of a plain class made in the frame: obj: the class;
                     extra: dict name -> Var (its __dict__); extra2: the class Var */
    FJ_VAR_RANGE  /* range(start, stop, step) whose start or stop is a graph value (a loop
                     index, a symbolic int): extra: the tuple (start, stop, step) of Vars
                     (Python int constants or int nodes; step a nonzero constant).  It is
                     its own iterator; a for loop over it is captured as a loop node
                     (trace_loops.c) or is a graph break; any other use is a break. */
} fj_VarKind;

typedef struct fj_Var {
    PyObject_HEAD
    fj_VarKind kind;
    PyObject *obj;       /* strong or NULL, see kinds */
    PyObject *items;     /* strong or NULL, see kinds */
    PyObject *extra;     /* strong or NULL, see kinds */
    PyObject *extra2;    /* strong or NULL (FUNC: kwdefaults) */
    fj_Source *source;   /* strong or NULL: where an input value came from */
    Py_ssize_t pos;      /* ITER: position; CELL: 1 once a free cell of the top frame was set;
                            METHOD: 1 for the method of a LOAD_METHOD (method, self) pair;
                            LIST/DICT from an input: 1 once mutated (a side effect) */
    int split_dict;      /* an input dict whose storage is a split table (an instance __dict__) */
    int dynamic;         /* NODE whose shape or value depends on a dynamic input */
    int size_input;      /* NODE: an array input's size (fj_trace_size_input), not an input of its own */
} fj_Var;

extern PyTypeObject *fj_Var_Type;
#define fj_Var_Check(o) (Py_TYPE(o) == fj_Var_Type)

/* The private exception that means "cannot capture this". */
extern PyObject *fj_Unsupported;

/* Everything one trace of one top-level frame owns. */
typedef struct fj_Tracer {
    PyObject *graph;         /* strong: fj_Graph */
    PyObject *guards;        /* strong: RootGuardManager */
    PyCodeObject *code;      /* strong: the frame's code */
    fj_FrameView view;       /* the frame's inputs (borrowed for the trace) */
    PyObject *inputs;        /* strong dict: source text -> Var, one Var per source */
    PyObject *placeholders;  /* strong list of Var (FJ_VAR_NODE) that are graph inputs */
    long budget;             /* instructions left before giving up */
    int inline_depth_limit;
    int log_trace;           /* log each traced instruction (trace_bytecode) */
    int log_dynamic;         /* the 'dynamic' channel is on (pins are logged) */
    struct fj_TFrame *cur;   /* the frame whose instruction is being traced (for log lines) */
    PyObject *log_fn;        /* borrowed: log(channel, text) */
    PyObject *compile_id;    /* borrowed: str for log lines */
    /* Where the trace stopped when unsupported (in the top frame). */
    int break_index;         /* instruction index in the top frame, -1 if not there */
    int break_lineno;
    PyObject *break_reason;  /* strong str or NULL */
    PyObject *break_filename;/* strong or NULL: file of the frame that broke */
    int break_user_lineno;   /* line in that frame */
    /* Automatic dynamic shapes (docs/dynamic.md). */
    PyObject *dyn_ints;      /* borrowed set of source texts of ints to make symbolic, or NULL */
    PyObject *dyn_dims;      /* borrowed dict: source text -> tuple of dims, or NULL */
    PyObject *marked;        /* borrowed dict: id(array) -> dims (mark_dynamic), or NULL */
    int all_dynamic;         /* compile(dynamic=True): every int and dim (but 0/1) */
    PyObject *dyn_inputs;    /* strong list of (Var, value): inputs made dynamic */
    int specialized;         /* the trace needed concrete values: dynamic inputs pinned */
    int torch_inplace;       /* a torch op of the graph wrote into a tensor (in-place, setitem): a
                                later op that may raise from the data is not captured, since a
                                functionalizing backend (aot_eager, inductor) drops such writes
                                when the graph raises */
    int op_raised;           /* an op raised on the trace's values (a shape error...): the
                                break is there, and a restart stopping before it starts
                                specialized (compiler.c) */
    int torch_hooks_guarded; /* the global module hook dicts are guarded empty (once per trace) */
    int reentry_ok;          /* the next inline is a torch module's forward: it may re-enter a
                                code object on the stack (nested Sequentials), as a new
                                instance's method does, within the depth limit */
    /* Side effects replayed after the graph (docs/side-effects.md). */
    PyObject *effects;       /* strong list in program order: ("global", name, Var),
                                ("attr", name, Var, object Var), ("container", None, Var),
                                ("delattr", name, None Var, object Var),
                                ("delglobal", name, None Var),
                                ("call", method name, TUPLE Var of args, object Var) */
    PyObject *global_overlay;/* strong dict: global name -> Var stored by the trace */
    PyObject *mutated;       /* strong list of input object Vars the trace mutated */
    /* Restart support: stop the top frame before instruction 'stop_at'. */
    int stop_at;             /* -1: run to the end */
    struct fj_TFrame *top;   /* owned: the top frame, kept after the run */
    PyObject *literal_ids;   /* strong set or NULL (built on first use): id() of the code's
                                constants, nested ones too (fj_trace_identity) */
    PyObject *shared_values; /* strong set or NULL, set with cyclic_values: id() of the
                                containers a value holds in more than one place */
    int cyclic_values;       /* set by fj_codegen_*outputs: a value to rebuild contains
                                itself, so containers are made empty then filled */
    int protected_seen;      /* an instruction under an exception handler (try, with) was
                                traced: the graph must be one an error in it can leave to
                                the frame's own code (fj_codegen_can_rerun) */
    /* Captured loops (trace_loops.c, docs/loops.md). */
    PyObject *body;          /* borrowed or NULL: the graph of the loop body being traced */
    struct fj_LoopCtx *loop; /* the innermost loop being captured, or NULL */
    PyObject *loop_policy;   /* borrowed dict (the compile's, kept across restarts):
                                (code id, head) -> iterations to unroll first, -1: never capture */
    int loop_retry;          /* a capture failed: the compile traces again with its policy */
    int capture_loops;       /* config.capture_loops */
    long loop_unroll_limit;  /* config.loop_unroll_limit */
    double backend_seconds;  /* compiler.c: time in the backend call, measured while the
                                structured trace is on (config.trace_dir) */
    PyObject *made;          /* strong list or NULL: the Vars made while this tracer ran
                                that can hold Vars; cleared with the tracer, so reference
                                cycles among them (self.loop = self) are not left to the
                                program's garbage collections (test_gc counts them) */
} fj_Tracer;

/*
** Traces the frame whose inputs are 'view' for code 'co'.  Returns 0 when
** the frame returned (tx->top->retval holds the Var), 1 when it stopped
** before instruction tx->stop_at (tx->top holds the stack and locals
** there), or -1 with fj_Unsupported set when something cannot be captured
** (tx->break_index says at which top-frame instruction) or with another
** exception on internal errors.  tx->top stays allocated until
** fj_trace_free.
*/
int fj_trace_run(fj_Tracer *tx, PyCodeObject *co);
/* Loads local i of 'fr' (an argument read from the frame on first use).
   New reference, NULL with Unsupported when unbound. */
PyObject *fj_trace_load_local(struct fj_TFrame *fr, int i);
/* Runs 'fr' from instruction 'start' (trace.c's run loop: see
   fj_trace_capture_loop for the result 2).  0, 1, 2 or -1. */
int fj_trace_run_body(struct fj_TFrame *fr, int start);
/*
** trace_loops.c (docs/loops.md).  At a FOR_ITER (instruction 'head' of
** 'fr'): when the iterator is a range with more than loop_unroll_limit
** items left and the loop's policy allows, traces the body once into a loop
** node, binds the locals the body sets to its results and exhausts the
** iterator (1); 0 when the loop is left to unroll; -1 on error (Unsupported
** with tx->loop_retry set when the capture failed: the compile traces again
** with the loop unrolled or peeled).
*/
int fj_trace_capture_loop(struct fj_TFrame *fr, int head);
/* At conditional jump 'j' whose popped value is 'cond' (borrowed): when it is a
   while loop's test (top or bottom) and the loop is captured (trace_loops.c),
   1 with *exit the instruction the trace goes on at; 0 when not (*exit
   untouched); -1 on error. */
int fj_trace_capture_while(struct fj_TFrame *fr, int j, PyObject *cond, int *exit);
/* Marks in fr->and_arm the compound tests of fr's code whose loops are
   captured where the trace arrives at them (the compile's loop policy).
   0, or -1 on error. */
int fj_trace_and_arms(struct fj_TFrame *fr);
/* The trace arrives at instruction x, so marked: 1 when the loop was captured
   there (*next its exit), 0 when not (traced on as it is), -1 on error. */
int fj_trace_and_arrive(struct fj_TFrame *fr, int x, int *next);
/* In the trace of a for loop's body being captured: when conditional jump i
   (popping v, 'want' the truth it jumps on) is `if v: break` (trace_loops.c,
   loop_break), the break is an exit of the loop: 1 (*stay where the iteration
   goes on), 0 when it is not a break, -1 on error (fj_Unsupported: the loop is
   not captured). */
int fj_trace_loop_break(struct fj_TFrame *fr, int i, int want, PyObject *v, int *stay);
/* 1 when conditional jump i is such a break (a value before it is kept). */
int fj_trace_loop_is_break(struct fj_TFrame *fr, int i);
/* The return right after a loop with a return inside (fr->loop_ret): *v (a
   new reference, replaced) becomes the pick of the two.  0 or -1. */
int fj_trace_loop_return(struct fj_TFrame *fr, PyObject **v);
/* The trace stops or fails after such a loop before its return: the loop is
   not captured again (retry).  -1. */
int fj_trace_loop_return_lost(struct fj_TFrame *fr);
/* A branch at jump i on v, an array's value that does not change with a
   captured loop's iteration, that is a break of a while loop unrolled around
   it (its test constant): armed to be captured at its first test, -1 (a
   retry); 0 when not so. */
int fj_trace_while_break_arm(struct fj_TFrame *fr, int i, PyObject *v);
/* In the trace of a compound test's loop body (trace_loops.c, and_shape):
   1 when instruction i is one of its top test's jumps to the exit. */
int fj_trace_loop_exit_part(struct fj_TFrame *fr, int i);
/* There, a part of the test on data 'v' (not stolen): the loop_exit node
   that ends the loop where its truth is 'leave'.  0, or -1 (fj_Unsupported
   when the part cannot end the loop so). */
int fj_trace_loop_exit_if(struct fj_TFrame *fr, PyObject *v, int leave);
/* The FJ_VAR_RANGE at the top of fr's stack, not captured: replaced there by
   an iterator over the range of its bounds' values (symbolic ints pinned);
   Unsupported when a bound changes with an enclosing loop.  0 or -1. */
int fj_trace_range_pin(struct fj_TFrame *fr);
/* True when container or instance Var 'v' was made during this trace of
   the innermost captured loop's body (a change to it then happens once per
   iteration, as traced). */
int fj_loop_made_here(fj_Tracer *tx, fj_Var *v);
/* True when the trace has side effects to replay after the graph (effects,
   mutated input containers, global stores): an error the graph raises from
   its data would lose them. */
int fj_trace_effects_pending(fj_Tracer *tx);
/* 0 when index Var 'key' is safe to index with in a graph now; -1 with
   Unsupported when it holds integer arrays (values that may be out of
   bounds at run time) and side effects come before it in the trace. */
int fj_trace_index_may_raise(fj_Tracer *tx, PyObject *key);
/* The body of the loop being captured loads / stores local i of 'fr'. */
void fj_loop_note_load(struct fj_TFrame *fr, int i);
void fj_loop_note_store(struct fj_TFrame *fr, int i);
/* Frees what the tracer run owns (the top frame). */
void fj_trace_free(fj_Tracer *tx);
/* True when local 'i' of the top frame still holds the caller's argument. */
int fj_trace_arg_untouched(struct fj_TFrame *fr, int i);

/*
** fj_ops_for_callable for a value met while tracing, without running the
** program's code: instances of Python classes with their own __hash__ or
** __eq__ are never looked up (the op table lookup hashes the key, and their
** code would run at trace time: test_dict test_init_use_after_free).
** Borrowed; NULL if none.
*/
const struct fj_OpDef *fj_trace_ops_for(PyObject *v);

/* repr(o) for messages without running the program's code (builtin scalars,
** short strings, modules, types, functions, arrays; others <T object at p>).
** New reference, NULL on error. */
PyObject *fj_trace_safe_repr(PyObject *o);
/* The name a program spells a callable, class or module by: "np.roll",
** "np.linalg.solve", "np.add.reduce", "ndarray.sum", "math.floor", "len",
** "torch.sin", "np" (read without the program's code).  New reference, or
** NULL with no error set when 'o' has no such name. */
PyObject *fj_trace_public_name(PyObject *o);
/* True when local i of the top frame is an argument slot. */
int fj_trace_is_arg_slot(struct fj_TFrame *fr, int i);

/* Var constructors (new references, NULL on error). */
fj_Var *fj_var_new(fj_VarKind kind, PyObject *obj, PyObject *items);
fj_Var *fj_var_const(PyObject *obj);
fj_Var *fj_var_node(PyObject *node);
/* A Var of 'kind' holding 'ref' as its obj (CONST) or its items (other kinds),
   a new reference it consumes (NULL: the error is set, and passed on). */
fj_Var *fj_var_take(fj_VarKind kind, PyObject *ref);

/*
** Wraps the input value 'value' read from 'src', adding the guards that pin
** what the trace will assume about it.  Reuses the Var of an equal source.
** Returns a new reference, NULL on error.
*/
fj_Var *fj_trace_input(fj_Tracer *tx, fj_Source *src, PyObject *value);

/* The size of dim 'dim' of the input array at 'asrc' as a symbolic int (a
   graph input read from <asrc>.shape[dim]).  New reference, NULL on error. */
fj_Var *fj_trace_size_input(fj_Tracer *tx, fj_Source *asrc, Py_ssize_t dim);
/* The placeholder Var (in tx->placeholders) whose node is 'node' (borrowed), NULL if none. */
fj_Var *fj_trace_placeholder_var(fj_Tracer *tx, PyObject *node);
/* A new list of CONST Vars, one per item of sequence 'obj'. */
PyObject *fj_trace_const_items(PyObject *obj);
/*
** Before the graph goes to its backend: each placeholder that stays symbolic
** says so in its node's meta (torch backends compile those dynamically):
** an array or tensor input {'dynamic_dims': (d, ...)}, a size input
** {'size_of': (the array's placeholder name, d)}.  Nothing once the trace
** specialized.  0 or -1.
*/
int fj_trace_dynamic_meta(fj_Tracer *tx);

/*
** The trace needs the concrete value or shape of a dynamic value: pins
** every dynamic input with a guard (EQUALS_MATCH for ints, a static
** TENSOR_MATCH for arrays) so the values seen now are exact; the 'dynamic'
** log says which inputs, 'why' and at which source line.  0 or -1.
*/
int fj_trace_specialize(fj_Tracer *tx, const char *why);
/* As fj_trace_specialize where the trace needs the sizes of Var 'v' (for
   'what', as "len()"): Unsupported when they depend on the data. */
int fj_trace_pin_sizes(fj_Tracer *tx, PyObject *v, const char *what);
/* The tracer running now (only one runs at a time per thread). */
extern _Thread_local fj_Tracer *fj_current_tracer;
/* Clears the Vars in tx->made (see fj_Tracer) and drops the list. */
void fj_trace_clear_made(fj_Tracer *tx);

/*
** What the identity of the object Var 'v' stands for at run time is, for a
** CONST Var (or a pinned symbolic scalar) whose trace-time object is 'obj':
**   FJ_ID_SHARED   the same object on every call: None, bools, small ints,
**                  '' and one-character latin-1 strings, b'' and one-byte
**                  bytes, () (CPython caches them), objects that are not
**                  values (types, functions, modules...), and literals: the
**                  very constants of the traced code;
**   FJ_ID_FRESH    an int, float, complex, str, bytes or tuple the trace
**                  computed: CPython makes a new (equal) object on each call,
**                  distinct from every other object;
**   FJ_ID_UNKNOWN  a value read from an input (guarded by value, not by
**                  identity) or an operation's result that is an input's
**                  object itself (s.strip() returning s).
** 'is' on values of known identity is their trace-time identity; a value of
** unknown identity is loaded from its source or is a break.  -1 on error.
*/
enum { FJ_ID_SHARED, FJ_ID_FRESH, FJ_ID_UNKNOWN };
int fj_trace_identity(fj_Tracer *tx, PyObject *v, PyObject *obj);
/* True for the objects CPython caches (FJ_ID_SHARED by value). */
int fj_is_cached_value(PyObject *o);

/* The name of opcode 'op' (static storage), for messages and logs. */
const char *fj_trace_opname(int op);
/* True for None, Ellipsis, bool, int, float, str, complex, bytes (exact types). */
int fj_is_plain_constant(PyObject *v);

/*
** Raises fj_Unsupported with a formatted reason (addresses of default reprs
** cut).  The exception carries 'key', the template 'fmt' (a stable key that
** framejit/breaks.py maps to a break kind), and 'stack', a tuple of (code,
** line, col, end_col) of the traced frames, innermost first.  Always -1.
*/
int fj_unsupported(const char *fmt, ...);
/* The same with 'key' (static storage) as the key, for a generic 'fmt'. */
int fj_unsupported_keyed(const char *key, const char *fmt, ...);

int fj_trace_init(PyObject *module);

/* ---- trace_call.c: calls, attributes, subscripts, operators ---- */
typedef struct fj_TFrame fj_TFrame;

/* iter(v) for a Var (GET_ITER): an ITER Var, new ref (a list's shares its items). */
PyObject *fj_trace_make_iter(fj_TFrame *fr, PyObject *v);
/*
** Before an ITER Var 'it' is advanced (or found exhausted): an iterator made
** by zip() (extra: a list, entry i a tuple of (ITER Var, pos, item) steps
** for row i, entry n for the end) advances its arguments now, lazily and in
** the order CPython's zip takes from them.  0, or -1 (Unsupported when an
** argument was used elsewhere in between).
*/
int fj_trace_iter_step(fj_Var *it);
/* Calls 'fn' with 'args' (array of n Var) and kwnames (tuple or NULL): new ref. */
PyObject *fj_trace_call(fj_TFrame *fr, PyObject *fn, PyObject *const *args, Py_ssize_t n,
                        PyObject *kwnames);
/* obj.name (new ref). */
PyObject *fj_trace_getattr(fj_TFrame *fr, PyObject *obj, PyObject *name);
/* obj.name = v: recorded as a side effect on an input object. 0 or -1. */
int fj_trace_setattr(fj_TFrame *fr, PyObject *obj, PyObject *name, PyObject *v);
/*
** Guards that every input object the trace mutated is none of the other
** mutable inputs it read (NO_ALIASING), so the symbolic state was exact.
** 0 or -1.
*/
int fj_trace_alias_guards(fj_Tracer *tx);
/*
** An input list or dict 'c' is about to change: records it (once) as a side
** effect whose final contents are replayed after the graph.  Containers made
** in the frame need nothing.  0, or -1 with fj_Unsupported.
*/
int fj_trace_note_mutation(fj_Tracer *tx, fj_Var *c);
/*
** True when the mutated input list 'c' changed length at some point of the
** trace (extra2: its length before the first mutation; extra: True once a
** later mutation saw another length).  Replaying its final contents with
** the same length as before would hide those resizes (an append then a pop
** that list.sort must detect as "list modified during sort").
*/
int fj_trace_list_resized(fj_Var *c);
/* LOAD_METHOD: pushes (method-or-NULL, self-or-callable) into out[0], out[1]. */
int fj_trace_load_method(fj_TFrame *fr, PyObject *obj, PyObject *name, PyObject **out);
/* BINARY_OP oparg / COMPARE_OP / unary ops / subscripts (new refs). */
PyObject *fj_trace_binop(fj_TFrame *fr, int oparg, PyObject *a, PyObject *b);
PyObject *fj_trace_compare(fj_TFrame *fr, int op, PyObject *a, PyObject *b);
/* opcode: FJ_PI_UNARY_NEGATIVE/POSITIVE/INVERT, or -1 for abs() */
PyObject *fj_trace_unary(fj_TFrame *fr, int opcode, PyObject *a);
PyObject *fj_trace_getitem(fj_TFrame *fr, PyObject *obj, PyObject *key);
PyObject *fj_trace_contains(fj_TFrame *fr, PyObject *item, PyObject *container, int invert);
/* Truth value of a Var for a branch: 1/0, -1 on error (arrays: unsupported). */
int fj_trace_truth(fj_TFrame *fr, PyObject *v);
/* The Python object a constant-ish Var stands for (borrowed) or NULL if none. */
PyObject *fj_var_as_const(PyObject *v);
/* Appends a call of 'op' with Var arguments (the last len(kwnames) keywords) to the
** graph: a NODE Var (new ref) or NULL (Unsupported on an invalid combination). */
PyObject *fj_trace_graph_call(fj_TFrame *fr, const struct fj_OpDef *op, PyObject *const *args,
                              Py_ssize_t n, PyObject *kwnames);
/* ---- trace_torch.c: torch tensors (torchlib.h) ---- */
/* The Var of the tensor input 'value' at 'src' (a placeholder with
   TENSOR_MATCH on 'mgr', leaving the sizes of the dims in the tuple 'dims'
   out): new ref, NULL with fj_Unsupported or an error. */
fj_Var *fj_trace_tensor_input(fj_Tracer *tx, fj_Source *src, PyObject *mgr, PyObject *value, PyObject *dims);
/* The sizes automatic dynamic compares: an exact array's, or a contiguous
   plain tensor's (its strides then follow its sizes).  1 with *nd and
   sizes filled; 0 for anything else; -1 on error. */
int fj_trace_input_sizes(PyObject *t, int *nd, int64_t *sizes);
/* The trace depends on torch: GLOBAL_STATE pins torch's global state too (once). 0 or -1. */
int fj_trace_torch_begin(fj_Tracer *tx);
/* The items of a NODE Var of a tuple of tensors (getitem nodes): a new list. */
PyObject *fj_trace_torch_items(fj_Tracer *tx, PyObject *v);
/* A field (.values) of a NODE Var of a named tuple of tensors: new ref. */
PyObject *fj_trace_torch_field(fj_Tracer *tx, PyObject *v, PyObject *name);
/* True for a NODE Var of a tensor. */
int fj_trace_is_tensor_var(PyObject *v);
/* 1 when tensor Vars 'target' and 'value' are two views of one tensor node
   (through view ops: x[1:] = x[:-1], y[1:] += y[:-1]), 0 when not.  Eager
   torch copies such a value element by element as it writes (or refuses the
   overlap); a functionalized graph reads it whole first: the trace leaves
   the store or in-place op to CPython (trace_effects.c, trace_torch.c).  A
   store's 'key' (else NULL): storing target[key] itself back (x[k] += 1) is
   no overlap. */
int fj_trace_torch_store_overlaps(PyObject *target, PyObject *value, PyObject *key);
/* 1 when one of the Vars args[0..n) is or holds (in tuples and lists) a tensor. */
int fj_trace_has_tensor(PyObject *const *args, Py_ssize_t n);
/*
** Appends torch op 'op' (fj_torch_*_row or an operator row) of 'target'
** with graph arguments 'targs'/'kwargs' (from the Vars args[0..n)): its
** metadata from the fakes.  The result's Var (new ref) or NULL.
*/
PyObject *fj_trace_torch_node(fj_Tracer *tx, const struct fj_OpDef *op, PyObject *target,
                              PyObject *targs, PyObject *kwargs, PyObject *const *args, Py_ssize_t n,
                              PyObject *kwnames);
/* torch.numel(t), torch.is_floating_point(t) ...: a constant computed on fakes.  New ref. */
PyObject *fj_trace_torch_meta_call(fj_TFrame *fr, PyObject *fn, PyObject *const *args, Py_ssize_t n,
                                   PyObject *kwnames);
/* A tensor's metadata method (attr 0: objv.name(*args)) or attribute (attr 1)
   as a constant: new ref, NULL with fj_Unsupported. */
PyObject *fj_trace_torch_meta(PyObject *objv, PyObject *name, PyObject *const *args, Py_ssize_t n,
                              PyObject *kwnames, int attr);

/* Calls the torch module 'm' (an OBJ Var): its forward inlined.  New ref. */
PyObject *fj_trace_module_call(fj_TFrame *fr, fj_Var *m, PyObject *const *args, Py_ssize_t n,
                               PyObject *kwnames);
/* The DICT Var of module 'm''s _modules (name -> module), its keys guarded.  New ref. */
PyObject *fj_trace_module_children(fj_Tracer *tx, PyObject *m);
/* A torch module's attribute (its __getattr__'s stores too).  New ref. */
PyObject *fj_trace_module_getattr(fj_TFrame *fr, PyObject *m, PyObject *name);

/* 0 when 'm.name = v' on the torch module 'm' is a plain store the trace
   records and replays (guards added), else -1 with fj_Unsupported. */
int fj_trace_module_store_ok(fj_Tracer *tx, fj_Var *m, PyObject *name, PyObject *v);

/* Converts a Var into a graph argument: node, constant, or tuple/list of them. New ref. */
PyObject *fj_var_to_graph_arg(PyObject *v);
/* 1 if 'v' is, or holds in tuples and lists, a NODE Var of a dynamic shape; 0 if not; -1. */
int fj_trace_any_dynamic(PyObject *v);

/* ---- trace_effects.c: mutations and objects made in the frame ---- */
/* STORE_SUBSCR / DELETE_SUBSCR / DELETE_ATTR.  0, or -1 (Unsupported: a break). */
/* Turns the Python error set now (raised by an operation run at trace
   time, which CPython will raise again) into Unsupported naming 'what'.
   Returns NULL. */
PyObject *fj_trace_as_unsupported(const char *what);
int fj_trace_store_subscr(fj_TFrame *fr, PyObject *o, PyObject *k, PyObject *v);
int fj_trace_delete_subscr(fj_TFrame *fr, PyObject *o, PyObject *k);
int fj_trace_delattr(fj_TFrame *fr, PyObject *objv, PyObject *name);
/*
** Before an attribute store or delete ('verb') on 'objv': Unsupported unless
** it is an input object whose attribute 'name' lives in its __dict__
** (generic attribute access, no data descriptor of that name); 'outside'
** ends the message for any other value.  0 or -1.
*/
int fj_trace_attr_in_dict(PyObject *objv, PyObject *name, const char *verb, const char *outside);
/*
** Records the side effect 'eff' of a store or delete (a new reference it
** consumes; NULL: the error is set) and what later loads see: 'name' bound
** to 'value' (a NULL Var: deleted) in tx->global_overlay, or with 'objv' (an
** input object) in its attribute model (extra, made on its first mutation,
** when the object joins tx->mutated for the aliasing guards).  0 or -1.
*/
int fj_trace_record_store(fj_Tracer *tx, PyObject *eff, PyObject *objv, PyObject *name,
                          PyObject *value);
/*
** An op that writes into an input array (in-place operator, setitem, out=):
** Unsupported when that input is read-only now (CPython raises; TENSOR_MATCH
** keeps the writeable flag).  0 or -1.
*/
/* 'u' (a str) equals the ASCII string 's'. */
static inline int fj_str_is(PyObject *u, const char *s)
{
    return PyUnicode_CompareWithASCIIString(u, s) == 0;
}

/* The Var passed as 'out' to a FJ_OPF_OUT op (the keyword, else the
   positional argument after its inputs), borrowed; NULL when none. */
PyObject *fj_trace_out_arg(const struct fj_OpDef *op, PyObject *const *args, Py_ssize_t n,
                           PyObject *kwnames);

int fj_trace_check_writeable(fj_TFrame *fr, const struct fj_OpDef *op, PyObject *const *args,
                             Py_ssize_t n, PyObject *kwnames);
/* Methods of list and dict Vars, of input sets (new refs, NULL on error). */
PyObject *fj_trace_list_method(fj_TFrame *fr, fj_Var *self, PyObject *name, PyObject *const *args,
                               Py_ssize_t n, PyObject *kwnames);
PyObject *fj_trace_dict_method(fj_TFrame *fr, fj_Var *self, PyObject *name, PyObject *const *args,
                               Py_ssize_t n, PyObject *kwnames);
int fj_trace_is_set_method(PyObject *objv, PyObject *name);
PyObject *fj_trace_set_method(fj_TFrame *fr, fj_Var *self, PyObject *name, PyObject *const *args,
                              Py_ssize_t n, PyObject *kwnames);
/* len(s) and 'item in s' of an input set, from the trace's model of its contents. */
PyObject *fj_trace_set_len(fj_TFrame *fr, fj_Var *self);
int fj_trace_set_contains(fj_TFrame *fr, fj_Var *self, PyObject *item);
/* Instances of plain classes (FJ_VAR_INST): creation, attributes, methods, truth. */
int fj_trace_is_plain_class(PyObject *fnv);
PyObject *fj_trace_new_instance(fj_TFrame *fr, PyObject *clsv, PyObject *const *args,
                                Py_ssize_t n, PyObject *kwnames);
PyObject *fj_trace_inst_getattr(fj_TFrame *fr, fj_Var *inst, PyObject *name);
int fj_trace_inst_setattr(fj_TFrame *fr, fj_Var *inst, PyObject *name, PyObject *v);
PyObject *fj_trace_inst_method(fj_TFrame *fr, fj_Var *inst, PyObject *name, PyObject *const *args,
                               Py_ssize_t n, PyObject *kwnames);
int fj_trace_inst_truth(fj_Var *inst);

/* ---- shape_env.c: relations over symbolic sizes and ints ---- */
/*
** A branch on 'node', a Python int expression of the trace's symbolic ints
** (or a comparison of two): adds the RELATION guard that keeps the branch's
** side, *truth that side.  1 when done, 0 when the expression is not one it
** models (the caller pins), -1 on error.
*/
/*
** RELATION programs (guards.h FJ_REL_*), shared by shape_env.c and trace_dims.c:
** fj_rel_word appends an (opcode, operand) pair to the list 'prog' (0 or -1);
** fj_rel_compare / fj_rel_optext: the opcode and printed form of comparison
** Py_LT..Py_GE; fj_rel_add: the guard of the lists 'syms' and 'prog', printed
** 'text', added where it passes for the frame's values now (1), else not (0:
** pin), -1 on error.
*/
int fj_rel_word(PyObject *prog, long long op, long long arg);
long long fj_rel_compare(int py_op);
/* The FJ_REL_ opcode of a Python int binary operator's op (+ - * // %, in place or not), else 0. */
long long fj_rel_arith(const struct fj_OpDef *op);
const char *fj_rel_optext(int py_op);
int fj_rel_add(fj_Tracer *tx, PyObject *syms, PyObject *prog, PyObject *text);

struct fj_Node;
int fj_shape_env_branch(fj_Tracer *tx, struct fj_Node *node, int *truth);
/*
** Keeps 'node' (a Python int expression of the trace's symbols) in relation
** 'cmp_op' (Py_NE...) to 'c' with a RELATION guard, where it holds now: a
** divisor != 0, a shift count >= 0, so the graph's op never raises (Py_GE
** LLONG_MIN: the value fits int64, printed "... fits int64").  1 when
** guarded, 0 when it does not hold now or is not expressible (pin), -1 on
** error.
*/
int fj_shape_env_guard(fj_Tracer *tx, struct fj_Node *node, int cmp_op, long long c);

/* ---- trace_dims.c: symbolic sizes of dynamic dims ---- */
/* The dims tuple of an input array whose dims 'dyn' (tuple of ints) are dynamic. New ref. */
PyObject *fj_dims_for_input(fj_Source *src, PyObject *dyn, int ndim);
/*
** Shape arguments that may hold symbolic ints (issue 22): for zeros, ones,
** empty, full (the positional shape) and reshape (the positional entries
** after the array), 1 with [*lo, *hi) their positions, else 0.
** fj_dims_shape_arg_symbolic: 'v' holds only int constants and symbols a
** size can be (a size input, an int input that is >= 2 now).
*/
int fj_dims_shape_args(const struct fj_OpDef *op, Py_ssize_t n, PyObject *kwnames, Py_ssize_t *lo, Py_ssize_t *hi);
int fj_dims_shape_arg_symbolic(PyObject *v);
/* The size of dim 'd' of array Var 'v': an int constant, the symbolic int
   of the input dim its symbol names, or a form's int arithmetic over them.  NULL with no error when v's sizes are
   not modelled (pin them), NULL with an error on failure.  New reference. */
PyObject *fj_dims_size(fj_TFrame *fr, PyObject *v, int d);
/*
** Before 'op' with a dynamic operand goes into the graph: adds the guards
** (or specializes) that keep every size relation it relies on true.  *out:
** the result's dims (new tuple) or NULL when not modelled.  0 or -1.
*/
int fj_dims_before_call(fj_TFrame *fr, const struct fj_OpDef *op, PyObject *const *args,
                        Py_ssize_t n, PyObject *kwnames, PyObject **out);

/*
** The dims of the result of torch op/target on the Vars args (kwnames as in
** CALL) with a dynamic operand or a symbolic size among them (docs/dynamic.md,
** "torch tensors"), by the op's shape rule (torch_infer.h FJ_TSH_*), given
** 'res_size' (the result fake's sizes, a torch.Size): 1 with *out the dims
** (new tuple), adding the guards the relation needs; 0 when not modelled
** (the caller pins); -1 on error.
*/
int fj_dims_torch(fj_Tracer *tx, const struct fj_OpDef *op, PyObject *target, PyObject *const *args, Py_ssize_t n,
                  PyObject *kwnames, PyObject *res_size, PyObject **out);

/* The result dims of arr[key] (basic indexing by constants, and slices whose
   bounds are int expressions over size symbols: x[:n], x[n:], x[:n + 1]): 1 with *out a new tuple, 0 when not
   modelled, -1 on error. */
int fj_dims_getitem(fj_Tracer *tx, PyObject *arr, PyObject *keyv, PyObject **out);
/*
** obj[start:stop] of an array or tensor with a symbolic bound (x[:n], x[n:],
** x[-n:], x[a:b], x[:n + 1]; n an int input or a size): a getitem node whose
** key holds the bounds' nodes, the result's dim a form over the symbols (as
** the values clamp, guarded: trace_dims.c slice_dim); NULL with no error when
** not this case (the caller subscripts as usual, which pins the bounds).
*/
PyObject *fj_trace_symbolic_slice(fj_TFrame *fr, PyObject *objv, PyObject *start, PyObject *stop, PyObject *step);
/*
** Keys holding slices with symbolic bounds (x[:n, 0], x[..., n:]: BUILD_SLICE
** feeding a subscript, trace.c).  fj_trace_key_symbolic: true for such a key
** Var (a slice, or a tuple holding one).  fj_trace_symbolic_getitem: obj[key]
** with such a key: an array's getitem node whose dims are modelled
** (trace_dims.c slice_dim), else with every dynamic input pinned; another
** object's subscript with the bounds' values.  fj_trace_key_pinned: the key
** with its bounds' values, every dynamic input pinned.  New references.
*/
/* A CONST Var of slice(start, stop) holding the nodes of symbolic int bounds
   (at least one), or NULL with no error when the bounds are not such (the
   step NULL or None).  Only a subscript's key: never rebuilt. */
fj_Var *fj_trace_node_slice(fj_Tracer *tx, PyObject *start, PyObject *stop, PyObject *step);
int fj_trace_key_symbolic(PyObject *k);
/* True for a slice object one of whose bounds is a graph node (x[:n], n symbolic). */
int fj_slice_symbolic(PyObject *o);
PyObject *fj_trace_symbolic_getitem(fj_TFrame *fr, PyObject *objv, PyObject *keyv);
PyObject *fj_trace_key_pinned(fj_TFrame *fr, PyObject *k);

/* The result dims of a broadcasting elementwise op on the Vars args[0..n)
   (constants take no part; anything but nodes and constants specializes):
   as fj_dims_before_call's FJ_SH_BROADCAST.  0 or -1. */
int fj_dims_broadcast(fj_Tracer *tx, PyObject *const *args, Py_ssize_t n, PyObject **out);

/*
** Sizes that depend on the data (x[mask], np.flatnonzero; docs/dynamic.md):
** before 'op' goes into the graph, decides whether it is right for every such
** size, and sets *sym to the result's symbol (0: its sizes are fixed).  1
** when it decided (the op's sizes need nothing more), 0 when no such size
** or mask takes part, -1 with Unsupported naming the op.  fj_dims_count_symbol: the symbol of the
** number of nonzero items of 'n' (made on first use).
*/
int fj_dims_datadep(fj_TFrame *fr, const struct fj_OpDef *op, PyObject *const *args, Py_ssize_t n,
                    PyObject *kwnames, int *sym);
int fj_dims_count_symbol(void *node);
/* True for a NODE Var whose size depends on the data; for an index key whose
   sizes fj_dims_datadep decides with the graph call (a boolean mask, or an
   index array of a size that depends on the data): callers then leave the
   dynamic sizes to it rather than pinning them. */
int fj_dims_is_datadep(PyObject *v);
int fj_dims_key_decides(PyObject *keyv);
/* True when 'fn' is numpy.nonzero or numpy.where (numpy imported already):
   traced on one-dimensional arrays (trace_call.c). */
int fj_trace_is_np_nonzero(PyObject *fn);
/* NumPy calls of several results (trace_multi.c): np.linalg.eigh, qr, svd and
   slogdet on an array of the graph (*handled 0 for any other call: NULL, no
   error; else the result Var or NULL with Unsupported); np.nonzero of an
   array of 2 or more dimensions ('fn' the nonzero or where called); whether
   'fn' is one of those linalg functions; the field 'name' of a named tuple
   those return (a new Var, or NULL with Unsupported). */
PyObject *fj_trace_multi_call(fj_TFrame *fr, PyObject *fn, PyObject *const *args, Py_ssize_t n, PyObject *kwnames,
                              int *handled);
PyObject *fj_trace_nonzero_nd(fj_TFrame *fr, PyObject *fn, PyObject *av);
int fj_trace_is_multi(PyObject *fn);
PyObject *fj_trace_multi_field(fj_Var *t, PyObject *name);
/* np.ndindex / np.ndenumerate iterators (trace.c): the item of flat index Var
   'kv'; and the call of np.ndindex / np.ndenumerate ('handled' as above). */
PyObject *fj_trace_nd_item(fj_TFrame *fr, fj_Var *it, PyObject *kv);
/* A lazy iterator Var (over a range, np.ndindex's) made a plain one, its items
   from its position on listed.  0 or -1. */
int fj_trace_iter_list(fj_Var *it);
PyObject *fj_trace_nd_call(fj_TFrame *fr, PyObject *fn, PyObject *const *args, Py_ssize_t n, PyObject *kwnames,
                           int *handled);

/* One frame being traced: the top frame or an inlined call. */
struct fj_TFrame {
    fj_Tracer *tx;
    PyCodeObject *code;     /* borrowed (held by the function or the tracer) */
    fj_InstrList il;        /* owned: decoded instructions */
    PyObject **locals;      /* owned array of nlocals Var refs (NULL = unbound) */
    int nlocals;
    PyObject **stack;       /* owned array of Var refs */
    int sp, stack_cap;
    PyObject *globals;      /* borrowed: the globals dict names resolve in */
    PyObject *builtins;     /* borrowed */
    fj_Source *globals_src; /* borrowed or NULL: NULL means the top frame's G */
    PyObject *kwnames;      /* strong or NULL: pending KW_NAMES */
    PyObject *func;         /* borrowed: real function being inlined, or NULL */
    fj_Source *func_src;    /* borrowed: its source, or NULL */
    PyObject *closure;      /* borrowed: TUPLE Var of CELL Vars (made-in-frame function) */
    struct fj_TFrame *parent;
    int depth;
    int ip;                 /* index of the instruction being run */
    int lazy_args;          /* top frame: arguments wrap on first load */
    unsigned char *touched; /* owned: per local, stored or deleted by the trace */
    int loop_head, loop_end;/* a captured loop's body runs here: a jump to loop_head ends the
                               iteration, one outside [loop_head, loop_end) is refused; -1 if none */
    int loop_test;          /* a captured while loop's bottom test (-1 if none): it ends the
                               iteration, its value kept in loop_stay (strong) */
    int loop_hole_lo, loop_hole_hi; /* a rotated while loop (trace_loops.c, while_shape): its exit's
                               code inside [loop_head, loop_end), refused like outside; and */
    int loop_wrap;          /* 1 until its body (from after its test) jumped back to loop_head,
                               which then goes on to the test; 0 for other loops */
    int loop_tail;          /* a compound test's loop (trace_loops.c, and_shape): its bottom
                               copy of the test, which ends the iteration like loop_head; -1 */
    unsigned char *and_arm; /* owned or NULL: per instruction, 1 where a compound test's copy
                               starts whose loop is captured on arrival (trace_loops.c) */
    PyObject *loop_stay;
    PyObject *while_seen;   /* strong dict or NULL: while loops' test arrivals with a constant
                               value in this trace, by body start (trace_loops.c) */
    PyObject *retval;       /* strong: the value returned */
    PyObject *loop_ret;     /* strong or NULL: a loop just captured with a return inside, whose
                               exit is a return: (flag, value, values returned, policy head) */
};

/*
** Inlines a call of a user function ('fn': a Python function object, or a
** FUNC Var made in the frame) with bound arguments.  Returns the returned
** Var (new reference) or NULL.
*/
PyObject *fj_trace_inline(fj_TFrame *parent, PyObject *fn, PyObject *const *args,
                          Py_ssize_t nargs, PyObject *kwnames);

/* The most arguments, self included, of a method call the tracer makes. */
#define FJ_MAX_METHOD_ARGS 32
/* Tuples and lists nested deeper than this inside one argument or constant
   are not converted (a list that holds itself would never end). */
#define FJ_MAX_NEST 100
/*
** Fills 'stack' (FJ_MAX_METHOD_ARGS slots) with 'self' then args[0..n), the
** arguments of a method called through its class.  0, or -1 (Unsupported:
** too many arguments).
*/
int fj_trace_self_args(PyObject **stack, PyObject *self, PyObject *const *args, Py_ssize_t n);

#endif
