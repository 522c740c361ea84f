# The two set-up commands of the README are `make run` and `make test`; both create or reuse
# .venv, install the development requirements and build the Cython engine in place.
PYTHON ?= python3
VENV   := .venv
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.installed
PYX    := $(wildcard src/htmlstream/_engine/*.pyx src/htmlstream/_engine/*.pxd \
                    src/htmlstream/_engine/*.h)
SAMPLE := src/htmlstream/data/sample.html

.PHONY: run test test-fast check-dist check-portable chromium mitmproxy-venv build lint bench bench-proxy docs \
        debug \
        fuzz clean

$(STAMP): pyproject.toml requirements-dev.txt requirements-docs.txt setup.py
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -r requirements-dev.txt
	$(PY) -m pip install --quiet --no-build-isolation --no-deps -e .
	touch $(STAMP)

build: $(STAMP) $(PYX)
	$(PY) setup.py --quiet build_ext --inplace -j 2

run: build
	$(VENV)/bin/htmlstream rewrite --demo

# ruff; mypy --strict on the library and its stubs ([tool.mypy] in pyproject.toml); stubtest: the
# stubs of the compiled modules against the built engine (so lint needs the build).
ENGINE_MODULES     := $(subst /,.,$(patsubst src/%.pyx,%,$(wildcard src/htmlstream/_engine/*.pyx)))
STUBTEST_ALLOWLIST := src/htmlstream/_engine/stubtest-allowlist.txt
lint: build
	$(VENV)/bin/ruff check src tests benchmarks fuzz
	$(PY) -m mypy
	$(PY) -m mypy.stubtest --mypy-config-file pyproject.toml --allowlist $(STUBTEST_ALLOWLIST) \
	  $(ENGINE_MODULES)

# Everything: the whole suite (the oracle suites too), the packaging check, the suite's quick
# part against the portable C fallbacks, and Chromium for the tests that run pages in a browser.  `make test-fast` leaves out the slow oracle suites and
# the two long stress tests (pytest markers `oracle`, `slow`) for the inner loop.
# The suite gives the same answer on every run of a commit (issue 38): the hypothesis profile
# `ci` (derandomized, no example database, no timing checks: tests/conftest.py) whatever the
# environment says.  Exploring is `make fuzz`; `make test-fast` and a bare pytest draw anew
# (the `dev` profile).
test: build lint check-dist check-portable chromium mitmproxy-venv
	HYPOTHESIS_PROFILE=ci $(PY) -m pytest -n 2 -p no:cacheprovider

test-fast: build
	$(PY) -m pytest -n 2 -p no:cacheprovider -m "not oracle and not slow"

# sdist -> wheel built from that sdist -> fresh venv (no index, no network) -> import, rewrite a
# document, `htmlstream --version` (tests/check_dist.py; the archives go to build/dist-check).
check-dist: $(STAMP)
	$(PY) tests/check_dist.py build/dist-check

# The engine built with HTMLSTREAM_PORTABLE=1 (no builtins, no SSE2, word loads assembled from
# bytes: what MSVC-less and big-endian machines get, see src/htmlstream/_engine/hs_portable.h),
# from a copy of the sources in build/portable, never in place; then the scanner, tokenizer,
# matcher and rewriter identity tests against it, and the C layer itself (tests/test_portable_c.py).
# The copy keeps the sources' times, so that only what changed since the last run is rebuilt.
PORTABLE_DIR   := build/portable
PORTABLE_TESTS ?= tests/test_portable_c.py tests/test_scanner.py tests/test_tokenizer_unit.py \
	tests/test_tokenizer_html5lib.py tests/test_rewriter_identity.py tests/test_matcher_index.py \
	tests/test_treebuilder_unit.py
check-portable: $(STAMP)
	mkdir -p $(PORTABLE_DIR)/src
	cp setup.py pyproject.toml README.md LICENSE $(PORTABLE_DIR)/
	tar -C src --exclude='*.so' --exclude='*.c' --exclude=__pycache__ -cf - . \
	  | tar -C $(PORTABLE_DIR)/src -xf -
	cd $(PORTABLE_DIR) && HTMLSTREAM_PORTABLE=1 $(abspath $(PY)) setup.py --quiet build_ext --inplace -j 2
	PYTHONPATH=$(abspath $(PORTABLE_DIR)/src) $(PY) -c \
	  "import htmlstream._engine.lexer as m; assert '$(PORTABLE_DIR)' in m.__file__ and m._PORTABLE_BUILD, m.__file__; print('portable engine:', m.__file__)"
	PYTHONPATH=$(abspath $(PORTABLE_DIR)/src) $(PY) -m pytest -p no:cacheprovider -x -n 2 $(PORTABLE_TESTS)

# Tests that need a browser (the e-mail decoder script, pages through the proxy) run headless
# Chromium, and are skipped without it: installed here when running as root with apt (CI,
# .ci/run); otherwise, or when the install fails, say so (the suite still runs).
chromium:
	@if command -v chromium >/dev/null 2>&1 || command -v chromium-browser >/dev/null 2>&1; then \
	  :; \
	elif [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then \
	  DEBIAN_FRONTEND=noninteractive apt-get install -y -q chromium >/dev/null 2>&1 \
	    || { apt-get update -q >/dev/null 2>&1 && DEBIAN_FRONTEND=noninteractive apt-get install -y -q chromium >/dev/null 2>&1; } \
	    || echo "make: installing chromium failed: the headless-Chromium tests will be skipped"; \
	else \
	  echo "make: chromium not found (not root, or no apt): the decoder tests in headless"; \
	  echo "      Chromium will be skipped; install it to run them"; \
	fi

# The mitmproxy addon's tests (tests/test_integrations_mitmproxy.py) run mitmdump from a venv of
# its own: mitmproxy 11.0.2, the last release for Python 3.11, pins Brotli<=1.1 and h11<=0.14,
# which the development requirements cannot share (brotli>=1.2, httpx's h11>=0.16).  The venv
# gets mitmproxy and the worktree's src/ on its path (a .pth file: the editable install's effect,
# with the engine built once, by `make build`, for the same interpreter).  Without the package
# index (no network) it is not made and the tests say so when they skip.
MITM_VENV    := .venv-mitmproxy
MITM_VERSION := 11.0.2
mitmproxy-venv: $(MITM_VENV)/.installed
$(MITM_VENV)/.installed: Makefile
	@rm -f $@
	@test -x $(MITM_VENV)/bin/python || $(PYTHON) -m venv $(MITM_VENV)
	@if $(MITM_VENV)/bin/pip install --quiet 'mitmproxy==$(MITM_VERSION)' >$(MITM_VENV)/pip.log 2>&1; then \
	  $(MITM_VENV)/bin/python -c "import site, sys; open(site.getsitepackages()[0] + \
	    '/htmlstream-src.pth', 'w').write(sys.argv[1] + '\n')" "$(abspath src)" && touch $@; \
	else \
	  echo "make: installing mitmproxy==$(MITM_VERSION) into $(MITM_VENV) failed (see"; \
	  echo "      $(MITM_VENV)/pip.log): the mitmproxy addon's tests will be skipped"; \
	fi

bench: build
	$(PY) benchmarks/bench.py

# issue 29: htmlstream proxy against a bare aiohttp proxy and nginx sub_filter, wrk as the load
# (Debian's nginx-light and wrk, installed here when missing; root, as on the dev machines).
bench-proxy: build
	@command -v wrk >/dev/null && command -v nginx >/dev/null || \
	  { apt-get update && DEBIAN_FRONTEND=noninteractive apt-get install -y nginx-light wrk; }
	$(PY) benchmarks/bench_proxy.py --compare --markdown

# The documentation site (mkdocs.yml) in site/: the guides, the design notes and the API
# reference, which mkdocstrings draws from the docstrings and, for the compiled classes, from the
# built engine's docstrings with the typed signatures of its .pyi stubs (so it needs the build).
# --strict: any warning (a broken link or anchor, an unresolved reference) fails the build.
# (requirements-dev.txt includes requirements-docs.txt; `make test` builds the site too, in
# tests/test_docs_examples.py.)
docs: build
	$(VENV)/bin/mkdocs build --strict --clean --site-dir site

# Bounds checks and sanitizers on; runs the whole suite against that build
# (docs/design/reliability.md).
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
	cp setup.py pyproject.toml README.md LICENSE $(DEBUG_DIR)/
	cp -r src $(DEBUG_DIR)/src
	find $(DEBUG_DIR)/src \( -name '*.so' -o -name '*.c' -o -name '__pycache__' \) -prune -exec rm -rf {} +
	cd $(DEBUG_DIR) && HTMLSTREAM_DEBUG=1 HTMLSTREAM_SANITIZE=1 $(abspath $(PY)) setup.py --quiet build_ext --inplace -j 2
	PYTHONPATH=$(abspath $(DEBUG_DIR)/src) $(SANITIZER_ENV) $(PY) -c \
	  "import htmlstream._engine.lexer as m; assert '$(DEBUG_DIR)' in m.__file__, m.__file__; print('debug engine:', m.__file__)"
	PYTHONPATH=$(abspath $(DEBUG_DIR)/src) $(SANITIZER_ENV) $(PY) -m pytest -p no:cacheprovider $(DEBUG_PYTEST_ARGS)

# Exploring for new bugs, outside the landing path (fuzz/explore.py, fuzz/README.md): for
# FUZZ_SECONDS in all, the hypothesis properties with random seeds and FUZZ_FACTOR times their
# examples (the `fuzz` profile of tests/conftest.py), then the atheris target fuzz/fuzz_rewriter.py
# (seeded from fuzz/corpus; new inputs to build/fuzz/corpus, failures to build/fuzz/crash-*).
# Fails when either found something; each failure is printed with its reproducer.
FUZZ_SECONDS ?= 600
FUZZ_FACTOR  ?= 20
FUZZ_ARGS    ?=
fuzz: build
	FUZZ_ARGS="$(FUZZ_ARGS)" $(PY) fuzz/explore.py --seconds $(FUZZ_SECONDS) --factor $(FUZZ_FACTOR)

clean:
	rm -rf build site $(MITM_VENV) src/htmlstream/_engine/*.c src/htmlstream/_engine/*.so src/htmlstream/_engine/*.html
