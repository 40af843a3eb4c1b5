# The two commands that matter: `make run` and `make test`. Both start from nothing.
PYTHON ?= python3
VENV   := .venv
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.installed-$(shell cksum pyproject.toml | cut -d' ' -f1)

.PHONY: run test unit bench clean

$(STAMP): pyproject.toml
	rm -rf $(VENV)
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e '.[test]'
	touch $@

## Serve the bundled example cluster on 127.0.0.1:8888.
run: $(STAMP)
	$(VENV)/bin/reprieve serve --snapshot examples/cluster.yaml --bind 127.0.0.1:8888

## Every test.
test: $(STAMP)
	$(PY) -m pytest -q tests

## Unit and contract tests only (no control plane).
unit: $(STAMP)
	$(PY) -m pytest -q tests/unit tests/contract

## Latency of each verb on a 500-node, 10,000-pod cluster (see docs/benchmarks.md).
bench: $(STAMP)
	$(PY) bench/verbs.py 2>/dev/null

clean:
	rm -rf $(VENV) .pytest_cache .hypothesis
