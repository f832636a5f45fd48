# Attention, Step by Step: the one entry point.
#   make book     build the book into _build/html (installs what it needs;
#                 EDITION=student builds the edition without solutions)
#   make test     the whole suite, as CI runs it
#   make release  student notebooks for every chapter (nbgrader), in _course/release
# Run `make help` for the rest.

SHELL := /bin/bash
.SHELLFLAGS := -eu -o pipefail -c
.DEFAULT_GOAL := help

PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
PY := $(BIN)/python
STAGE := _build/stage
JB_FLAGS := -W --keep-going
export PYTHONPATH := $(CURDIR)
export PYTHONDONTWRITEBYTECODE := 1

.PHONY: help install book book-test book-strict test unit nbval lint format export check-export outputs release bench-grading bench-attention clean

help:  ## list the targets
	@grep -E '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  make %-14s %s\n", $$1, $$2}'

# ---------------------------------------------------------------- installing
$(VENV)/.installed: requirements.lock pyproject.toml
	@test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --disable-pip-version-check -r requirements.lock
	@touch $@

node_modules/.installed: package.json package-lock.json
	npm ci --no-audit --no-fund --loglevel=error
	@touch $@

_vendor/mathjax/tex-chtml.js: node_modules/.installed
	rm -rf _vendor/mathjax
	mkdir -p _vendor
	cp -r node_modules/mathjax/es5 _vendor/mathjax
	@touch $@

install: $(VENV)/.installed _vendor/mathjax/tex-chtml.js  ## create .venv from requirements.lock, MathJax from package-lock.json

# ---------------------------------------------------------------- the book
# EDITION=reader (default): _build/html, solutions behind "Show solution".
# EDITION=student: _build/student/html, no solution text at all (its own stage and cache).
EDITION ?= reader
ifeq ($(EDITION),student)
BOOK_STAGE := _build/student/stage
BOOK_OUT := _build/student
BOOK_HTML := _build/student/html
else
BOOK_STAGE := $(STAGE)
BOOK_OUT := .
BOOK_HTML := _build/html
endif

book: install  ## build the book (EDITION=reader|student) into _build/html or _build/student/html
	$(PY) -m autograder stage-book --edition $(EDITION) $(BOOK_STAGE)
	$(BIN)/jupyter-book build $(BOOK_STAGE) --path-output $(BOOK_OUT) $(JB_FLAGS)
	@if [ "$(BOOK_OUT)" != . ]; then ln -sfn _build/html $(BOOK_HTML); fi
	@echo "The $(EDITION) edition is in $(BOOK_HTML)/index.html"

book-test: install  ## browser tests (Chromium) of the built book and the student edition's leak test
	@command -v chromium >/dev/null || { echo "book-test needs Debian's chromium (apt-get install chromium)"; exit 1; }
	$(BIN)/pytest -m book tests/test_book.py

# ---------------------------------------------------------------- checks
lint: install  ## ruff: lint and formatting, code and notebooks
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .

format: install  ## apply ruff's formatting
	$(BIN)/ruff check --fix .
	$(BIN)/ruff format .

export: install  ## regenerate solutions/ from the #@save cells of the notebooks
	$(PY) -m autograder export

check-export: install  ## fail if solutions/ has drifted from the notebooks
	$(PY) -m autograder export --check

outputs: install  ## re-execute the chapter notebooks in place (committed outputs)
	$(PY) -m autograder execute

unit: install  ## pytest: solutions against the checks, wrong implementations, tooling
	$(BIN)/pytest -m "not slow"

nbval: install  ## nbval: the chapter notebooks run and reproduce their outputs
	MPLBACKEND=module://matplotlib_inline.backend_inline \
	  $(BIN)/pytest --nbval --nbval-current-env --nbval-sanitize-with tests/nbval_sanitize.cfg \
	    -p no:cacheprovider book/*.ipynb

test: install  ## everything CI runs: lint, drift, unit, nbval, nbgrader end to end, both editions, browser tests
	$(MAKE) --no-print-directory lint check-export
	$(BIN)/pytest
	$(MAKE) --no-print-directory nbval book
	$(MAKE) --no-print-directory book EDITION=student
	$(MAKE) --no-print-directory book-test

# ---------------------------------------------------------------- instructors
release: install  ## nbgrader student notebooks for every chapter, in _course/release/
	$(PY) -m autograder release

bench-grading: install  ## benchmark: plain nbgrader against `python -m autograder grade`, 40 notebooks
	$(PY) benchmarks/grading.py

bench-attention: install  ## benchmark: textbook against fused and chunked attention (--device cuda on a GPU)
	$(PY) benchmarks/attention.py

clean:  ## remove everything generated (keeps .venv and node_modules)
	rm -rf _build _course _vendor .pytest_cache
