# Two commands from a fresh clone: `make demo` (the main job on the bundled example) and
# `make test` (the whole suite). Both install what they need first: the demo only the Python
# venv (its calc server is plain Python), the tests also the npm reference servers (Node + npm).
PYTHON ?= python3
VENV   ?= .venv
BIN    := $(VENV)/bin
NODE_DIR := fixtures/node
# The official MCP conformance suite, the SDK of its target server and Node 22 (the suite needs it).
CONFORMANCE_DIR := fixtures/conformance

.PHONY: install install-python install-node install-conformance install-browser demo test lint bench fuzz clean

install: install-python install-node install-conformance
install-python: $(VENV)/.installed
install-node: $(NODE_DIR)/node_modules/.installed
install-conformance: $(CONFORMANCE_DIR)/node_modules/.installed

$(VENV)/.installed: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip
	$(BIN)/python -m pip install -q -e '.[dev]'
	touch $@

$(NODE_DIR)/node_modules/.installed: $(NODE_DIR)/package.json $(NODE_DIR)/package-lock.json
	cd $(NODE_DIR) && npm ci --silent --no-audit --no-fund
	touch $@

$(CONFORMANCE_DIR)/node_modules/.installed: $(CONFORMANCE_DIR)/package.json $(CONFORMANCE_DIR)/package-lock.json
	cd $(CONFORMANCE_DIR) && npm ci --silent --no-audit --no-fund
	touch $@

# The browser tests (tests/integration/test_html_browser.py) open the HTML report in Debian's
# chromium, driven by Playwright (a dev dependency) at /usr/bin/chromium: no browser download.
# Needs root (apt-get); .ci/run runs it. Without chromium those tests skip, and fail under CI=true.
install-browser:
	@command -v chromium >/dev/null 2>&1 || { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium; }

demo: install-python
	$(BIN)/python fixtures/example/demo.py

# The suite in parallel, a module per unit of work (tests/conftest.py); TEST_WORKERS=1 runs it in one process.
# The suite starts thousands of `python -m mcptape` processes: compiled once here, as pip compiles an
# installed package, none of them compiles the package again (where PYTHONDONTWRITEBYTECODE is set,
# each would: a fifth of a `ci` run's CPU). compileall rewrites only what changed since.
# One worker more than there are cores: a sixth of the suite's time is spent waiting on purpose
# (server-everything's task polls, a slow-to-start server's timeout, the fuzz campaign's hung
# servers), and a waiting worker leaves its core to the others. On the 2-core machine: 2 workers
# 537-557 s, 3 workers 487-499 s.
TEST_WORKERS ?= $(shell $(PYTHON) -c 'import os; print(len(os.sched_getaffinity(0)) + 1)' 2>/dev/null || echo auto)
test: install
	$(BIN)/python -m compileall -q mcptape tests fixtures/servers fixtures/example >/dev/null
	$(BIN)/python -m pytest -q -n $(TEST_WORKERS) --dist loadscope

lint: install-python
	$(BIN)/ruff check mcptape tests bench
	$(BIN)/mypy
	# the tests as one package, not strict: the settings of pyproject.toml are for mcptape/
	$(BIN)/mypy --config-file '' --python-version 3.11 --ignore-missing-imports tests

# bench_http.py measures rec --listen against the npm server-everything (the README figure).
bench: install
	$(BIN)/python -m bench

# A longer fuzz campaign than `make test` runs (tests/fuzz/): FUZZ_BUDGET seconds from FUZZ_SEED.
FUZZ_BUDGET ?= 600
FUZZ_SEED ?= 1
fuzz: install-python
	$(BIN)/python -m tests.fuzz --budget $(FUZZ_BUDGET) --seed $(FUZZ_SEED)

clean:
	rm -rf $(VENV) $(NODE_DIR)/node_modules $(CONFORMANCE_DIR)/node_modules .pytest_cache .mypy_cache .ruff_cache
