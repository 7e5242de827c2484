# Two commands are the whole setup on a fresh clone: `make up` and `make test`.
# Each creates .venv when missing and installs the project (with its test extra) into it.
PYTHON ?= python3
VENV   ?= .venv
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.installed-stamp
ARGS   ?=

.PHONY: up test test-fast lint bench venv clean

venv: $(STAMP)

$(STAMP): pyproject.toml
	@test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e '.[test]'
	@touch $(STAMP)

up: $(STAMP)
	$(VENV)/bin/kubesim up $(ARGS)

test: $(STAMP)
	$(PY) -m pytest $(ARGS)

# The fast loop: pure logic only, no etcd or server processes.
test-fast: $(STAMP)
	$(PY) -m pytest -m "not integration and not e2e and not kubectl" $(ARGS)

# Static checks: ruff over the tree, mypy over the code (not the tests) as pyproject.toml configures it.
lint: $(STAMP)
	$(VENV)/bin/ruff check .
	$(VENV)/bin/mypy apiserver machinery controller_manager scheduler kubelet_sim kubesim

bench: $(STAMP)
	$(VENV)/bin/kubesim bench $(ARGS)

clean:
	rm -rf $(VENV) .kubesim .pytest_cache
