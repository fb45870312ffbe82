# framejit: make demo (the main job), make test (what CI runs).
# Build mode: FRAMEJIT_BUILD=release|debug|asan (one switch, see setup.py).
PY ?= python3
FRAMEJIT_BUILD ?= release
export FRAMEJIT_BUILD
LIBASAN := $(shell gcc -print-file-name=libasan.so)
# libstdc++ preloaded beside ASan: torch's libraries throw C++ exceptions,
# and ASan's __cxa_throw interceptor needs the real one resolved first
LIBSTDCXX := $(shell gcc -print-file-name=libstdc++.so)
ASAN_ENV := LD_PRELOAD="$(LIBASAN) $(LIBSTDCXX)" PYTHONMALLOC=malloc \
	ASAN_OPTIONS=detect_leaks=0:halt_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1

.PHONY: all build install deps test test-one demo report-demo debug asan test-asan test-debug bench memcheck valgrind clean fuzz \
	cpython-tests numpy-tests bench-native bench-loops test-native-default bench-compare bench-report bench-all

all: build

# torch (for the torch backends; tests/test_torch_backends.py skips without
# it) only pinned, and only on CPython 3.11 x86_64, where this machine kind
# keeps the CPU wheel on local disk: an unpinned torch would download a
# multi-GB CUDA build.  An importable torch is left as it is; a failed
# install is said in one line and the rest goes on.
TORCH_VERSION ?= 2.13.0
TORCH_PLATFORM_OK := import sys, platform; \
	sys.exit(not (sys.implementation.name == "cpython" and sys.version_info[:2] == (3, 11) \
	and platform.machine() == "x86_64"))
deps:
	$(PY) -m pip install -q --disable-pip-version-check "numpy>=1.23" "pytest>=7" "hypothesis>=6" setuptools wheel
	@if $(PY) -c "import torch" 2>/dev/null; then :; \
	elif ! $(PY) -c '$(TORCH_PLATFORM_OK)'; then \
		echo "make deps: torch not installed (torch==$(TORCH_VERSION) is installed on CPython 3.11 x86_64 only); torch tests will skip"; \
	elif ! $(PY) -m pip install -q --disable-pip-version-check torch==$(TORCH_VERSION); then \
		echo "make deps: pip install torch==$(TORCH_VERSION) failed; torch tests will skip"; \
	fi
	@# Chromium (Debian's package) for the report's browser test (tests/test_report.py):
	@# installed when missing and apt-get can (root); otherwise that test skips
	@if command -v chromium >/dev/null 2>&1 || command -v chromium-browser >/dev/null 2>&1; then :; \
	elif [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then \
		(apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium) >/dev/null 2>&1 \
		|| echo "make deps: apt-get install chromium failed; the report's browser test will skip"; \
	else echo "make deps: no chromium (and no root apt-get); the report's browser test will skip"; fi

build:
	$(PY) setup.py -q build_ext --inplace

install: deps
	$(PY) -m pip install -q --disable-pip-version-check --no-build-isolation --no-deps -e .
	$(PY) setup.py -q build_ext --inplace

# make test: the suite on every supported CPython, one after the other:
# $(PY) (3.11 on this machine kind) and pyenv's 3.12 and 3.13; each gets its
# own dependencies, editable install and extension (the .so names carry the
# version).  TEST_PYTHONS chooses others; test-one runs the suite on $(PY).
PYENV_DIR := $(shell pyenv root 2>/dev/null)
TEST_PYTHONS ?= $(PY) $(firstword $(wildcard $(PYENV_DIR)/versions/3.12.*/bin/python3.12)) \
	$(firstword $(wildcard $(PYENV_DIR)/versions/3.13.*/bin/python3.13))
test:
	@for v in 3.12 3.13; do case "$(TEST_PYTHONS)" in *python$$v*) ;; \
		*) echo "make test: no CPython $$v found under pyenv; its run is skipped";; esac; done
	@set -e; for p in $(TEST_PYTHONS); do \
		echo "== make test on $$($$p -c 'import sys; print(sys.version.split()[0])') ($$p)"; \
		$(MAKE) --no-print-directory test-one PY=$$p; done

test-one: install
	$(PY) -m pytest tests

demo: install
	$(PY) examples/demo.py

# The structured trace and its HTML report (docs/report.md) for the demo, a
# program with many graph breaks (examples/breaks.py) and, when torch
# imports, a small torch model (examples/torch_model.py): each program runs
# with FRAMEJIT_TRACE_DIR=$(REPORT_DIR)/<name>/trace, its output goes to
# $(REPORT_DIR)/<name>/output.txt, and the path of each report is printed.
REPORT_DIR ?= build/report-demo
report-demo: build
	@set -e; for name in demo breaks torch_model; do \
		if [ $$name = torch_model ] && ! $(PY) -c "import torch" 2>/dev/null; then \
			echo "make report-demo: torch is not importable: no report for examples/torch_model.py"; continue; fi; \
		rm -rf $(REPORT_DIR)/$$name; mkdir -p $(REPORT_DIR)/$$name; \
		FRAMEJIT_TRACE_DIR=$(REPORT_DIR)/$$name/trace PYTHONPATH=$(CURDIR) \
			$(PY) examples/$$name.py > $(REPORT_DIR)/$$name/output.txt 2>&1 || \
			{ echo "make report-demo: examples/$$name.py failed:"; tail -20 $(REPORT_DIR)/$$name/output.txt; exit 1; }; \
		PYTHONPATH=$(CURDIR) $(PY) -m framejit report $(REPORT_DIR)/$$name/trace \
			-o $(REPORT_DIR)/$$name/report.html > /dev/null; \
		echo "$(REPORT_DIR)/$$name/report.html"; \
	done

debug:
	FRAMEJIT_BUILD=debug $(PY) setup.py -q build_ext --inplace --force

asan:
	FRAMEJIT_BUILD=asan $(PY) setup.py -q build_ext --inplace --force

# The whole suite under AddressSanitizer + UndefinedBehaviorSanitizer.
# The whole suite with the native backend as the default (every graph of
# every test compiled to C kernels, cached in ~/.cache/framejit/kernels or
# $FRAMEJIT_CACHE_DIR): long on a cold cache, not part of make test.
test-native-default: install
	FRAMEJIT_BACKEND=native $(PY) -m pytest tests -p no:cacheprovider

test-asan: deps asan
	$(ASAN_ENV) $(PY) -m pytest -x tests -p no:cacheprovider
	$(PY) setup.py -q build_ext --inplace --force

# The whole suite on the debug build: asserts and the invariant checkers
# (graph.c graph_verify, guards.c fj_guards_verify, bytecode.c
# verify_depths: every graph, guard tree and assembled code object the
# compiler makes is checked).  Long; not part of make test.
test-debug: deps debug
	$(PY) -m pytest -x tests -p no:cacheprovider
	$(PY) setup.py -q build_ext --inplace --force

# Memory stays flat over many warm and cold calls (long; not in make test).
memcheck: build
	$(PY) bench/memcheck.py $(BENCH_FLAGS)

# Valgrind is ~50x slower: a representative subset by default, VALGRIND_TESTS=tests for all.
VALGRIND_TESTS ?= tests/test_evalframe.py tests/test_guards.py tests/test_differential.py \
	tests/test_graph_breaks.py tests/test_dynamic.py tests/test_side_effects.py
# the interpreter itself, not a pyenv shim script (valgrind would trace the shell)
REAL_PY = $(shell $(PY) -c 'import sys; print(sys.executable)')
valgrind: debug
	PYTHONMALLOC=malloc valgrind --error-exitcode=0 --suppressions=tools/valgrind-python.supp \
		--log-file=build/valgrind.log \
		$(REAL_PY) -m pytest -x -q $(VALGRIND_TESTS) -p no:cacheprovider -p no:warnings
	$(PY) tools/valgrind_check.py build/valgrind.log
	$(PY) setup.py -q build_ext --inplace --force

# Benchmarks: each script writes bench/results/<name>.json (command, commit,
# date, machine, tables, targets); bench-report rewrites BENCHMARKS.md from
# them.  BENCH_FLAGS=--quick for shorter loops.
BENCH_FLAGS ?=
bench: build
	$(PY) bench/run_all.py $(BENCH_FLAGS)

# This build against BENCH_BEFORE (main before issue 18's restructuring),
# built in a temporary worktree, alternating processes in one run.
BENCH_BEFORE ?= dc83926
BENCH_ROUNDS ?= 11
BEFORE_DIR ?= /tmp/framejit-before-$(BENCH_BEFORE)
bench-compare: build
	test -d $(BEFORE_DIR) || git worktree add --detach $(BEFORE_DIR) $(BENCH_BEFORE)
	cd $(BEFORE_DIR) && $(PY) setup.py -q build_ext --inplace
	$(PY) bench/compare_builds.py $(BEFORE_DIR) . --rounds $(BENCH_ROUNDS)
	git worktree remove --force $(BEFORE_DIR)

# Loop-heavy kernels: plain, framejit native and Numba's @njit (issue 21;
# installs bench/loops/requirements.txt).  BENCH_LOOPS_FLAGS=--quick for the smaller sizes.
BENCH_LOOPS_FLAGS ?=
bench-loops: build
	$(PY) -m pip install -q -r bench/loops/requirements.txt
	$(PY) bench/loops/bench_loops.py $(BENCH_LOOPS_FLAGS)

# BENCHMARKS.md from bench/results/*.json (measures nothing).
bench-report:
	$(PY) bench/report.py

# Every benchmark (the native one as BENCH_NATIVE_FLAGS says), then the report.
bench-all: bench memcheck bench-native bench-compare bench-report

# The native backend against NumPy, numexpr, Numba and torch.compile, with the
# machine's triad bandwidth (issue #8; the full run ~45 min: BENCH_NATIVE_FLAGS=--quick
# stops at 1e7, ~10 min); writes bench/results/native.json.
# Benchmark-only deps; torch is optional (its column is skipped if it cannot import).
BENCH_NATIVE_FLAGS ?=
bench-native: build
	$(PY) -m pip install -q --disable-pip-version-check -r bench/native/requirements.txt
	-$(PY) -m pip install -q --disable-pip-version-check torch==$(TORCH_VERSION)
	$(PY) bench/native/bench_native.py $(BENCH_NATIVE_FLAGS)

# The differential fuzzer, long run (docs/fuzzing.md): subprocess batches,
# crashes bisected to their seed, findings minimized into tests/fuzz_regressions/.
FUZZ_SEED ?= 1000000
FUZZ_COUNT ?= 100000
# FUZZ_FLAGS=--avoid-open-crashes leaves out constructs whose open bug crashes
# the interpreter (none is open now: tools/fuzz.py AVOID_OPEN_CRASHES)
FUZZ_FLAGS ?=
fuzz: build
	$(PY) tools/fuzz.py --seed $(FUZZ_SEED) --count $(FUZZ_COUNT) --isolate --batch 2000 --progress 0 $(FUZZ_FLAGS)

clean:
	rm -rf build framejit/*.so *.egg-info

# CPython's and NumPy's own tests, plain and under `python -m framejit run`
# (long; not in make test): docs/cpython-tests.md.
cpython-tests: build
	$(PY) tools/cpython_tests.py --all --jobs 2 --timeout 900

# NumPy's whole suite and SciPy's optimize/interpolate/signal/sparse.linalg/stats
# suites, plain and under `python -m framejit run` (long; docs/cpython-tests.md).
numpy-tests: build
	$(PY) -m pip install -q --disable-pip-version-check scipy pytest hypothesis
	$(PY) tools/cpython_tests.py --numpy-all --scipy --timeout 7200
