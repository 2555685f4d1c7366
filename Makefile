# ascend-kernel-gym: the two commands of the README are `make demo` and `make test`.
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
PIP := $(PY) -m pip
# The CPU build of torch that this project pins for CPU-only machines (an unpinned torch pulls a CUDA build).
TORCH_CPU ?= torch==2.13.0
EXTRAS ?= dev,sb3,train,trl
STAMP := $(VENV)/.akg-installed

.PHONY: venv demo test lint browser clean

venv: $(STAMP)

$(STAMP): pyproject.toml
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PIP) install -q --upgrade pip
	$(PIP) install -q "$(TORCH_CPU)"
	$(PIP) install -q -e ".[$(EXTRAS)]"
	touch $(STAMP)

## The main job: evaluate the reference agent on the core test split on the CPU interpreter, then report.
demo: venv
	$(VENV)/bin/akg eval --agent reference --suite core --split test --backend interpreter --turns 1 --samples 1 --out runs/demo
	$(VENV)/bin/akg report runs/demo

## Headless Chromium for the leaderboard's browser test (Debian packages; needs root, skipped otherwise).
browser:
	@if command -v chromium >/dev/null 2>&1 && command -v chromedriver >/dev/null 2>&1; then :; \
	elif [ "$$(id -u)" = "0" ] && command -v apt-get >/dev/null 2>&1; then \
		apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium chromium-driver >/dev/null; \
	else echo "note: chromium not installed and not root: the browser test will be skipped"; fi

## The whole test suite.
test: venv browser
	$(VENV)/bin/ruff check ascend_kernel_gym tests bench examples
	$(PY) -m pytest -q

lint: venv
	$(VENV)/bin/ruff check ascend_kernel_gym tests bench examples

clean:
	rm -rf $(VENV) runs site .pytest_cache .ruff_cache
