/*
** bytecode_tables.c: the extension's copy of CPython 3.11's opcode tables.
**
** Responsible for: defining _PyOpcode_Caches and _PyOpcode_Deopt (through
** compat.h with FJ_DEFINE_OPCODE_TABLES), which libpython 3.11 keeps
** private.  Nothing else: the helpers that read them are in compat.h.
*/
#define FJ_DEFINE_OPCODE_TABLES 1
#include "compat.h"

/* Keeps the file a non-empty translation unit on unsupported versions. */
int fj_bytecode_tables_present(void);
int fj_bytecode_tables_present(void)
{
    return FJ_SUPPORTED;
}
