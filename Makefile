# The two commands that matter: `make run` and `make test`. Both start from nothing.
PYTHON ?= python3
VENV   := .venv
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.installed-$(shell cksum pyproject.toml | cut -d' ' -f1)

.PHONY: run test unit e2e cluster cluster-down bench bench-cache bench-burst bench-e2e clean

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

## End-to-end tests against a real kube-apiserver and kube-scheduler built from upstream.
e2e: $(STAMP)
	$(PY) -m pytest -q tests/e2e

## A local control plane with reprieve in the scheduler's path (see README); cluster-down stops it.
cluster: $(STAMP)
	$(PY) -m tests.e2e.controlplane up

cluster-down: $(STAMP)
	$(PY) -m tests.e2e.controlplane down

## Latency of each verb on a 500-node, 10,000-pod cluster (see docs/benchmarks.md).
bench: $(STAMP)
	$(PY) bench/verbs.py 2>/dev/null

## The live cache at 150,000 pods, against the previous commit (~10 min; docs/benchmarks-cache.md).
bench-cache: $(STAMP)
	$(PY) bench/cache.py --baseline HEAD~1

## Bursts of preemptions through real kube-schedulers, stock and reprieve interleaved (~2 min; needs port 8888).
bench-burst: $(STAMP)
	$(PY) bench/burst.py

## The real kube-scheduler side by side: stock, a do-nothing extender, reprieve per stanza (500 hollow nodes, ~15 min; needs port 8888; docs/benchmarks-e2e.md).
bench-e2e: $(STAMP)
	$(PY) bench/e2e.py

clean:
	rm -rf $(VENV) .pytest_cache .hypothesis
