# `make run` and `make test` work on a fresh machine: the environment is created when missing.
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed
TEST_STAMP := $(VENV)/.installed-test

.PHONY: run run-channel test test-gpu clean

$(STAMP): requirements.txt
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -r requirements.txt
	touch $(STAMP)

run: $(STAMP)
	$(PY) -m harness run problems/scalar_gated_delta.yaml

run-channel: $(STAMP)
	$(PY) -m harness run problems/channel_gated_delta.yaml

# the tests also exercise the optional Ray backend: `make test` adds it, `make run` stays light
$(TEST_STAMP): $(STAMP) requirements-test.txt
	$(PY) -m pip install --quiet -r requirements-test.txt
	touch $(TEST_STAMP)

# Test files run whole on TEST_WORKERS processes (pytest-xdist), heaviest first (tests/conftest.py): most of a
# file's time is one harness run in its module fixture, which leaves a core idle while it evaluates.
TEST_WORKERS ?= 2
test: $(TEST_STAMP)
	$(PY) -m pytest -q -n $(TEST_WORKERS) --dist loadfile --no-loadscope-reorder

test-gpu: $(STAMP)
	$(PY) -m pytest -m gpu -v -rA

clean:
	rm -rf .cache
