# Two commands on a fresh machine: `make book` and `make test`. Both create .venv on first use.
PYTHON ?= python3.11
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed
PYTEST_ARGS ?= -n 2 --dist loadfile --no-loadscope-reorder --durations=25  # 2 xdist workers, a module each, tests/conftest.py's order
WORKERS ?= $(shell nproc 2>/dev/null || echo 2)
# The assignments `make release`, `make grade` and `make report` work on (names under assignments/): all by default.
ASSIGNMENT ?= $(notdir $(patsubst %/,%,$(dir $(wildcard assignments/*/*.ipynb))))

# Notebooks the book executes (MyST files with a kernel) and its per-notebook time limit, read from _config.yml.
NOTEBOOKS    = $(shell grep -l '^kernelspec:' book/*.md)
EXEC_TIMEOUT = $(shell $(BIN)/python -m coursekit book timeout)
CACHE        = _build/.jupyter_cache
EXECUTOR    ?= local-parallel

.PHONY: book cache test test-fast release clean help publish grade bench report

help:
	@echo "make book     build the site into _build/html (executes chapters; cached)"
	@echo "make test     run the whole test suite (pytest; includes browser tests)"
	@echo "make test-fast  the unit tests only (tests/unit/, under a minute): run them while you work"
	@echo "make release  regenerate release/ from assignments/ with nbgrader (ASSIGNMENT=name: only that one)"
	@echo "make publish  build the public site + student tree into _build/publish (leak-checked)"
	@echo "make cache    execute the book's notebooks in parallel into _build/.jupyter_cache (part of make book)"
	@echo "make clean    remove _build"
	@echo "make grade    autograde submitted/ in parallel (WORKERS=$(WORKERS) processes, ASSIGNMENT=...; book/instructors.md)"
	@echo "make bench    run the benchmarks in bench/ (site build, autograde, learner, reader); see bench/README.md"
	@echo "make report   regenerate the grading report's tables (planted submissions, autograded for real)"

$(STAMP): requirements.txt requirements-dev.txt constraints.txt requirements-removed.txt pyproject.toml \
		coursekit/kernelspec/kernel.json
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -r requirements-dev.txt -c constraints.txt
	$(BIN)/python -m pip uninstall --quiet --yes -r requirements-removed.txt  # unused extras that slow every start
	# the grading sandbox: its kernel provisioner (an entry point of this package) and the kernelspec naming it
	$(BIN)/python -m pip install --quiet --no-deps --no-build-isolation -e .
	$(BIN)/jupyter kernelspec install --sys-prefix --name course-grading coursekit/kernelspec >/dev/null
	touch $(STAMP)

# Node packages (package-lock.json): katex renders the site's math at build time; lighthouse (a dev dependency) is
# for `make bench` only. npm writes node_modules/.package-lock.json at every install (the packages' own files keep
# the registry's fixed timestamps, so they cannot say whether the install is older than the lock).
NODE_PACKAGES := node_modules/.package-lock.json
LIGHTHOUSE    := node_modules/.bin/lighthouse

$(NODE_PACKAGES): package.json package-lock.json
	npm ci --omit=dev --no-audit --no-fund --loglevel=error

$(LIGHTHOUSE): package.json package-lock.json
	npm ci --no-audit --no-fund --loglevel=error
	touch $(LIGHTHOUSE)

book: $(STAMP) $(NODE_PACKAGES)
	$(MAKE) --no-print-directory cache
	$(BIN)/jupyter-book build . -n -W --keep-going

# The chapters run in parallel into the build's jupyter-cache (jupyter-cache's own CLI, with myst-nb's reader), so
# the stock build finds every notebook cached and executes nothing; unchanged chapters are never run again.
cache:
	mkdir -p _build
	yes | $(BIN)/jcache notebook -p $(CACHE) add --reader myst_nb_md $(NOTEBOOKS) >/dev/null
	$(BIN)/jcache project -p $(CACHE) execute --executor $(EXECUTOR) --timeout $(EXEC_TIMEOUT) --verbosity WARNING

test: $(STAMP) $(NODE_PACKAGES)
	$(BIN)/python -m pytest $(PYTEST_ARGS)

test-fast: $(STAMP)  # the unit tests (tests/unit/: no kernel, no network, no root): what to run while working
	$(BIN)/python -m pytest tests/unit -q

release: $(STAMP)
	for a in $(ASSIGNMENT); do PATH="$(abspath $(BIN)):$$PATH" $(BIN)/nbgrader generate_assignment $$a --force || exit 1; done  # nbgrader runs `alembic` from PATH

clean:
	rm -rf _build

publish: book
	$(BIN)/python -m coursekit publish --out _build/publish --site _build/html

grade: $(STAMP)
	$(BIN)/python -m coursekit grade $(ASSIGNMENT) --workers $(WORKERS)

report: $(STAMP)  # each assignment's planted submissions: instructor/<id>/planted.py
	$(BIN)/python -m coursekit report $(ASSIGNMENT)

bench: $(STAMP) $(LIGHTHOUSE)
	$(BIN)/python bench/bench_site.py
	$(BIN)/python bench/bench_autograde.py
	$(BIN)/python bench/bench_learner.py
	$(MAKE) --no-print-directory book
	$(BIN)/python bench/bench_reader.py

# --- The hosted course (book/instructors.md "Hosting the course"): JupyterHub + nbgrader's exchange, real accounts ---
# As root. `make hub` builds the hub's environment in /opt/coursekit-hub (from the system python3.11, cached), creates
# the accounts, the course directory and the exchange, delegates the grading cgroups to the grader and starts the hub on
# http://127.0.0.1:8000. ROSTER=students.csv loads a real roster (nbgrader's id,first_name,last_name,email).
# `make hub-down` stops it and removes what it created (the environment stays; `make hub-purge` removes it too).
# On a real host, `make hub HUB_ARGS=--service` runs the hub as the systemd service coursekit-hub (survives reboots).
ROSTER   ?= hub/roster.csv
HUB_PORT ?= 8000
HUB_ARGS ?=
HUB_PY   := /usr/bin/python3.11
.PHONY: hub hub-down hub-purge hub-env

hub-env:
	PYTHONPATH=$(CURDIR) $(HUB_PY) -m coursekit hub install

hub: hub-env
	PYTHONPATH=$(CURDIR) /opt/coursekit-hub/venv/bin/python -m coursekit hub up --roster $(ROSTER) --port $(HUB_PORT) $(HUB_ARGS)

hub-down:
	PYTHONPATH=$(CURDIR) /opt/coursekit-hub/venv/bin/python -m coursekit hub down

hub-purge:
	PYTHONPATH=$(CURDIR) /opt/coursekit-hub/venv/bin/python -m coursekit hub down --purge
