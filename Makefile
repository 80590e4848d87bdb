# Two commands on a fresh machine: `make book` and `make test`. Both create .venv on first use.
PYTHON ?= python3.11
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed
PYTEST_ARGS ?=
JOBS   ?= $(shell nproc 2>/dev/null || echo 2)

.PHONY: book test release clean help publish grade bench

help:
	@echo "make book     build the site into _build/html (executes chapters; cached)"
	@echo "make test     run the whole test suite (pytest; includes browser tests)"
	@echo "make release  regenerate release/ from assignments/ with nbgrader"
	@echo "make publish  build the public site + student tree into _build/publish (leak-checked)"
	@echo "make clean    remove _build"
	@echo "make grade    autograde submitted/ in parallel (JOBS=$(JOBS) workers; see book/instructors.md)"
	@echo "make bench    run the benchmarks in bench/ (site build, autograde, learner); see bench/README.md"

$(STAMP): requirements.txt requirements-dev.txt constraints.txt pyproject.toml coursekit/kernelspec/kernel.json
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -r requirements-dev.txt -c constraints.txt
	# the grading sandbox: its kernel provisioner (an entry point of this package) and the kernelspec naming it
	$(BIN)/python -m pip install --quiet --no-deps --no-build-isolation -e .
	$(BIN)/jupyter kernelspec install --sys-prefix --name course-grading coursekit/kernelspec >/dev/null
	touch $(STAMP)

book: $(STAMP)
	$(BIN)/python -m coursekit execute --jobs $(JOBS)  # chapters run in parallel into the build's jupyter-cache
	$(BIN)/jupyter-book build . -n -W --keep-going

test: $(STAMP)
	$(BIN)/python -m pytest $(PYTEST_ARGS)

release: $(STAMP)
	PATH="$(CURDIR)/$(BIN):$$PATH" $(BIN)/nbgrader generate_assignment transformers --force  # nbgrader runs `alembic` from PATH

clean:
	rm -rf _build

publish: book
	$(BIN)/python -m coursekit publish --out _build/publish --site _build/html

grade: $(STAMP)
	$(BIN)/python -m coursekit grade transformers --jobs $(JOBS)

bench: $(STAMP)
	$(BIN)/python bench/bench_site.py
	$(BIN)/python bench/bench_autograde.py
	$(BIN)/python bench/bench_learner.py
