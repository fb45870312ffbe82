/*
** walk.h: the one walker over traced values (fj_Var).
**
** Responsible for: which fields of which Var kind hold other Vars
** (fj_var_children, the counterpart of a tp_traverse), and walking all that
** is reachable from a Var with one guard against shared parts and cycles
** (fj_var_walk, the counterpart of the collector that calls tp_traverse).
** Values are graphs, not trees: a list made in the frame may be shared
** ('data = [data, data]', exponential as a tree) or contain itself
** ('a.append(a)'); a walk goes into each Var once.
**
** Not responsible for: what a walk does at each Var (its 'enter' callback
** says, from the Var's kind, whether to go into it); the garbage
** collector's protocol (var_traverse in trace.c visits the Python objects a
** Var owns, not the Vars they hold).
*/
#ifndef FJ_WALK_H
#define FJ_WALK_H

#include "trace.h"

/*
** The parts of a value that hold Vars, to choose which a walk follows.
** Not parts: an ITER's items (a snapshot of what it yields, never rebuilt),
** zip's steps, and an input object's attribute model (OBJ extra: the
** effects that wrote it hold the same Vars).
*/
enum {
    FJ_PART_ITEMS = 1 << 0,    /* TUPLE, LIST: items; DICT: the values of items; CELL: contents */
    FJ_PART_CLASS = 1 << 1,    /* INST: extra2, the class Var */
    FJ_PART_ATTRS = 1 << 2,    /* INST: the values of extra, its __dict__ */
    FJ_PART_DEFAULTS = 1 << 3, /* FUNC: extra (defaults), then extra2 (kwdefaults) */
    FJ_PART_CLOSURE = 1 << 4,  /* FUNC: items, the closure TUPLE Var */
    FJ_PART_SELF = 1 << 5,     /* METHOD: extra, self */
};

/*
** A visit of the Var 'child' held by the value walked; 'key' is its key
** (DICT items, INST attributes) or NULL.  Returns 0 to go on; any other
** result ends the visits and is returned by the function that made them.
*/
typedef int (*fj_VarVisit)(PyObject *child, PyObject *key, void *arg);

/* Visits the Vars of 'items': a list's entries in order, or a dict's values
   with their keys in the dict's order.  0 or the first nonzero visit. */
int fj_var_visit_items(PyObject *items, fj_VarVisit visit, void *arg);

/*
** Visits each Var that 'v' holds in the parts 'parts' (FJ_PART_* bits), in
** the order of the enum (and of each part's fields).  0 or the first
** nonzero visit.
*/
int fj_var_children(PyObject *v, unsigned parts, fj_VarVisit visit, void *arg);

/* What an 'enter' callback asks of fj_var_walk (or -1: an error is set). */
enum {
    FJ_WALK_SKIP = 0, /* not into this Var */
    FJ_WALK_INTO = 1, /* into its parts, unless the walk went into it before */
    FJ_WALK_STOP = 2  /* end the whole walk (a search found what it looked for) */
};

/* One walk over the Vars reachable from its roots. */
typedef struct fj_VarWalk fj_VarWalk;
struct fj_VarWalk {
    unsigned parts; /* FJ_PART_* followed */
    /* Each Var reached, each time: FJ_WALK_SKIP, _INTO, _STOP or -1. */
    int (*enter)(fj_VarWalk *w, PyObject *v);
    /* NULL, or a Var the walk went into, reached again after 'enter' said
       FJ_WALK_INTO: 'on_path' when reached from its own parts (it contains
       itself).  0 or -1. */
    int (*again)(fj_VarWalk *w, PyObject *v, int on_path);
    void *arg;      /* borrowed: the walk's own state, for the callbacks */
    int max_depth;  /* > 0: going into a Var under that many is Unsupported */
    int depth;      /* Vars being walked into now */
    PyObject *seen; /* strong dict or NULL (made on first use): id(Var) -> Var of every
                       Var walked into, the one guard */
    PyObject *path; /* strong set or NULL (made with 'again'): id() of the Vars being
                       walked into now */
};

/* A walk following 'parts', with 'enter', 'again' (or NULL) and 'arg'. */
void fj_var_walk_init(fj_VarWalk *w, unsigned parts, int (*enter)(fj_VarWalk *, PyObject *),
                      int (*again)(fj_VarWalk *, PyObject *, int), void *arg, int max_depth);
/*
** Walks from the root 'v' (several roots may be walked in turn; each Var is
** gone into once in all): 'enter' then, on FJ_WALK_INTO the first time, the
** parts, depth first in fj_var_children's order.  Returns 0 when the walk
** is done, FJ_WALK_STOP when 'enter' stopped it, -1 on error.
*/
int fj_var_walk(fj_VarWalk *w, PyObject *v);
/* Frees what the walk made (its 'seen' dict and 'path' set). */
void fj_var_walk_clear(fj_VarWalk *w);

/* 1 if 'enter' (given 'arg') stops a walk of 'parts' from 'v', 0 if not, -1 on error. */
int fj_var_find(PyObject *v, unsigned parts, int (*enter)(fj_VarWalk *, PyObject *), void *arg);

#endif
