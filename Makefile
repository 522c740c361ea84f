# The two set-up commands of the README are `make run` and `make test`; both create or reuse
# .venv, install the development requirements and build the Cython engine in place.
PYTHON ?= python3
VENV   := .venv
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.installed
PYX    := $(wildcard src/htmlstream/_engine/*.pyx src/htmlstream/_engine/*.pxd)
SAMPLE := src/htmlstream/data/sample.html

.PHONY: run test build lint bench debug fuzz clean

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
	$(VENV)/bin/ruff check src tests benchmarks

test: build lint
	$(PY) -m pytest -n 2 -p no:cacheprovider

bench: build
	$(PY) benchmarks/bench.py

# Bounds checks and sanitizers on; runs the whole suite against that build.
debug: $(STAMP)
	HTMLSTREAM_DEBUG=1 HTMLSTREAM_SANITIZE=1 $(PY) setup.py --quiet build_ext --inplace --force -j 2
	LD_PRELOAD="$$(gcc -print-file-name=libasan.so) $$(gcc -print-file-name=libubsan.so)" \
	  ASAN_OPTIONS=detect_leaks=0 $(PY) -m pytest -p no:cacheprovider -x
	$(PY) setup.py --quiet build_ext --inplace --force -j 2

clean:
	rm -rf build src/htmlstream/_engine/*.c src/htmlstream/_engine/*.so src/htmlstream/_engine/*.html
