/*
** config.c: framejit.config as a C struct.  See config.h.
*/
#include "config.h"

#include <string.h>

unsigned long fj_config_version = 1;

static const struct {
    const char *name;
    unsigned bit;
} channel_names[] = {
    {"bytecode", FJ_LOG_BYTECODE},
    {"guards", FJ_LOG_GUARDS},
    {"graph", FJ_LOG_GRAPH},
    {"graph_code", FJ_LOG_GRAPH_CODE},
    {"graph_breaks", FJ_LOG_GRAPH_BREAKS},
    {"recompiles", FJ_LOG_RECOMPILES},
    {"recompiles_verbose", FJ_LOG_RECOMPILES_VERBOSE},
    {"dynamic", FJ_LOG_DYNAMIC},
    {"trace_bytecode", FJ_LOG_TRACE_BYTECODE},
};
#define N_CHANNELS (sizeof(channel_names) / sizeof(channel_names[0]))

unsigned fj_config_channel(const char *name)
{
    for (size_t i = 0; i < N_CHANNELS; i++)
        if (strcmp(channel_names[i].name, name) == 0)
            return channel_names[i].bit;
    return 0;
}

/* hooks.<name> as a C long in [lo, hi]; 'dflt' when the attribute is
   missing.  0, or -1 with an exception naming the setting. */
static int read_long(PyObject *hooks, const char *name, long lo, long hi, long dflt, long *out)
{
    PyObject *v = PyObject_GetAttrString(hooks, name);
    if (v == NULL) {
        if (!PyErr_ExceptionMatches(PyExc_AttributeError))
            return -1;
        PyErr_Clear();
        *out = dflt;
        return 0;
    }
    long x = PyLong_AsLong(v);
    Py_DECREF(v);
    if (x == -1 && PyErr_Occurred())
        return -1;
    if (x < lo || x > hi) {
        PyErr_Format(PyExc_ValueError, "framejit.config.%s must be between %ld and %ld, not %ld",
                     name, lo, hi, x);
        return -1;
    }
    *out = x;
    return 0;
}

static int read_channels(PyObject *hooks, unsigned *out)
{
    *out = 0;
    PyObject *enabled = PyObject_GetAttrString(hooks, "enabled");
    if (enabled == NULL) {
        if (!PyErr_ExceptionMatches(PyExc_AttributeError))
            return -1;
        PyErr_Clear();
        return 0;
    }
    for (size_t i = 0; i < N_CHANNELS; i++) {
        PyObject *key = PyUnicode_FromString(channel_names[i].name);
        int r = key ? PySequence_Contains(enabled, key) : -1;
        Py_XDECREF(key);
        if (r < 0) {
            Py_DECREF(enabled);
            return -1;
        }
        if (r)
            *out |= channel_names[i].bit;
    }
    Py_DECREF(enabled);
    return 0;
}

int fj_config_refresh(fj_Config *cfg, PyObject *hooks)
{
    if (cfg->version == fj_config_version)
        return 0;
    fj_Config n;
    long limit, depth, restarts, transparent, capture, unroll, trace;
    if (read_long(hooks, "recompile_limit", 0, LONG_MAX, 8, &limit) < 0 ||
        read_long(hooks, "inline_depth_limit", 0, 1000, 8, &depth) < 0 ||
        read_long(hooks, "max_restarts", 1, 100000, 100, &restarts) < 0 ||
        read_long(hooks, "transparent", 0, 1, 0, &transparent) < 0 ||
        read_long(hooks, "capture_loops", 0, 1, 1, &capture) < 0 ||
        read_long(hooks, "loop_unroll_limit", 0, LONG_MAX, 16, &unroll) < 0 ||
        read_long(hooks, "trace", 0, 1, 0, &trace) < 0 ||
        read_channels(hooks, &n.channels) < 0)
        return -1;
    n.recompile_limit = limit;
    n.inline_depth_limit = (int)depth;
    n.max_restarts = (int)restarts;
    n.transparent = (int)transparent;
    n.capture_loops = (int)capture;
    n.loop_unroll_limit = unroll;
    n.trace = (int)trace;
    n.version = fj_config_version;
    *cfg = n;
    return 0;
}

static PyObject *config_changed(PyObject *mod, PyObject *unused)
{
    if (++fj_config_version == 0) /* 0 means never filled */
        fj_config_version = 1;
    Py_RETURN_NONE;
}

static PyMethodDef config_methods[] = {
    {"_config_changed", config_changed, METH_NOARGS,
     "Tells the C core that framejit.config or the log channels changed."},
    {NULL},
};

int fj_config_init(PyObject *module)
{
    return PyModule_AddFunctions(module, config_methods);
}
