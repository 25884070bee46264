# Two commands set everything up on a fresh machine and run: `make demo` and `make test`.
# Each step is idempotent, so a second run only rebuilds what changed.

PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
PIP := $(PY) -m pip
APT_PACKAGES := cmake g++ make python3-venv libopenblas-dev liblapacke-dev \
                libgtest-dev libgmock-dev libbenchmark-dev nlohmann-json3-dev tmux \
                clang libclang-rt-dev

OUT ?= out/gpu-check
.PHONY: demo test setup system-packages venv native native-cuda test-cpp test-python lint \
        test-extras test-bricks golden bench gpu-check gpu-bundle gpu-rehearsal dist test-dist \
        fuzz test-fuzz seed-venv test-seed

demo: setup
	$(VENV)/bin/rhuber demo

test: setup seed-venv lint test-cpp test-python test-fuzz test-dist

setup: system-packages venv native native-cuda

system-packages:
	@missing=$$(for p in $(APT_PACKAGES); do dpkg -s $$p >/dev/null 2>&1 || echo $$p; done); \
	if [ -n "$$missing" ]; then \
	  echo "installing Debian packages:" $$missing; \
	  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $$missing; \
	fi

venv: system-packages
	@test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PIP) install -q --upgrade pip
	$(PIP) install -q -e ".[test,build,bench]"

native: venv
	bash scripts/build_native_cpu.sh

# The CUDA engine compiles and links wherever the CUDA toolkit is (a GPU is needed only to run it).
native-cuda: venv
	@if command -v nvcc >/dev/null || [ -x /usr/local/cuda/bin/nvcc ]; then \
	  bash scripts/build_native_cuda.sh; \
	else \
	  echo "no CUDA toolkit (nvcc) here: the CUDA engine is not built; its tests will say so"; \
	fi

lint: venv
	$(VENV)/bin/ruff check python tests scripts fuzz
	$(VENV)/bin/lint-imports --config pyproject.toml
	# The pure package runs on every CPython >= 3.10 (requires-python): no newer feature in it.
	$(VENV)/bin/vermin --target=3.10- --no-tips --violations --eval-annotations python/rhuber

# The native tree's CTest suite includes the bricks library's tests (Release -Werror and ASan).
test-cpp: system-packages
	bash scripts/test_native_cpp.sh

# The bricks library on its own: standalone build, its demo's report against the schema, the
# NVTX sink under ASan; `scripts/test_bricks.sh bench` runs its Google Benchmarks.
test-bricks: system-packages
	bash scripts/test_bricks.sh

test-python: native
	$(PY) scripts/generate_native_golden.py --check
	RH_REQUIRE_NATIVE=1 RH_REQUIRE_SEED=$$(test -x $(SEED_VENV)/bin/python && echo 1) \
	  $(PY) -m pytest -n 2 tests

# An sdist and a wheel of each distribution into dist/, the native wheels repaired by auditwheel
# (manylinux; OpenBLAS bundled, CUDA from NVIDIA's PyPI wheels): docs/install.md.
dist: venv
	bash scripts/dist.sh

# Those wheels in a fresh venv with no compiler on PATH, checked from outside the source tree.
test-dist: dist
	bash scripts/test_dist.sh

# The fuzz targets (fuzz/, docs/reliability.md; clang's libFuzzer for the C++ one): each for
# FUZZ_SECONDS, after replaying its seeds and every committed regression input.
FUZZ_SECONDS ?= 60
fuzz: setup
	FUZZ_SECONDS=$(FUZZ_SECONDS) bash scripts/fuzz.sh

# make test fuzzes each target briefly.
test-fuzz: setup
	FUZZ_SECONDS=5 bash scripts/fuzz.sh

# Optional heavy integrations (PyTorch): kept out of `make test` for CI's time budget.
test-extras: setup
	$(PIP) install -q "torch>=2.2"
	$(PY) -m pytest tests -k "torch" -rs

# The benchmark protocol's smoke profile: JSON records and PNG plots in docs/perf/results/, the seed
# system (renewable-huber, from .venv-seed) among the peers.
bench: setup seed-venv
	$(PY) scripts/benchmarks/benchmark_shape_sweep.py --profile smoke --out docs/perf/results/

# On a machine with an NVIDIA GPU: build, GPU tests, benchmark; summary.json/.txt in $(OUT).
# With the .venv of `make setup`, into it; without one (the borrowed GPU machine: no registry),
# --offline: the machine's python3, the bundle of gpu-bundle, a temporary prefix (docs/cuda.md).
gpu-check:
	@if [ -x $(PY) ]; then \
	  $(MAKE) --no-print-directory setup && bash scripts/gpu_check.sh $(OUT); \
	else \
	  bash scripts/gpu_check.sh --offline $(OUT); \
	fi

# What the GPU machine may lack (scripts/gpu_bundle.txt), into .gpu-bundle/ (<= 40 MB).
gpu-bundle:
	bash scripts/gpu_bundle.sh

# gpu-check's build and install steps on a fresh copy of the tree, offline, against the bundle.
gpu-rehearsal: gpu-bundle
	bash scripts/gpu_rehearsal.sh $(if $(filter command line,$(origin OUT)),$(OUT))

# The seed system (renewable-huber on PyPI), the peer of tests/test_seed_differential.py and of
# make bench, in a venv of its own: never in .venv, where renewable_huber must not import.
SEED_VENV := .venv-seed
SEED_VERSION := 0.7.1
seed-venv:
	@test -x $(SEED_VENV)/bin/python || $(PYTHON) -m venv $(SEED_VENV)
	@$(SEED_VENV)/bin/python -c "import importlib.metadata as m, sys; \
	  sys.exit(any(m.version(d) != '$(SEED_VERSION)' for d in \
	  ('renewable-huber', 'renewable-huber-native-cpu')))" 2>/dev/null || \
	  $(SEED_VENV)/bin/python -m pip install -q "renewable-huber==$(SEED_VERSION)" \
	    "renewable-huber-native-cpu==$(SEED_VERSION)"

# The differential test against the seed and its checkpoints (part of test-python too, about
# 5 s): here a missing seed venv is a failure, not a skip.
test-seed: venv seed-venv
	RH_REQUIRE_SEED=1 $(PY) -m pytest -q tests/test_seed_differential.py tests/test_seed_checkpoint.py

golden: venv
	$(PY) scripts/generate_native_golden.py
