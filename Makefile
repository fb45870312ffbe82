# framejit: make demo (the main job), make test (what CI runs).
# Build mode: FRAMEJIT_BUILD=release|debug|asan (one switch, see setup.py).
PY ?= python3
FRAMEJIT_BUILD ?= release
export FRAMEJIT_BUILD
LIBASAN := $(shell gcc -print-file-name=libasan.so)
ASAN_ENV := LD_PRELOAD=$(LIBASAN) PYTHONMALLOC=malloc \
	ASAN_OPTIONS=detect_leaks=0:halt_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1

.PHONY: all build install deps test demo debug asan test-asan bench memcheck valgrind clean cpython-tests

all: build

deps:
	$(PY) -m pip install -q --disable-pip-version-check "numpy>=1.23" "pytest>=7" "hypothesis>=6" setuptools wheel

build:
	$(PY) setup.py -q build_ext --inplace

install: deps
	$(PY) -m pip install -q --disable-pip-version-check --no-build-isolation --no-deps -e .
	$(PY) setup.py -q build_ext --inplace

test: install
	$(PY) -m pytest tests

demo: install
	$(PY) examples/demo.py

debug:
	FRAMEJIT_BUILD=debug $(PY) setup.py -q build_ext --inplace --force

asan:
	FRAMEJIT_BUILD=asan $(PY) setup.py -q build_ext --inplace --force

# The whole suite under AddressSanitizer + UndefinedBehaviorSanitizer.
test-asan: deps asan
	$(ASAN_ENV) $(PY) -m pytest -x tests -p no:cacheprovider
	$(PY) setup.py -q build_ext --inplace --force

# Memory stays flat over many warm and cold calls (long; not in make test).
memcheck: build
	$(PY) bench/memcheck.py

valgrind: debug
	PYTHONMALLOC=malloc valgrind --error-exitcode=1 --errors-for-leak-kinds=definite \
		--leak-check=full --suppressions=tools/valgrind-python.supp \
		$(PY) -m pytest -x -q tests -p no:cacheprovider

bench: build
	$(PY) bench/run_all.py

clean:
	rm -rf build framejit/*.so *.egg-info

# CPython's and NumPy's own tests, plain and under `python -m framejit run`
# (long; not in make test): docs/cpython-tests.md.
cpython-tests: build
	$(PY) tools/cpython_tests.py
