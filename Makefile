# Workbench developer commands.
#
#   make lab        set up .venv (once) and open JupyterLab on notebooks/
#   make test       set up .venv (once) and run the whole test suite, notebooks included
#   make notebooks  re-execute the tutorial notebooks in place (to commit their outputs)
#   make bench      run the benchmark scripts in bench/
#   make lint       ruff check
#   make docs       build the static tutorial site (build/site/) from the committed notebooks
#
# Set-up is shared by every target through `setup`: it creates .venv with `python3 -m venv`
# when it is missing, installs the package editable with the [dev], [gpu], [graph] and [models] extras
# (graph: torch and onnx; gpu: numba-cuda, the CUDA tests run under its simulator,
# NUMBA_ENABLE_CUDASIM=1, no GPU needed), installs the
# Graphviz `dot` program (Debian package `graphviz`) when it is missing, and Debian's chromium
# (with fonts-liberation) for the real-browser test (Playwright drives /usr/bin/chromium; it
# never downloads a browser). The pip step re-runs
# only when pyproject.toml is newer than the stamp file, so a second `make test` starts at once.

SHELL := /bin/bash
.DEFAULT_GOAL := help

PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.workbench-installed
PYTEST_ARGS ?=
JUPYTER_PORT ?= 8888
IS_ROOT := $(shell [ "$$(id -u)" = 0 ] && echo yes)
ALLOW_ROOT := $(if $(IS_ROOT),--allow-root,)

.PHONY: help setup graphviz browser lab test notebooks bench lint docs

help:
	@echo "make lab        open JupyterLab on notebooks/ (sets up .venv first)"
	@echo "make test       run the whole test suite, notebooks included (sets up .venv first)"
	@echo "make notebooks  re-execute notebooks/*.ipynb in place"
	@echo "make bench      run bench/*.py"
	@echo "make lint       ruff check"
	@echo "make docs       build the static tutorial site into build/site/"

setup: $(STAMP) graphviz browser

# The interpreter of the venv. Debian's system Python needs the python3-venv package for
# `-m venv`; as root we install it, otherwise we say what is missing.
$(PY):
	@echo "==> creating $(VENV) with $(PYTHON)"
	@if ! $(PYTHON) -m venv $(VENV) 2>/dev/null; then \
	  rm -rf $(VENV); \
	  if [ -n "$(IS_ROOT)" ] && command -v apt-get >/dev/null; then \
	    echo "==> $(PYTHON) -m venv failed: installing Debian's python3-venv"; \
	    apt-get update -qq && DEBIAN_FRONTEND=noninteractive \
	      apt-get install -y -qq --no-install-recommends python3-venv >/dev/null && \
	    $(PYTHON) -m venv $(VENV); \
	  else \
	    echo "error: '$(PYTHON) -m venv' failed. On Debian/Ubuntu run:" >&2; \
	    echo "    sudo apt-get install python3-venv" >&2; \
	    exit 1; \
	  fi; \
	fi

$(STAMP): pyproject.toml | $(PY)
	@echo "==> installing workbench (editable, [dev,gpu,graph,models]) into $(VENV)"
	$(PY) -m pip install --quiet --disable-pip-version-check -e '.[dev,gpu,graph,models]'
	@touch $@

# Graphviz: the PyPI package is only a wrapper around the `dot` program.
graphviz:
	@if ! command -v dot >/dev/null 2>&1; then \
	  if [ -n "$(IS_ROOT)" ] && command -v apt-get >/dev/null; then \
	    echo "==> installing Debian's graphviz (the dot program)"; \
	    apt-get update -qq && DEBIAN_FRONTEND=noninteractive \
	      apt-get install -y -qq --no-install-recommends graphviz >/dev/null; \
	  else \
	    echo "warning: the Graphviz 'dot' program is missing; loop-nest and graph drawings" >&2; \
	    echo "will fail. Install it with:" >&2; \
	    echo "    sudo apt-get install --no-install-recommends graphviz   # Debian/Ubuntu" >&2; \
	    echo "    brew install graphviz                                   # macOS" >&2; \
	  fi; \
	fi

# Chromium for tests/browser: Debian's package, driven by Playwright through executable_path.
browser:
	@if ! command -v chromium >/dev/null 2>&1 || ! fc-list 2>/dev/null | grep -qi liberation; then \
	  if [ -n "$(IS_ROOT)" ] && command -v apt-get >/dev/null; then \
	    echo "==> installing Debian's chromium and fonts-liberation (for the browser test)"; \
	    apt-get update -qq && DEBIAN_FRONTEND=noninteractive \
	      apt-get install -y -qq --no-install-recommends chromium fonts-liberation >/dev/null; \
	  else \
	    echo "warning: chromium is missing; tests/browser will be skipped. Install it with:" >&2; \
	    echo "    sudo apt-get install --no-install-recommends chromium fonts-liberation" >&2; \
	  fi; \
	fi

lab: setup
	$(VENV)/bin/jupyter lab --ServerApp.root_dir=notebooks --ip=127.0.0.1 \
	  --port=$(JUPYTER_PORT) --no-browser $(ALLOW_ROOT)

# pytest exits 5 when it collected no test: that is a broken suite, never a pass.
test: setup
	@rc=0; $(PY) -m pytest -q -n 2 $(PYTEST_ARGS) || rc=$$?; \
	if [ $$rc -eq 5 ]; then echo "error: pytest collected no tests" >&2; exit 1; fi; \
	exit $$rc

notebooks: setup
	@shopt -s nullglob; books=(notebooks/*.ipynb); \
	if [ $${#books[@]} -eq 0 ]; then echo "no notebooks in notebooks/"; exit 0; fi; \
	$(VENV)/bin/jupyter nbconvert --to notebook --execute --inplace \
	  --ExecutePreprocessor.timeout=600 --ExecutePreprocessor.kernel_name=python3 \
	  "$${books[@]}"

bench: setup
	@shopt -s nullglob; scripts=(bench/*.py); \
	if [ $${#scripts[@]} -eq 0 ]; then echo "no benchmark scripts in bench/"; exit 0; fi; \
	for script in "$${scripts[@]}"; do \
	  echo "==> $$script"; $(PY) "$$script" || exit $$?; \
	done

# The tutorial site: one page per committed notebook, widget state embedded, renderers
# vendored from npm (fetched once into build/vendor).
docs: setup
	$(PY) docs/build_site.py --out build/site

lint: setup
	$(VENV)/bin/ruff check workbench tests
