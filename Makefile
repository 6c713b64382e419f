# Set-up and entry points.  Every target installs what it needs first, so each one works on a
# fresh machine (Python ≥ 3.10 with pip; root or sudo for the browser test's Chromium).
PY ?= python3
PIP = $(PY) -m pip install -q --disable-pip-version-check

.PHONY: run test install install-test

run: install                 ## the main job: configs/default.yaml on a GPU, configs/cpu.yaml without
	$(PY) run_bench.py

test: install-test           ## the test suite (CPU; GPU tests are skipped without a GPU)
	$(PY) -m pytest

install:
	$(PIP) -r requirements.txt

install-test:
	$(PIP) -r requirements.txt -e '.[test,cluster]'
	@if [ ! -x /usr/bin/chromium ] || [ ! -x /usr/bin/chromedriver ]; then \
	  echo "installing Debian's chromium and chromium-driver for the report's browser test"; \
	  SUDO=$$( [ "$$(id -u)" = 0 ] || echo sudo ); \
	  $$SUDO apt-get update -qq && DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -qq chromium chromium-driver >/dev/null; \
	fi
