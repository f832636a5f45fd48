# Attention, Step by Step: the one entry point.
#   make check    the quick loop while you work (1 to 1½ minutes)
#   make lock     regenerate the hashed locks after editing the dependencies in pyproject.toml
#   make test     the whole suite, as CI runs it (installs everything, the browser included)
#   make book     build the book into _build/html (EDITION=student: the edition without solutions;
#                 COURSE_LANG=zh: the Chinese book, both editions, from locale/zh_CN)
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
# Python keeps its bytecode (__pycache__/, ignored by git and by every copy the course makes),
# even where the environment says otherwise: the course's modules and tests are compiled once
# per clone, not once per process (pytest's workers, the grading workers). `make check`'s pytest
# took 80 s instead of 86 s from a fresh clone (2026-11-27). A sandboxed kernel still writes none.
unexport PYTHONDONTWRITEBYTECODE

.PHONY: help install lock system book book-edition catalogs book-test test test-slow test-notebooks check unit smoke nbval launch-test lint format export check-export outputs release bench-grading bench-attention clean

help:  ## list the targets
	@grep -E '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  make %-14s %s\n", $$1, $$2}'

# ---------------------------------------------------------------- installing
# PyTorch's CPU wheels (PyPI's torch for Linux carries CUDA, GBs). Written here only: `make lock`
# puts it at the top of both locks, and every install reads it from there.
TORCH_INDEX := https://download.pytorch.org/whl/cpu
# Every download has a timeout and one retry: an index that cannot be reached (a closed
# network's CPU index) costs a failed lookup per package, never minutes of waiting.
PIP_NET := --timeout 30 --retries 1

$(VENV)/.installed: requirements.lock
	@test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --disable-pip-version-check --require-hashes $(PIP_NET) \
	  -r requirements.lock
	@touch $@

# The hashed locks, resolved by pip-tools from the extras of pyproject.toml (its [tool.pip-tools]
# holds the options) for CPython 3.11 on Linux x86_64. A version already locked is kept; to move
# one: `make lock LOCK_ARGS="--upgrade-package numpy"` (or `--upgrade` for all). The Gradescope
# lock is constrained by the first, so both hold the same versions. PIP_EXTRA_INDEX_URL replaces
# a machine's own index mirrors (pip's config) for the run: the locks name only the CPU index.
LOCK_ARGS ?=
LOCK := CUSTOM_COMPILE_COMMAND="make lock" PIP_EXTRA_INDEX_URL="$(TORCH_INDEX)" \
	$(BIN)/pip-compile --quiet --pip-args "$(PIP_NET)" $(LOCK_ARGS)
lock: $(VENV)/.installed  ## regenerate requirements.lock and requirements-grader.lock from pyproject.toml
	$(LOCK) --extra grader --extra dev --output-file requirements.lock pyproject.toml
	$(LOCK) --extra grader --constraint requirements.lock --output-file requirements-grader.lock \
	  pyproject.toml

node_modules/.installed: package.json package-lock.json
	npm ci --no-audit --no-fund --loglevel=error
	@touch $@

_vendor/mathjax/tex-chtml.js: node_modules/.installed
	rm -rf _vendor/mathjax
	mkdir -p _vendor
	cp -r node_modules/mathjax/es5 _vendor/mathjax
	@touch $@

# `.venv/bin/attention-course`: the instructors' command (`python -m autograder` from this clone),
# which needs no activated environment and runs from any folder.
$(BIN)/attention-course: autograder/attention-course.sh | $(VENV)/.installed
	install -m 755 $< $@

install: $(VENV)/.installed $(BIN)/attention-course _vendor/mathjax/tex-chtml.js  ## create .venv from requirements.lock (hashed), the attention-course command, MathJax

# Debian packages the full suite needs: chromium (browser tests of the book), postgresql
# (sharded PostgreSQL gradebooks), bubblewrap (sandboxing). Installed with apt-get when
# missing (with sudo when not root), exactly as on a fresh CI machine.
# fonts-noto-cjk: Chromium draws the Chinese edition with it (no missing glyphs), and
# book/figures/make_diagrams.py the Chinese diagrams' labels (tests/test_figures.py).
SYSTEM_PACKAGES := chromium:/usr/bin/chromium postgresql:/usr/lib/postgresql/*/bin/initdb bubblewrap:/usr/bin/bwrap fonts-noto-cjk:/usr/share/fonts/opentype/noto/NotoSansCJK-Regular.ttc
system:  ## install the Debian packages the full suite needs (chromium, postgresql, bubblewrap, CJK fonts)
	@missing=""; for entry in $(SYSTEM_PACKAGES); do \
	  ls $${entry#*:} >/dev/null 2>&1 || missing="$$missing $${entry%%:*}"; done; \
	if [ -n "$$missing" ]; then \
	  sudo=""; [ "$$(id -u)" -eq 0 ] || sudo="sudo"; \
	  echo "installing Debian packages:$$missing"; \
	  DEBIAN_FRONTEND=noninteractive $$sudo apt-get update -qq; \
	  DEBIAN_FRONTEND=noninteractive $$sudo apt-get install -y -qq --no-install-recommends $$missing >/dev/null; \
	fi

# ---------------------------------------------------------------- the book
# EDITION=reader (default): _build/html, solutions behind "Show solution".
# EDITION=student: _build/student/html, no solution text at all (its own stage and cache).
# COURSE_LANG=zh: the Chinese book, translated by Sphinx from locale/zh_CN (autograder/i18n),
# both editions unless EDITION names one: _build/zh/html and _build/zh/student/html, each
# linked as zh/ inside the English build of its edition, the layout publish.yml publishes
# (English at the root, Chinese under zh/), so that the language switcher works locally.
COURSE_LANG ?= en
ifeq ($(COURSE_LANG),en)
EDITION ?= reader
LANG_BUILD := _build
else
EDITION ?= reader student
LANG_BUILD := _build/$(COURSE_LANG)
endif
BOOK_EDITION ?= reader
EDITION_DIR := $(LANG_BUILD)$(if $(filter student,$(BOOK_EDITION)),/student)
BOOK_STAGE := $(EDITION_DIR)/stage
BOOK_OUT := $(if $(filter en-reader,$(COURSE_LANG)-$(BOOK_EDITION)),.,$(EDITION_DIR))
BOOK_HTML := $(EDITION_DIR)/html
# The English build of the edition: the site's root, where zh/ links to the Chinese build.
SITE_HTML := _build$(if $(filter student,$(BOOK_EDITION)),/student/_build)/html

book: install  ## build the book (EDITION=reader|student, COURSE_LANG=en|zh) into _build/…/html
	@for edition in $(EDITION); do \
	  $(MAKE) --no-print-directory book-edition BOOK_EDITION=$$edition; done

book-edition:
	$(PY) -m autograder stage-book --edition $(BOOK_EDITION) --lang $(COURSE_LANG) $(BOOK_STAGE)
	$(BIN)/jupyter-book build $(BOOK_STAGE) --path-output $(BOOK_OUT) $(JB_FLAGS)
	@if [ "$(BOOK_OUT)" != . ]; then ln -sfn _build/html $(BOOK_HTML); fi
	@if [ "$(COURSE_LANG)" != en ]; then mkdir -p $(SITE_HTML) && ln -sfn \
	  "$$(realpath -m --relative-to=$(SITE_HTML) $(EDITION_DIR)/_build/html)" $(SITE_HTML)/$(COURSE_LANG); fi
	@echo "The $(BOOK_EDITION) edition ($(COURSE_LANG)) is in $(BOOK_HTML)/index.html"

# The translation catalogs, one per page, from the English source: Sphinx's gettext builder
# over the reader edition, then sphinx-intl (see autograder/catalogs/); and
# README.zh-CN.md, from README.md's student part and its catalog (autograder/i18n/readme.py).
# Run it after changing any text of the book or of that part of README.md, or a translation
# in README.po; the tests fail while a catalog or README.zh-CN.md is out of date.
CATALOG_LANGS := zh
catalogs: install  ## update the translation catalogs (locale/) and README.zh-CN.md from the English source
	$(PY) -m autograder stage-book --edition reader _build/gettext/stage
	$(BIN)/jupyter-book build _build/gettext/stage --path-output _build/gettext \
	  --builder custom --custom-builder gettext $(JB_FLAGS)
	@for lang in $(CATALOG_LANGS); do \
	  $(PY) -m autograder catalogs _build/gettext/_build/gettext --lang $$lang; done

book-test: install system  ## browser tests (Chromium) of the built books (English editions, Chinese reader) and the leak test
	$(BIN)/pytest -m book tests/test_book.py

# ---------------------------------------------------------------- checks
lint: install  ## ruff (lint and formatting, code and notebooks) and vulture (dead code)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/vulture

format: install  ## apply ruff's formatting
	$(BIN)/ruff check --fix .
	$(BIN)/ruff format .

export: install  ## regenerate solutions/ from the #@save cells of the notebooks
	$(PY) -m autograder export

check-export: install  ## fail if solutions/ has drifted from the notebooks
	$(PY) -m autograder export --check

outputs: install  ## re-execute the chapter notebooks in place (committed outputs)
	$(PY) -m autograder execute

unit: install  ## pytest: every test that needs neither an nbgrader run nor a book build
	$(BIN)/pytest -m "not slow and not smoke"

smoke: install  ## one small grading run: reference, blank, wrong and tampering notebooks
	$(BIN)/pytest -m smoke

# The quick loop's tests, and the rest of the suite, which `make test` runs in test-slow: the
# nbgrader runs (slow, and the smoke grading) and the sweeps, every case of a family the quick
# loop proves once per chapter (tests/_sweep.py: every wrong and unusual answer, every check
# group, through the proxy too, both languages). The two expressions are each other's
# complement: every test runs in `make test` exactly once.
QUICK := not slow and not smoke and not sweep
# The drift check of solutions/ is one of the tests (tests/test_tooling.py), so it runs once.
# The quick tests are spread over both cores (whole files per worker, one thread each).
check: install  ## the quick loop while you work: ruff, vulture, unit tests (drift included), one case per chapter of each sweep
	$(MAKE) --no-print-directory lint
	OMP_NUM_THREADS=1 $(BIN)/pytest -m "$(QUICK)" -n 2 --dist loadfile

nbval: install  ## nbval: the chapter notebooks run and reproduce their committed outputs
	MPLBACKEND=module://matplotlib_inline.backend_inline \
	  $(BIN)/pytest -p nbval --nbval --nbval-current-env --nbval-sanitize-with tests/nbval_sanitize.cfg \
	    -p no:cacheprovider -p no:xdist -o timeout=300 book/*.ipynb

# Also part of `make test` (its slow tests run in test-slow): notebooks in a bare environment.
launch-test: install  ## where chapters run: downloads and releases in a bare venv, the package, workflows
	$(BIN)/pytest tests/test_launch.py

# The slow tests grade with nbgrader end to end; one file per process, on the two cores, the
# longest files first (tests/conftest.py); the course is released once for all (tests/_shared.py).
# With them: the smoke grading and the sweeps, the tests `make check` leaves out (QUICK).
test-slow: install system
	$(BIN)/pytest -m "not ($(QUICK)) and not book" -n 2 --dist loadfile --no-loadscope-reorder

# Each chapter runs once: nbval proves its committed outputs, and both editions of the book
# are built from those outputs (execute_notebooks is off in _config.yml); then the browser
# tests read them. In `make test` this stream runs beside the slow tier, which takes longer.
# The Chinese book is built in its reader edition (about a minute of CPU), the one published
# and the one the browser tests read; its student edition differs from it as the English one
# does, which the English builds prove. `make check` checks the catalogs
# (tests/catalogs/test_audit.py).
test-notebooks: install system
	$(MAKE) --no-print-directory nbval
	$(MAKE) --no-print-directory book
	$(MAKE) --no-print-directory book EDITION=student
	$(MAKE) --no-print-directory book COURSE_LANG=zh EDITION=reader
	$(MAKE) --no-print-directory book-test

# Side by side, each stream gets one thread: PyTorch's OpenMP threads spin while they wait,
# and two streams of two threads each on two cores made a 21 s training cell take over 300 s.
test: install system  ## everything CI runs: check, nbgrader end to end, nbval, both editions, browser tests
	$(MAKE) --no-print-directory check
	OMP_NUM_THREADS=1 $(MAKE) --no-print-directory -j2 --output-sync=target test-slow test-notebooks

# ---------------------------------------------------------------- instructors
release: install  ## nbgrader student notebooks for every chapter, in _course/release/ (COURSE_LANG=zh: _course/zh/)
	$(PY) -m autograder release $(if $(filter-out en,$(COURSE_LANG)),--lang $(COURSE_LANG) --course-dir _course/$(COURSE_LANG))

bench-grading: install  ## benchmark: plain nbgrader against `python -m autograder grade`, 40 notebooks
	$(PY) benchmarks/grading.py

bench-attention: install  ## benchmark: textbook against fused and chunked attention (--device cuda on a GPU)
	$(PY) benchmarks/attention.py

clean:  ## remove everything generated (keeps .venv and node_modules)
	rm -rf _build _course _vendor .pytest_cache
