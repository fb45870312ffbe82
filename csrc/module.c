/*
** module.c: the framejit._C extension module.
**
** Responsible for: creating the module and asking each subsystem to add its
** names (each subsystem's fj_<part>_init).  Holds no state of its own.
*/
#define FJ_NUMPY_IMPORT
#include "fj_numpy.h"

#include "bytecode.h"
#include "compiler.h"
#include "cache.h"
#include "evalframe.h"
#include "graph.h"
#include "guards.h"
#include "native.h"
#include "ops.h"
#include "source.h"
#include "trace.h"
#include "wrapper.h"

static struct PyModuleDef fj_module_def = {
    PyModuleDef_HEAD_INIT,
    .m_name = "framejit._C",
    .m_doc = "framejit's C core: eval-frame hook, cache, guards, tracer, codegen.",
    .m_size = -1,
};

PyMODINIT_FUNC PyInit__C(void);

PyMODINIT_FUNC PyInit__C(void)
{
    PyObject *m = PyModule_Create(&fj_module_def);
    if (m == NULL)
        return NULL;
    if (_import_array() < 0)
        goto error;
    if (PyModule_AddIntConstant(m, "SUPPORTED", FJ_SUPPORTED) < 0)
        goto error;
    if (fj_guards_init(m) < 0 || fj_cache_init(m) < 0 || fj_evalframe_init(m) < 0 ||
        fj_bytecode_init(m) < 0 || fj_graph_init(m) < 0 || fj_ops_init(m) < 0 ||
        fj_source_init(m) < 0 || fj_trace_init(m) < 0 || fj_compiler_init(m) < 0 ||
        fj_wrapper_init(m) < 0 || fj_native_init(m) < 0)
        goto error;
    return m;
error:
    Py_DECREF(m);
    return NULL;
}
