# ascend-kernel-gym: the two commands of the README are `make demo` and `make test`.
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
PIP := $(PY) -m pip
AKG := $(VENV)/bin/akg
# The CPU build of torch that this project pins for CPU-only machines (an unpinned torch pulls a CUDA build).
TORCH_CPU ?= torch==2.13.0
# What `make test` adds to the package: test tools, the training / RL-library integrations it tests, and Ray
# (the Ray executor's tests start a local Ray instance).
TEST_EXTRAS ?= dev,sb3,train,trl,openenv,verifiers,ray
# Where the demo writes its runs, submissions and leaderboard page.
DEMO_DIR ?= runs/demo
BASE_STAMP := $(VENV)/.akg-base
TEST_STAMP := $(VENV)/.akg-test
# Every sub-command of the demo runs on the CPU interpreter, whatever the machine has.
DEMO_EVAL := --suite core --split test --backend interpreter --turns 1 --samples 1

.PHONY: venv venv-test demo test test-fast lint browser clean

## The package and what it needs to run (no extras): all `make demo` installs.
venv: $(BASE_STAMP)

$(BASE_STAMP): pyproject.toml
	@echo "== setting up $(VENV): the CPU build of torch, then this package without extras =="
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PIP) install --upgrade pip
	$(PIP) install "$(TORCH_CPU)"
	$(PIP) install -e .
	touch $@

## The test tools and the integrations the tests cover (Stable-Baselines3, transformers, TRL).
venv-test: $(TEST_STAMP)

$(TEST_STAMP): $(BASE_STAMP)
	@echo "== adding the test extras [$(TEST_EXTRAS)] to $(VENV) =="
	$(PIP) install -e ".[$(TEST_EXTRAS)]"
	touch $@

## The main job, on the CPU interpreter: one episode turn by turn, two agents evaluated side by side
## (the reference solutions and a cheating / sloppy agent), submissions verified, the leaderboard page.
demo: venv
	@echo; echo "== 1/4: one episode of the environment, turn by turn =="
	$(PY) examples/demo_episode.py
	@echo; echo "== 2/4: two agents on the core test split: the reference solutions and a cheating / sloppy agent =="
	$(AKG) eval --agent reference $(DEMO_EVAL) --out $(DEMO_DIR)/reference
	$(AKG) eval --agent ascend_kernel_gym.agents.sloppy:SloppyPolicy $(DEMO_EVAL) --out $(DEMO_DIR)/sloppy
	$(AKG) report $(DEMO_DIR)/reference $(DEMO_DIR)/sloppy
	@echo; echo "== 3/4: leaderboard submissions, each verified by re-running its kernels =="
	$(AKG) submit $(DEMO_DIR)/reference -o $(DEMO_DIR)/submissions/reference.json
	$(AKG) submit $(DEMO_DIR)/sloppy -o $(DEMO_DIR)/submissions/sloppy.json
	$(AKG) verify $(DEMO_DIR)/submissions/reference.json --backend interpreter
	$(AKG) verify $(DEMO_DIR)/submissions/sloppy.json --backend interpreter
	@echo; echo "== 4/4: the leaderboard page =="
	$(AKG) leaderboard $(DEMO_DIR)/submissions -o $(DEMO_DIR)/site

## Headless Chromium for the leaderboard's browser test (Debian packages; needs root, skipped otherwise).
browser:
	@if command -v chromium >/dev/null 2>&1 && command -v chromedriver >/dev/null 2>&1; then :; \
	elif [ "$$(id -u)" = "0" ] && command -v apt-get >/dev/null 2>&1; then \
		echo "== installing chromium and chromium-driver (apt-get) for the browser test =="; \
		apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium chromium-driver >/dev/null; \
	else echo "note: chromium not installed and not root: the browser test will be skipped"; fi

## The whole test suite. tests/tasks/test_suite_quality.py runs the reference solutions' kernels in the
## test process itself; after some other tests in the same process its @triton.jit helpers are no longer
## interpreted (an open test-isolation bug, not seen in evaluator children), so it gets a process of its own.
SUITE_QUALITY := tests/tasks/test_suite_quality.py
test: venv-test browser
	$(VENV)/bin/ruff check ascend_kernel_gym tests bench examples
	$(PY) -m pytest -q $(SUITE_QUALITY)
	$(PY) -m pytest -q --ignore=$(SUITE_QUALITY)
	$(MAKE) test-verl

## The fast lane: every test not marked slow (the end-to-end kernel corpora, learning runs, README run-through).
test-fast: venv-test
	$(VENV)/bin/ruff check ascend_kernel_gym tests bench examples
	$(PY) -m pytest -q -m "not slow"

## veRL's agent loop driven by veRL on the CPU. veRL 0.9 pins transformers < 5.11 (the trl extra needs >= 5.13),
## so it gets a virtual environment of its own (about 2 minutes and 3.4 GB with the CPU torch wheel).
VERL_VENV ?= .venv-verl
VERL_STAMP := $(VERL_VENV)/.akg-verl
VERL_TESTS := tests/integrations/test_verl.py tests/integrations/test_verl_advantages.py

.PHONY: test-verl
$(VERL_STAMP): pyproject.toml
	@echo "== setting up $(VERL_VENV): the CPU build of torch, then this package with [dev,verl] =="
	test -x $(VERL_VENV)/bin/python || $(PYTHON) -m venv $(VERL_VENV)
	$(VERL_VENV)/bin/python -m pip install --upgrade pip
	$(VERL_VENV)/bin/python -m pip install "$(TORCH_CPU)"
	$(VERL_VENV)/bin/python -m pip install -e ".[dev,verl]"
	touch $@

test-verl: $(VERL_STAMP)
	$(VERL_VENV)/bin/python -m pytest -q $(VERL_TESTS)

lint: venv-test
	$(VENV)/bin/ruff check ascend_kernel_gym tests bench examples

clean:
	rm -rf $(VENV) $(VERL_VENV) runs site .pytest_cache .ruff_cache
