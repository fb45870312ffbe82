/*
** graph.h: the operator graph IR (framejit._C.Graph / framejit._C.Node).
**
** Responsible for: nodes (placeholder, call, output) with their targets,
** arguments and inferred metadata; unique node names; printing a graph as a
** table and as Python source; running a graph eagerly from C (the `eager`
** backend returns the graph, which is callable); a small Python-side
** builder used by tests.
**
** Not responsible for: knowing what an operation does (ops.c: the table and
** the metadata inference), tracing bytecode, guards.
**
** Ownership: a graph owns its nodes (strong, in order); a node owns its
** target, args, kwargs and dtype.  Nodes only refer to earlier nodes, so
** there are no reference cycles.
*/
#ifndef FJ_GRAPH_H
#define FJ_GRAPH_H
#include "ops.h"

enum { FJ_NODE_PLACEHOLDER = 1, FJ_NODE_CALL = 2, FJ_NODE_OUTPUT = 3 };

/* The metadata's stand-in for a size that depends on the data (fj_Node.datadep): not 0 or 1,
   so that broadcasting and the native backend treat the dim as a full one. */
#define FJ_DATADEP_SIZE 2

typedef struct fj_Node {
    PyObject_HEAD
    int kind;              /* FJ_NODE_* */
    PyObject *name;        /* strong: str, unique in the graph */
    PyObject *target;      /* strong: callable, or method/attribute name (str); for placeholders the name; NULL for output */
    const fj_OpDef *op;    /* static row; NULL for placeholder/output */
    PyObject *args;        /* strong: tuple (fj_Node items or constants, nested tuples/lists allowed) */
    PyObject *kwargs;      /* strong: dict or NULL */
    Py_ssize_t index;      /* position in the graph's node list */
    /* metadata (placeholders and calls) */
    int vkind;             /* FJ_VAL_*; 0 for output */
    PyArray_Descr *dtype;  /* strong; NULL for output and torch nodes */
    PyObject *fake;        /* strong: a torch node's meta tensor (tuple of them for
                              FJ_VAL_TENSORS), else NULL */
    PyObject *pytype;      /* strong: a tensor placeholder's input type (torch.Tensor or
                              torch.nn.Parameter; NULL for results: torch.Tensor) */
    PyObject *label;       /* strong str: a torch function node's printed target
                              ("torch.sin"), else NULL */
    int ndim;
    npy_intp shape[FJ_MAX_NDIM];
    int users;             /* number of later nodes using this one (each use counted once per node) */
    PyObject *example;     /* strong: trace-time value of a FJ_VAL_PYSCALAR node, else NULL */
    PyObject *ufunc;       /* strong: the ufunc an elementwise call computes (fj_op_ufunc), else NULL:
                              the runner may pass it a dead temporary operand as 'out' */
    /* runner bookkeeping */
    Py_ssize_t last_use;   /* index of the last node that uses this one; -1 if unused */
    PyObject *inputs;      /* strong: tuple of the distinct fj_Node this node reads */
    PyObject *kwnames;     /* strong: tuple of kwargs keys, or NULL */
    PyObject *kwvals;      /* strong: tuple of the kwargs' values in kwnames' order, or NULL */
    int deep;              /* args/kwargs hold nodes inside tuples/lists */
    int variant;           /* the value changes from one iteration of a captured loop to the
                              next (docs/loops.md): its 'example' is only the first
                              iteration's, never a value the trace may use */
    int datadep;           /* nonzero: the size of dim 0 depends on the data (x[mask],
                              np.flatnonzero; docs/dynamic.md): the symbol of that size (equal
                              symbols, equal sizes at run time); shape[0] is then
                              FJ_DATADEP_SIZE, a stand-in the trace never reads as a value */
    int nzsym;             /* the symbol of this node's number of nonzero items, once asked
                              (fj_dims_count_symbol); 0 before */
    unsigned long nzepoch; /* fj_graph_write_epoch() when nzsym was made: after any write
                              since (through a view, say) the count is a new symbol */
    PyObject *dynmeta;     /* strong dict or NULL: a placeholder's symbolic sizes, merged into
                              its meta for backends ('dynamic_dims', 'size_of';
                              fj_trace_dynamic_meta, docs/dynamic.md) */
    int pos;               /* the code-unit offset of the traced code's instruction that made
                              it (an inlined call's nodes: the call's), -1 if none: the
                              source line of the node (the report, docs/report.md) */
} fj_Node;

/* The traced code's instruction the tracer of this thread is at: fj_Node.pos
   of the nodes appended from now on; -1 when not tracing.  Per thread (a trace
   calls Python, the log hooks or torch's fake tensors, where another thread
   may run a trace of its own); set once per traced instruction, inline. */
extern _Thread_local int fj_graph_pos;
static inline void fj_graph_set_pos(int pos)
{
    fj_graph_pos = pos;
}
static inline int fj_graph_get_pos(void)
{
    return fj_graph_pos;
}

/* A counter of the calls appended to any graph that may write into an array
   (in-place operators, item stores, 'out=', loops, torch ops): a value read
   from an array's contents (fj_Node.nzsym) holds while it has not changed. */
unsigned long fj_graph_write_epoch(void);

/* The Node type; valid after fj_graph_init. */
extern PyTypeObject *fj_NodeType;
#define fj_Node_Check(o) (Py_TYPE(o) == fj_NodeType)

/* The node's shape as a tuple of ints (new reference, NULL on error). */
PyObject *fj_node_shape_tuple(fj_Node *n);

/* A new empty graph (new reference, NULL on error). */
PyObject *fj_graph_new(void);
/*
** Appends a placeholder named 'name' (a str; made unique with a _N suffix
** if taken) whose metadata is read from 'example' (an ndarray or a NumPy
** scalar, or Ellipsis for an opaque object input, FJ_VAL_OBJECT; anything
** else is a TypeError).  Returns the node, borrowed (the
** graph owns it), or NULL on error.
*/
fj_Node *fj_graph_placeholder(PyObject *g, PyObject *name, PyObject *example);
/*
** Appends a call of 'op' with 'args' (tuple) and 'kwargs' (dict or NULL;
** neither is stolen) after inferring its output metadata.  On an
** unsupported combination returns NULL with a TypeError/ValueError/
** IndexError set that names the op and the problem, and the graph is
** unchanged.  Returns the node, borrowed.
*/
fj_Node *fj_graph_call(PyObject *g, const fj_OpDef *op, PyObject *args, PyObject *kwargs);
/*
** A placeholder for a torch tensor whose metadata is the meta tensor 'fake'
** (torchlib.h).  Borrowed node, NULL on error.
*/
fj_Node *fj_graph_tensor_placeholder(PyObject *g, PyObject *name, PyObject *fake);
/*
** Appends a torch call of row 'op' (fj_torch_*_row, or an operator row)
** whose target is 'target' (the callable, or the method / attribute name),
** printed as 'label' (a str, or NULL for the target's own text), named
** after 'stem', with 'args'/'kwargs' as for fj_graph_call.  Its result's
** metadata is 'fake_result' (a meta tensor, or a tuple of them): the tracer
** computed it by calling the target on fakes.  Borrowed node, NULL on error.
*/
fj_Node *fj_graph_torch_call(PyObject *g, const fj_OpDef *op, PyObject *target, PyObject *label,
                             PyObject *stem, PyObject *args, PyObject *kwargs, PyObject *fake_result);
/*
** Loop bodies (docs/loops.md).  fj_graph_sub_new makes the graph of a loop
** body inside 'parent' (borrowed: it must outlive the body's trace): a call
** whose arguments hold a node of an enclosing graph gets a placeholder for
** it instead (lifted once, after the placeholders made so far; nested
** bodies lift through their parents).  fj_graph_lifted lists the enclosing
** nodes lifted, in placeholder order (new reference to a list).
** fj_graph_detach forgets the parent and the lifted nodes once the body is
** done.  A call's node is 'variant' when an argument is.
*/
PyObject *fj_graph_sub_new(PyObject *parent);
/* True when 'n' is a node of 'g' itself. */
int fj_graph_owns(PyObject *g, fj_Node *n);
PyObject *fj_graph_lifted(PyObject *g);
void fj_graph_detach(PyObject *g);
/* 'node' of 'g' itself, or a placeholder of 'g' standing for it when it is a
   node of an enclosing graph: borrowed, NULL with ValueError otherwise. */
fj_Node *fj_graph_lift(PyObject *g, fj_Node *node);
/* A placeholder of 'g' named after 'name' with the metadata of 'like' (a
   NumPy node of any graph, or a value as fj_graph_placeholder takes),
   variant when 'variant'.  Borrowed node, NULL on error. */
fj_Node *fj_graph_placeholder_like(PyObject *g, PyObject *name, PyObject *like, int variant);
/*
** Appends a call of row 'op' with callable 'target', printed as 'label',
** named after 'stem', whose metadata is given: copied from 'meta' (a node
** of any graph) when not NULL, else kind 'vkind' with no dtype (a tuple of
** values, FJ_VAL_TUPLE).  No inference.  Borrowed node, NULL on error.
*/
fj_Node *fj_graph_raw_call(PyObject *g, const fj_OpDef *op, PyObject *target, PyObject *label,
                           PyObject *stem, PyObject *args, fj_Node *meta, int vkind);
/* The graph's placeholders and its output node's tuple (borrowed; NULL
   before the output node is added). */
Py_ssize_t fj_graph_nplaceholders(PyObject *g);
PyObject *fj_graph_outputs(PyObject *g);
/* True when the graph holds torch tensors (its library is torch). */
int fj_graph_is_torch(PyObject *g);
/* Appends the output node returning 'outputs' (a tuple of nodes and
   constants; not stolen).  Only once per graph.  0, or -1 on error. */
int fj_graph_output(PyObject *g, PyObject *outputs);
/* Number of call nodes (for counters["stats"]["calls_captured"]). */
Py_ssize_t fj_graph_num_calls(PyObject *g);
/*
** True when a call of the graph writes into an array or tensor the program
** could see: an in-place operator, an item store or a ufunc's 'out' into an
** input or a view of one (writes into arrays the graph made itself do not
** count), any torch op whose result is one of its operands.  A graph that
** does not has no effect before it returns, so when it raises the frame's
** own code can run instead (evalframe.c, "A graph that raised").
*/
int fj_graph_mutates(PyObject *g);
/* Runs the graph eagerly: new reference to the output tuple, NULL on error. */
PyObject *fj_graph_run(PyObject *g, PyObject *const *inputs, Py_ssize_t n);
/*
** Runs call node 'n' alone, reading node arguments from 'env' (the values
** indexed by node index, as fj_graph_run keeps them): exactly what the eager
** runner does for it.  New reference, NULL on error.  (The native backend
** runs the nodes it does not fuse with it.)
*/
PyObject *fj_graph_run_node(fj_Node *n, PyObject **env);
/* 'o' (a node, a constant, or tuples/lists of them) with nodes replaced by
   their values in 'env': new reference, NULL on error. */
PyObject *fj_graph_resolve(PyObject *o, PyObject **env);
/*
** A new tuple (when 'tuple') or list of f(item, ctx) for each item of the
** tuple or list 'seq' (graph arguments nest in them).  NULL when f gives
** NULL (with its error, if any) or on a memory error.
*/
PyObject *fj_map_items(PyObject *seq, int tuple, PyObject *(*f)(PyObject *, void *), void *ctx);
/*
** The 'env' of one run (a strong value or NULL per node): 'small' (an array
** of FJ_ENV_SMALL slots on the runner's stack) when n slots fit, else a
** PyMem array; all NULL.  NULL with MemoryError.  fj_env_free releases the
** first n values and the array.
*/
#define FJ_ENV_SMALL 64 /* most graphs: no allocation per call */
PyObject **fj_env_new(PyObject **small, Py_ssize_t n);
void fj_env_free(PyObject **env, PyObject **small, Py_ssize_t n);
/* Python source of the graph (new reference str, NULL on error). */
PyObject *fj_graph_code(PyObject *g);
/* The tabular listing (new reference str, NULL on error). */
PyObject *fj_graph_tabular(PyObject *g);
int fj_Graph_Check(PyObject *o);

/* Adds Graph and Node to framejit._C. Returns -1 on error. */
int fj_graph_init(PyObject *module);

#endif
