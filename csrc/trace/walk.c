/*
** walk.c: the one walker over traced values.  See walk.h.
*/
#include "walk.h"

#define VAR(o) ((fj_Var *)(o))

int fj_var_visit_items(PyObject *items, fj_VarVisit visit, void *arg)
{
    int r = 0;
    if (PyDict_Check(items)) {
        Py_ssize_t pos = 0;
        PyObject *k, *val;
        while (r == 0 && PyDict_Next(items, &pos, &k, &val))
            r = visit(val, k, arg);
        return r;
    }
    for (Py_ssize_t i = 0; r == 0 && i < PyList_GET_SIZE(items); i++)
        r = visit(PyList_GET_ITEM(items, i), NULL, arg);
    return r;
}

/* visit(child) when 'part' is followed and 'child' is not NULL, else 0. */
static int visit_part(unsigned parts, unsigned part, PyObject *child, fj_VarVisit visit,
                      void *arg)
{
    return (parts & part) && child != NULL ? visit(child, NULL, arg) : 0;
}

int fj_var_children(PyObject *v, unsigned parts, fj_VarVisit visit, void *arg)
{
    fj_Var *vv = VAR(v);
    int r;
    switch (vv->kind) {
    case FJ_VAR_TUPLE:
    case FJ_VAR_LIST:
    case FJ_VAR_DICT:
    case FJ_VAR_CELL:
        return parts & FJ_PART_ITEMS ? fj_var_visit_items(vv->items, visit, arg) : 0;
    case FJ_VAR_INST:
        if ((r = visit_part(parts, FJ_PART_CLASS, vv->extra2, visit, arg)) != 0)
            return r;
        return parts & FJ_PART_ATTRS ? fj_var_visit_items(vv->extra, visit, arg) : 0;
    case FJ_VAR_FUNC:
        if ((r = visit_part(parts, FJ_PART_DEFAULTS, vv->extra, visit, arg)) != 0 ||
            (r = visit_part(parts, FJ_PART_DEFAULTS, vv->extra2, visit, arg)) != 0)
            return r;
        return visit_part(parts, FJ_PART_CLOSURE, vv->items, visit, arg);
    case FJ_VAR_METHOD:
        return visit_part(parts, FJ_PART_SELF, vv->extra, visit, arg);
    case FJ_VAR_RANGE: /* its bounds */
        for (Py_ssize_t i = 0; (parts & FJ_PART_ITEMS) && i < PyTuple_GET_SIZE(vv->extra); i++)
            if ((r = visit(PyTuple_GET_ITEM(vv->extra, i), NULL, arg)) != 0)
                return r;
        return 0;
    default:
        return 0;
    }
}

void fj_var_walk_init(fj_VarWalk *w, unsigned parts, int (*enter)(fj_VarWalk *, PyObject *),
                      int (*again)(fj_VarWalk *, PyObject *, int), void *arg, int max_depth)
{
    memset(w, 0, sizeof(*w));
    w->parts = parts;
    w->enter = enter;
    w->again = again;
    w->arg = arg;
    w->max_depth = max_depth;
}

static int walk_child(PyObject *child, PyObject *key, void *arg)
{
    return fj_var_walk(arg, child);
}

/* The guard: 1 when 'v' (whose id is 'key') is walked into for the first
   time (then marked), 0 when it was before ('again' told), -1 on error. */
static int walk_first(fj_VarWalk *w, PyObject *v, PyObject *key)
{
    if (w->seen == NULL && (w->seen = PyDict_New()) == NULL)
        return -1;
    if (w->again != NULL && w->path == NULL && (w->path = PySet_New(NULL)) == NULL)
        return -1;
    int had = PyDict_Contains(w->seen, key);
    if (had != 0) {
        int on_path = had < 0 || w->path == NULL ? had : PySet_Contains(w->path, key);
        if (on_path < 0)
            return -1;
        return w->again != NULL && w->again(w, v, on_path) < 0 ? -1 : 0;
    }
    if (w->max_depth > 0 && w->depth >= w->max_depth)
        return fj_unsupported("a value made in the frame nests deeper than %d levels",
                              w->max_depth);
    return PyDict_SetItem(w->seen, key, v) < 0 || (w->path && PySet_Add(w->path, key) < 0) ? -1
                                                                                          : 1;
}

int fj_var_walk(fj_VarWalk *w, PyObject *v)
{
    int r = w->enter(w, v);
    if (r != FJ_WALK_INTO)
        return r;
    PyObject *key = PyLong_FromVoidPtr(v);
    if (key == NULL)
        return -1;
    int first = walk_first(w, v, key);
    if (first <= 0) {
        Py_DECREF(key);
        return first;
    }
    w->depth++;
    r = fj_var_children(v, w->parts, walk_child, w);
    w->depth--;
    if (w->path != NULL && PySet_Discard(w->path, key) < 0)
        r = -1;
    Py_DECREF(key);
    return r;
}

void fj_var_walk_clear(fj_VarWalk *w)
{
    Py_CLEAR(w->seen);
    Py_CLEAR(w->path);
}

int fj_var_find(PyObject *v, unsigned parts, int (*enter)(fj_VarWalk *, PyObject *), void *arg)
{
    fj_VarWalk w;
    fj_var_walk_init(&w, parts, enter, NULL, arg, 0);
    int r = fj_var_walk(&w, v);
    fj_var_walk_clear(&w);
    return r == FJ_WALK_STOP ? 1 : r;
}
