# The two set-up commands of the README are `make run` and `make test`; both create or reuse
# .venv, install the development requirements and build the Cython engine in place.
PYTHON ?= python3
VENV   := .venv
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.installed
PYX    := $(wildcard src/htmlstream/_engine/*.pyx src/htmlstream/_engine/*.pxd)
SAMPLE := src/htmlstream/data/sample.html

.PHONY: run test build lint bench debug fuzz clean chromium

$(STAMP): pyproject.toml requirements-dev.txt setup.py
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -r requirements-dev.txt
	$(PY) -m pip install --quiet --no-build-isolation --no-deps -e .
	touch $(STAMP)

build: $(STAMP) $(PYX)
	$(PY) setup.py --quiet build_ext --inplace -j 2

run: build
	$(VENV)/bin/htmlstream rewrite --demo

lint: $(STAMP)
	$(VENV)/bin/ruff check src tests benchmarks fuzz

test: build lint chromium
	$(PY) -m pytest -n 2 -p no:cacheprovider

# The e-mail recipe's tests run its decoder script in headless Chromium (and are skipped without
# it): installed here when running as root with apt (CI containers, .ci/run); otherwise say so.
chromium:
	@if command -v chromium >/dev/null 2>&1 || command -v chromium-browser >/dev/null 2>&1; then \
	  :; \
	elif [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then \
	  apt-get install -y chromium || { apt-get update && apt-get install -y chromium; }; \
	else \
	  echo "make: chromium not found (not root, or no apt): the decoder tests in headless"; \
	  echo "      Chromium will be skipped; install it to run them"; \
	fi

bench: build
	$(PY) benchmarks/bench.py

# Bounds checks and sanitizers on; runs the whole suite against that build (docs/reliability.md).
# The debug engine is built from a copy of the sources in build/debug, never in place: the
# normal build in src/ (shared by everyone working in the tree) is left alone, and the copy's
# .c files are generated with the debug directives (boundscheck, wraparound, initializedcheck).
# PYTHONPATH puts build/debug/src ahead of the editable install, for pytest and its subprocesses.
DEBUG_DIR         := build/debug
DEBUG_PYTEST_ARGS ?= -x -n 2
SANITIZER_ENV     := LD_PRELOAD="$$(gcc -print-file-name=libasan.so) $$(gcc -print-file-name=libubsan.so)" \
	ASAN_OPTIONS=detect_leaks=0:abort_on_error=1:strict_string_checks=1:detect_stack_use_after_return=1 \
	UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1 PYTHONMALLOC=malloc
debug: $(STAMP)
	rm -rf $(DEBUG_DIR)/src && mkdir -p $(DEBUG_DIR)
	cp setup.py pyproject.toml README.md $(DEBUG_DIR)/
	cp -r src $(DEBUG_DIR)/src
	find $(DEBUG_DIR)/src \( -name '*.so' -o -name '*.c' -o -name '__pycache__' \) -prune -exec rm -rf {} +
	cd $(DEBUG_DIR) && HTMLSTREAM_DEBUG=1 HTMLSTREAM_SANITIZE=1 $(abspath $(PY)) setup.py --quiet build_ext --inplace -j 2
	PYTHONPATH=$(abspath $(DEBUG_DIR)/src) $(SANITIZER_ENV) $(PY) -c \
	  "import htmlstream._engine.lexer as m; assert '$(DEBUG_DIR)' in m.__file__, m.__file__; print('debug engine:', m.__file__)"
	PYTHONPATH=$(abspath $(DEBUG_DIR)/src) $(SANITIZER_ENV) $(PY) -m pytest -p no:cacheprovider $(DEBUG_PYTEST_ARGS)

# Coverage-guided fuzzing with atheris (fuzz/README.md): FUZZ_SECONDS of fuzz/fuzz_rewriter.py,
# seeded from fuzz/corpus; new inputs go to build/fuzz/corpus, failures to build/fuzz/crash-*.
FUZZ_SECONDS ?= 60
FUZZ_ARGS    ?=
fuzz: build
	@if $(PY) -c "import atheris" 2>/dev/null; then \
	  mkdir -p build/fuzz/corpus && \
	  $(PY) fuzz/fuzz_rewriter.py build/fuzz/corpus fuzz/corpus -max_total_time=$(FUZZ_SECONDS) \
	    -artifact_prefix=build/fuzz/ -print_final_stats=1 $(FUZZ_ARGS); \
	else \
	  echo "make fuzz: skipped, atheris is not installed (.venv/bin/pip install atheris; it has"; \
	  echo "wheels for CPython 3.8-3.12 on Linux and builds from source elsewhere)"; \
	fi

clean:
	rm -rf build src/htmlstream/_engine/*.c src/htmlstream/_engine/*.so src/htmlstream/_engine/*.html
