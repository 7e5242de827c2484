# Two commands are the whole setup on a fresh clone: `make up` and `make test`.
# Each creates .venv when missing and installs the project (with its test extra) into it.
PYTHON ?= python3
VENV   ?= .venv
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.installed-stamp
ARGS   ?=

.PHONY: up test test-fast lint bench chaos screenshots venv clean

venv: $(STAMP)

$(STAMP): pyproject.toml
	@test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e '.[test]'
	@touch $(STAMP)

up: $(STAMP)
	$(VENV)/bin/kubesim up $(ARGS)

# The whole suite, slow tests included, on TEST_WORKERS pytest-xdist workers; a file's tests stay on one
# worker (they share its fixtures' processes), and files start in the order tests/conftest.py gives them
# (the longest first). Four workers keep 2 cores busy (the processes the tests start take most of the CPU;
# more workers only queue). The 25 slowest tests are listed at the end, to see where the 15 minutes go.
TEST_WORKERS ?= 4
test: $(STAMP)
	$(PY) -m pytest -n $(TEST_WORKERS) --dist loadfile --no-loadscope-reorder --slow --durations=25 $(ARGS)

# The fast loop: pure logic only, no etcd or server processes.
test-fast: $(STAMP)
	$(PY) -m pytest -m "not integration and not e2e and not kubectl" $(ARGS)

# The long hostile campaign (issue 16): faults under load in rounds, and the OpenAPI fuzzer with 200
# examples per operation; each prints its report. About 15 minutes on 2 cores.
chaos: $(STAMP)
	KUBESIM_FUZZ_EXAMPLES=200 $(PY) -m pytest --chaos -s tests/e2e/test_chaos.py tests/e2e/test_fuzz_openapi.py $(ARGS)

# Static checks: ruff over the tree, mypy over the code (not the tests) as pyproject.toml configures it.
lint: $(STAMP)
	$(VENV)/bin/ruff check .
	$(VENV)/bin/mypy apiserver machinery controller_manager scheduler scheduler_plugins kubelet_sim kubesim metrics_server

bench: $(STAMP)
	$(VENV)/bin/kubesim bench $(ARGS)

# The README's pictures of the web page (needs Debian's chromium; a test checks they are of this page).
screenshots: $(STAMP)
	$(PY) hack/ui_screenshots.py

clean:
	rm -rf $(VENV) .kubesim .pytest_cache
