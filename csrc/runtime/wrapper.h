/*
** wrapper.h: framejit._C.CompiledFunction, what framejit.compile returns.
**
** Responsible for: a callable that sets this thread's eval-frame callback
** for the duration of one call of the wrapped function and restores the
** previous one after (exceptions included), in C so a warm call costs one
** vectorcall more than a plain call; method binding (__get__); a __dict__
** so functools.update_wrapper can copy __name__, __doc__, __wrapped__.
**
** Not responsible for: what the callback does (compiler.c, evalframe.c).
*/
#ifndef FJ_WRAPPER_H
#define FJ_WRAPPER_H
#include "compat.h"

int fj_wrapper_init(PyObject *module);

#endif
