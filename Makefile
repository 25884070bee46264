# Two commands set everything up on a fresh machine and run: `make demo` and `make test`.
# Each step is idempotent, so a second run only rebuilds what changed.

PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
PIP := $(PY) -m pip
APT_PACKAGES := cmake g++ make python3-venv libopenblas-dev liblapacke-dev \
                libgtest-dev libgmock-dev libbenchmark-dev tmux

.PHONY: demo test setup system-packages venv native test-cpp test-python lint test-extras golden

demo: setup
	$(VENV)/bin/rhuber demo

test: setup lint test-cpp test-python

setup: system-packages venv native

system-packages:
	@missing=$$(for p in $(APT_PACKAGES); do dpkg -s $$p >/dev/null 2>&1 || echo $$p; done); \
	if [ -n "$$missing" ]; then \
	  echo "installing Debian packages:" $$missing; \
	  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $$missing; \
	fi

venv: system-packages
	@test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PIP) install -q --upgrade pip
	$(PIP) install -q -e ".[test,build]"

native: venv
	bash scripts/build_native_cpu.sh

lint: venv
	$(VENV)/bin/ruff check python tests scripts

test-cpp: system-packages
	bash scripts/test_native_cpp.sh
	bash scripts/test_bricks.sh

test-python: native
	$(PY) scripts/generate_native_golden.py --check
	RH_REQUIRE_NATIVE=1 $(PY) -m pytest -n 2 tests

# Optional heavy integrations (PyTorch): kept out of `make test` for CI's time budget.
test-extras: setup
	$(PIP) install -q "torch>=2.2"
	$(PY) -m pytest tests -k "torch" -rs

golden: venv
	$(PY) scripts/generate_native_golden.py
