"""Build of the C core, framejit._C.

One switch selects the build mode: the environment variable FRAMEJIT_BUILD
is `release` (default), `debug` (-O0 -g3, asserts on) or `asan`
(AddressSanitizer + UndefinedBehaviorSanitizer; run the tests under
`make test-asan`, which preloads libasan and sets PYTHONMALLOC=malloc).
"""
import glob
import os
import sys

import numpy
from setuptools import Extension, setup

mode = os.environ.get("FRAMEJIT_BUILD", "release")
warnings = [
    "-std=c11", "-Wall", "-Wextra", "-Wshadow", "-Wmissing-prototypes",
    "-Wstrict-prototypes", "-Wno-unused-parameter",
    "-Wno-missing-field-initializers", "-Wno-cast-function-type", "-Werror",
]
compile_args = list(warnings)
link_args = []
macros = [("NPY_NO_DEPRECATED_API", "NPY_1_7_API_VERSION")]
if mode == "release":
    compile_args += ["-O2", "-DNDEBUG"]
elif mode == "debug":
    compile_args += ["-O0", "-g3", "-UNDEBUG"]
elif mode == "asan":
    san = ["-fsanitize=address,undefined", "-fno-omit-frame-pointer",
           "-fno-sanitize-recover=undefined"]
    compile_args += ["-O1", "-g", "-UNDEBUG"] + san
    link_args += san
else:
    raise SystemExit(f"FRAMEJIT_BUILD must be release, debug or asan, not {mode!r}")

# CPython 3.11, 3.12 and 3.13 are supported (csrc/runtime/compat.h and one
# dialect unit per version, csrc/bytecode/dialect_3XX.c; docs/porting.md);
# elsewhere a stub module imports fine and everything runs uncompiled
# (csrc/runtime/unsupported.c).
if (3, 11) <= sys.version_info[:2] <= (3, 13):
    sources = sorted(f for f in glob.glob("csrc/**/*.c", recursive=True)
                     if not f.endswith("unsupported.c"))
else:
    sources = ["csrc/runtime/unsupported.c"]
# csrc/ is grouped by stage (docs/architecture.md); every folder is on the
# include path, so a file includes another by its name alone
include_dirs = sorted({os.path.dirname(f) for f in glob.glob("csrc/**/*.h", recursive=True)})

ext = Extension(
    "framejit._C",
    sources=sources,
    depends=sorted(glob.glob("csrc/**/*.h", recursive=True)),
    include_dirs=include_dirs + [numpy.get_include()],
    define_macros=macros,
    extra_compile_args=compile_args,
    extra_link_args=link_args,
    libraries=["dl", "pthread"],  # the native backend's dlopen and threads
)

setup(ext_modules=[ext])
