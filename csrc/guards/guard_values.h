/*
** guard_values.h: reading and comparing the program's values without
** running the program's code (see guard_values.c).  Used by guards.c and
** source.c; the tracer uses fj_guards_value_text, fj_guards_dict_get and
** fj_safe_getattr.
*/
#ifndef FJ_GUARD_VALUES_H
#define FJ_GUARD_VALUES_H

#include "compat.h"

#include <string.h>

/*
** How a value is compared, chosen from the expected value at build time.
** Every kind but EQ_NONE is compared by C code alone (fj_value_same and friends).
*/
enum {
    EQ_NONE = -1, /* not comparable without the program's code: identity only */
    EQ_NUMPY,     /* a NumPy scalar (numpy_scalar_same); EQUALS_MATCH only */
    EQ_INT,       /* exact int fitting a long long (ival) */
    EQ_BIGINT,    /* exact int (digit compare: no str conversion, no user code) */
    EQ_FLOAT,     /* exact float (dval), by bit pattern */
    EQ_STR,       /* exact str */
    EQ_IDENTITY,  /* True, False, None, Ellipsis */
    EQ_TUPLE,     /* exact tuple of value kinds */
    EQ_VALUE,     /* exact bytes or complex */
    EQ_SET,       /* exact set or frozenset of value kinds (aux: dict item -> item); EQUALS_MATCH only */
};

/* The EQ_* kind of 'v' when it is an exact builtin value compared in C
** (None, bool, Ellipsis, int, float, str, bytes, complex, tuples of them),
** else EQ_NONE.  'depth' bounds nested tuples. */
int fj_value_kind(PyObject *v, int depth);

/* v matches the expected value 'e' (a value kind): same exact type and
** equal, floats and complex by bit pattern.  1, 0 or -1.  Runs no program
** code whatever 'v' is. */
int fj_value_same(PyObject *e, PyObject *v);

/* Floats match by bit pattern: -0.0 is not 0.0 (x * s differs in sign) and
** a NaN matches the same NaN (no recompile on every call). */
static inline int fj_double_same(double a, double b)
{
    return memcmp(&a, &b, sizeof(double)) == 0;
}

/* Equality of two exact str objects (no user code). */
static inline int fj_unicode_eq(PyObject *a, PyObject *b)
{
    Py_ssize_t n = PyUnicode_GET_LENGTH(a);
    if (PyUnicode_GET_LENGTH(b) != n || PyUnicode_KIND(a) != PyUnicode_KIND(b))
        return 0;
    return memcmp(PyUnicode_DATA(a), PyUnicode_DATA(b), (size_t)n * PyUnicode_KIND(a)) == 0;
}

/* fj_dict_lookup's answers besides 1 (found) and -1 (error). */
#define FJ_LOOKUP_ABSENT 0
#define FJ_LOOKUP_UNKNOWN 2 /* only the program's code (a key's __eq__ or __hash__) could tell */

/*
** d[key] without running program code: 1 with *out borrowed,
** FJ_LOOKUP_ABSENT, FJ_LOOKUP_UNKNOWN or -1.  'keys_pinned': a DICT_KEYS leaf
** just matched every key of d by value, so a plain lookup is safe.
*/
int fj_dict_lookup(PyObject *d, PyObject *key, int keys_pinned, PyObject **out);

/*
** getattr(o, name) the way guards read it: only when that runs none of the
** program's code (module dicts, plain instance dicts and class attributes,
** C slots and getsets; never a __getattr__, a property of an instance or a
** descriptor class of the program's).  1 with *out a new reference, 0 when
** missing or not knowable without that code, -1 on error.
*/
/* True for a class whose only attribute hook is __getattr__ (torch.nn.Module). */
int fj_only_getattr_hook(PyTypeObject *tp);
int fj_safe_getattr(PyObject *o, PyObject *name, PyObject **out);

/*
** The printer's text for a value: its repr when that runs none of the
** program's code (else "<T object>"), ints past 256 bits in cut hex (their
** decimal repr can raise ValueError), cut to 'max' characters when max > 3.
** New reference, NULL on error.
*/
PyObject *fj_guards_value_text(PyObject *o, Py_ssize_t max);

/*
** d[key] the way guards read it, running none of the program's code (no
** __getitem__ of a dict subclass, no key's __hash__ or __eq__): 1 with *out
** borrowed, 0 when missing or not knowable without that code, -1 on error.
*/
int fj_guards_dict_get(PyObject *d, PyObject *key, PyObject **out);

#endif
