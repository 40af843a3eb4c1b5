# The two commands that matter: `make run` and `make test`. Both start from nothing.
PYTHON ?= python3
VENV   := .venv
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.installed-$(shell cksum pyproject.toml | cut -d' ' -f1)

# The Kubernetes release the end-to-end tests and `make cluster` build and run (tests/e2e/toolchain/):
# its DEFAULT_VERSION unless set, e.g. `make e2e KUBE_VERSION=v1.36.3` for the previous minor.
export KUBE_VERSION

.PHONY: run test unit e2e cluster cluster-down bench bench-serving bench-scale bench-victims bench-homes bench-cache bench-burst bench-quality bench-slow image fuzz bench-memory manifests bench-e2e bench-faults clean

$(STAMP): pyproject.toml
	rm -rf $(VENV)
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e '.[test]'
	touch $@

## Serve the bundled example cluster on 127.0.0.1:$(PORT) (8888 unless set: make run PORT=9000).
PORT ?= 8888
run: $(STAMP)
	$(VENV)/bin/reprieve serve --snapshot examples/cluster.yaml --bind 127.0.0.1:$(PORT)

## Every test.
test: $(STAMP)
	$(PY) -m pytest -q tests

## Unit and contract tests only (no control plane).
unit: $(STAMP)
	$(PY) -m pytest -q tests/unit tests/contract

## The fuzz test at length: FUZZ_EXAMPLES bodies per verb (default 100,000; ~20 min) from a new seed.
FUZZ_EXAMPLES ?= 100000
fuzz: $(STAMP)
	FUZZ_EXAMPLES=$(FUZZ_EXAMPLES) FUZZ_SEED=$${FUZZ_SEED:-$$(date +%s)} $(PY) -m pytest -q tests/contract/test_fuzz.py

## End-to-end tests against a real kube-apiserver and kube-scheduler built from upstream.
e2e: $(STAMP)
	$(PY) -m pytest -q tests/e2e

## Rewrite manifests/ from the Helm chart charts/reprieve (helm is built like the e2e toolchain).
manifests: $(STAMP)
	$(PY) -m tests.e2e.chart manifests

## A local control plane with reprieve in the scheduler's path (see README); cluster-down stops it.
cluster: $(STAMP)
	$(PY) -m tests.e2e.controlplane up

cluster-down: $(STAMP)
	$(PY) -m tests.e2e.controlplane down

## Latency of each verb on a 500-node, 10,000-pod cluster, beside the JSON floor (see docs/benchmarks.md).
bench: $(STAMP)
	$(PY) bench/verbs.py 2>/dev/null

## CPU per call of the serving stack: the do-nothing extender and reprieve, served (~1 min; BASELINE=rev side by side; docs/serving.md).
bench-serving: $(STAMP)
	$(PY) bench/serving.py $(if $(BASELINE),--baseline $(BASELINE))

## The same at 5,000 nodes / 150,000 pods / 500 preempt candidates (~5 min; BASELINE=rev adds a side-by-side run).
bench-scale: $(STAMP)
	$(PY) bench/verbs.py --nodes 5000 --pods 150000 --candidates 500 --rounds 50 $(if $(BASELINE),--baseline $(BASELINE)) $(if $(CPU),--cpu) 2>/dev/null

## Victim choice: greedy orders alone vs with the exact search (docs/benchmarks.md).
bench-victims: $(STAMP)
	$(PY) bench/victims.py

## Victims with somewhere to go: policy.homes on 5,000 nodes and 150,000 pods (~20 s; docs/benchmarks.md).
bench-homes: $(STAMP)
	$(PY) bench/homes.py

## The live cache at 150,000 pods, against the previous commit (~10 min; docs/benchmarks-cache.md).
bench-cache: $(STAMP)
	$(PY) bench/cache.py --baseline HEAD~1

## Bursts of preemptions through real kube-schedulers, stock and reprieve interleaved (~2 min; needs port 8888).
bench-burst: $(STAMP)
	$(PY) bench/burst.py

## Decision quality against stock: `reprieve simulate` on the shipped and a generated workload (docs/quality.md).
bench-quality: $(STAMP)
	$(PY) bench/quality.py

## Latency of normal requests with 0 and 50 slow connections hanging on a served reprieve (~1 min; docs/serving.md).
bench-slow: $(STAMP)
	$(PY) bench/slow_clients.py

## The container image (Dockerfile) with the first of docker or podman that can run here; IMAGE names it.
IMAGE ?= reprieve:$(shell sed -n 's/^version = "\(.*\)"/\1/p' pyproject.toml)
image:
	@found=; for e in docker podman; do \
	  command -v $$e >/dev/null || continue; found="$$found $$e"; \
	  if $$e info >/dev/null 2>&1; then echo "$$e build -t $(IMAGE) ."; exec $$e build -t $(IMAGE) .; fi; \
	done; \
	if [ -z "$$found" ]; then echo "make image: neither docker nor podman is installed (apt-get install docker.io, or podman)" >&2; \
	else echo "make image:$$found installed but cannot run here ('info' fails: no daemon, or no privileges)" >&2; fi; exit 1

## RSS of a served reprieve after 1,000 vs 100,000 varied requests (~5 min; docs/benchmarks.md).
## BASELINE=REV runs the same against that revision first, side by side.
bench-memory: $(STAMP)
	$(PY) bench/memory.py $(if $(BASELINE),--baseline $(BASELINE))

## The real kube-scheduler side by side: stock, a do-nothing extender, reprieve per stanza (500 hollow nodes, ~15 min; needs port 8888; docs/benchmarks-e2e.md).
bench-e2e: $(STAMP)
	$(PY) bench/e2e.py

## Preemption under churn through real kube-schedulers, stock and reprieve at the same time (~7 min with MINUTES=5; needs port 8888; docs/benchmarks-e2e.md).
bench-churn: $(STAMP)
	$(PY) bench/churn.py $(if $(MINUTES),--minutes $(MINUTES))

## Faults in the middle of a wave through the real kube-scheduler, reprieve beside stock (~10 min; needs port 8888; writes docs/reliability.md's table).
bench-faults: $(STAMP)
	$(PY) bench/faults.py

clean:
	rm -rf $(VENV) .pytest_cache .hypothesis
