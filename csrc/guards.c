/*
** guards.c: (placeholder: a RootGuardManager that always passes, until the
** guard subsystem lands).
*/
#include "guards.h"

PyTypeObject *fj_RootGuardManager_Type = NULL;

typedef struct {
    PyObject_HEAD
} RootGuardManager;

static PyType_Slot root_slots[] = {{0, NULL}};
static PyType_Spec root_spec = {"framejit._C.RootGuardManager", sizeof(RootGuardManager), 0,
                                Py_TPFLAGS_DEFAULT, root_slots};

int fj_guards_check(PyObject *root, const fj_FrameView *view)
{
    (void)root;
    (void)view;
    return 1;
}

PyObject *fj_guards_check_verbose(PyObject *root, const fj_FrameView *view)
{
    (void)root;
    (void)view;
    Py_RETURN_NONE;
}

int fj_guards_init(PyObject *module)
{
    fj_RootGuardManager_Type = (PyTypeObject *)PyType_FromSpec(&root_spec);
    if (fj_RootGuardManager_Type == NULL)
        return -1;
    Py_INCREF(fj_RootGuardManager_Type);
    return PyModule_AddObject(module, "RootGuardManager", (PyObject *)fj_RootGuardManager_Type);
}
