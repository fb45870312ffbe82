/*
** config.h: framejit.config and the log channels as one C struct.
**
** Responsible for: the values the compile driver and the tracer read on
** every compile (limits, transparent mode, which log channels are on),
** filled from the Compiler's hooks object once and refilled only after
** framejit.config or set_logs changed something (they call
** framejit._C._config_changed, which bumps fj_config_version).
**
** Not responsible for: the Python surface (framejit/config.py, logs.py) or
** what the values mean (compiler.c, trace.c).
*/
#ifndef FJ_CONFIG_H
#define FJ_CONFIG_H
#include "compat.h"

enum {
    FJ_LOG_BYTECODE = 1 << 0,
    FJ_LOG_GUARDS = 1 << 1,
    FJ_LOG_GRAPH = 1 << 2,
    FJ_LOG_GRAPH_CODE = 1 << 3,
    FJ_LOG_GRAPH_BREAKS = 1 << 4,
    FJ_LOG_RECOMPILES = 1 << 5,
    FJ_LOG_RECOMPILES_VERBOSE = 1 << 6,
    FJ_LOG_DYNAMIC = 1 << 7,
    FJ_LOG_TRACE_BYTECODE = 1 << 8,
};

typedef struct {
    unsigned long version;  /* fj_config_version when filled; 0: never filled */
    long recompile_limit;   /* cache entries per code before it goes run-only */
    int inline_depth_limit; /* user functions inlined into one graph */
    int max_restarts;       /* traces of one frame before giving up */
    int transparent;        /* run mode: no new globals, original names */
    int capture_loops;      /* loops over range() become loop nodes (docs/loops.md) */
    long loop_unroll_limit; /* ...when they have more iterations than this */
    unsigned channels;      /* FJ_LOG_* bits of the channels that are on */
    int trace;              /* the structured trace is on (config.trace_dir,
                               framejit/tracefile.py): compiles are timed and reported */
} fj_Config;

/* Bumped by framejit._C._config_changed(). */
extern unsigned long fj_config_version;

/* Refills 'cfg' from 'hooks' (its attributes recompile_limit,
   inline_depth_limit, max_restarts, transparent, capture_loops,
   loop_unroll_limit, trace, enabled) if config changed
   since it was filled.  A missing attribute keeps the default.  0, or -1
   with an exception. */
int fj_config_refresh(fj_Config *cfg, PyObject *hooks);

/* The FJ_LOG_* bit of the channel named 'name', 0 if there is none. */
unsigned fj_config_channel(const char *name);

/* Adds _config_changed to the module. */
int fj_config_init(PyObject *module);
#endif
