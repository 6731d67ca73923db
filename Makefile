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
export AIAYN_THREADS ?= 2
# tests and CI read the Multi30k corpus from the local copy, never the network
export AIAYN_DATA_DIR ?= $(abspath ../shared/data/multi30k)

.PHONY: help setup book test lint pytest nbval outputs bench student site-test clean

help:
	@echo "make book     build the site into _build/html (sets itself up)"
	@echo "make test     lint + package tests + strict nbval over every notebook + site build"
	@echo "make outputs  re-execute every notebook in place (CPU, seeded)"
	@echo "make student  generate the student edition (no solutions) into _student/"
	@echo "make bench    speed measurements (not part of the tests)"
	@echo "make lint     ruff over the package, the tests, the tools and the notebooks"
	@echo "make clean    remove build outputs (keeps .venv)"

# The virtual environment is rebuilt when it is missing or older than the requirements.
$(STAMP): requirements.txt pyproject.toml
	@test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --disable-pip-version-check --upgrade pip
	$(BIN)/python -m pip install --quiet --disable-pip-version-check -r requirements.txt
	@touch $(STAMP)

setup: $(STAMP)

book: setup
	$(BIN)/jupyter-book build . --warningiserror --nitpick --keep-going
	@test -f _build/html/index.html && echo "site: _build/html/index.html"

lint: setup
	$(BIN)/ruff check aiayn_helpers tests tools notebooks book/_ext book/autograder
	$(BIN)/ruff format --check aiayn_helpers tests tools book/_ext book/autograder

pytest: setup
	$(BIN)/pytest tests -m "not site" -q

nbval: setup
	$(BIN)/pytest $(NBVAL_FLAGS) -p no:randomly -q notebooks

site-test: setup
	$(BIN)/pytest tests -m site -q

# The student edition, generated from the same sources (never edited by hand): solutions replaced
# by stubs that raise NotImplementedError, and a site with the solutions hidden.
student: setup
	$(BIN)/python tools/make_student.py --out _student
	$(BIN)/jupyter-book build _student --warningiserror --nitpick --keep-going
	@test -f _student/_build/html/index.html && echo "student notebooks: _student/notebooks, site: _student/_build/html/index.html"

# Grade an nbgrader assignment (default assignment1) in _grading/, written by `make student`:
# submissions go in _grading/submitted/<student>/<assignment>/<assignment>.ipynb; scores in _grading/grades.csv.
grade: setup
	@test -f _grading/nbgrader_config.py || { echo "run make student first (it writes _grading/)"; exit 1; }
	cd _grading && PATH="$(abspath $(BIN)):$$PATH" nbgrader autograde $(or $(A),assignment1) --create
	cd _grading && PATH="$(abspath $(BIN)):$$PATH" nbgrader export --to grades.csv
	@echo "scores: _grading/grades.csv"

# One pytest run, so that its closing line counts every test: the package tests, strict nbval over
# every notebook, and the checks of the site just built from the committed outputs.
NBVAL_FLAGS := --nbval --nbval-current-env --nbval-sanitize-with tests/nbval_sanitize.cfg --nbval-cell-timeout=600
test: lint book
	$(BIN)/pytest $(NBVAL_FLAGS) -p no:randomly tests notebooks

outputs: setup
	$(BIN)/python tools/execute_notebooks.py $(or $(NB),$(NOTEBOOKS))

bench: setup
	$(BIN)/python tools/bench.py

clean:
	rm -rf _build _student .pytest_cache
	find . -name __pycache__ -not -path './.venv/*' -prune -exec rm -rf {} +
