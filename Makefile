# Set-up and entry points.  Every target installs what it needs first, so each one works on a
# fresh machine (Python ≥ 3.10 with pip; root or sudo for the browser test's Chromium).
PY ?= python3
PIP = $(PY) -m pip install -q --disable-pip-version-check
# torch for a machine that has none; a torch already installed (a CUDA build) is kept.  For
# PyTorch's CPU-only wheels elsewhere: make TORCH_INDEX=https://download.pytorch.org/whl/cpu
TORCH ?= torch==2.13.0
TORCH_INDEX ?=

.PHONY: run test install install-test torch

run: install                 ## the main job: configs/default.yaml on a GPU, configs/cpu.yaml without
	$(PY) run_bench.py

test: install-test           ## the test suite (CPU; GPU tests are skipped without a GPU), a worker a core
	$(PY) -m pytest -n auto --dist worksteal

torch:
	@if $(PY) -c 'import torch' 2>/dev/null; then \
	  echo "keeping the installed torch $$($(PY) -c 'import torch; print(torch.__version__)')"; \
	else \
	  echo "no torch here: installing $(TORCH)"; \
	  $(PIP) '$(TORCH)' $(if $(TORCH_INDEX),--index-url $(TORCH_INDEX)); \
	fi

install: torch
	$(PIP) -r requirements.txt

install-test: torch
	$(PIP) -r requirements.txt -e '.[test,cluster]'
	@if [ ! -x /usr/bin/chromium ] || [ ! -x /usr/bin/chromedriver ]; then \
	  echo "installing Debian's chromium and chromium-driver for the report's browser test"; \
	  SUDO=$$( [ "$$(id -u)" = 0 ] || echo sudo ); \
	  $$SUDO apt-get update -qq && DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -qq chromium chromium-driver >/dev/null; \
	fi
