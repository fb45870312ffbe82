/*
** frameview.h: what framejit reads of a frame about to run.
**
** Responsible for: fj_FrameView, the bottom layer that access paths
** (source.c), guard trees (guards.c) and the tracer read a frame's inputs
** through, so none of them depends on how a version of CPython lays out its
** frames (compat.h and evalframe.c fill it).
**
** Not responsible for: reading values out of it (source.c's fetch).
*/
#ifndef FJ_FRAMEVIEW_H
#define FJ_FRAMEVIEW_H

#include "compat.h"

/*
** Everything is borrowed and valid for the duration of one check or trace.
** 'localsplus' are the frame's fast-local slots in co_localsplusnames order
** (a fresh frame: arguments filled, other slots NULL; cell arguments still
** hold their raw value).  'closure' is the function's tuple of cells (NULL
** when there are none).
*/
typedef struct {
    PyObject *const *localsplus; /* borrowed */
    Py_ssize_t nlocalsplus;
    PyObject *closure;  /* borrowed, tuple of cells or NULL */
    PyObject *globals;  /* borrowed, dict */
    PyObject *builtins; /* borrowed, dict */
} fj_FrameView;

#endif
