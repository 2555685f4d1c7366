"""MetricsLogger: metrics.jsonl always; Weights & Biases only when installed and asked for."""

from __future__ import annotations

import json
import sys
import types

import pytest

pytest.importorskip("torch")

from ascend_kernel_gym.agents.metrics import MetricsLogger


class FakeRun:
    def __init__(self, **kwargs):
        self.init_kwargs, self.logged, self.finished = kwargs, [], False

    def log(self, data, step):
        self.logged.append((step, data))

    def finish(self):
        self.finished = True


def test_wandb_gets_the_scalars_when_installed(tmp_path, monkeypatch):
    runs = []
    fake = types.ModuleType("wandb")
    fake.init = lambda **kw: runs.append(FakeRun(**kw)) or runs[-1]
    monkeypatch.setitem(sys.modules, "wandb", fake)
    logger = MetricsLogger(tmp_path, tensorboard=False, wandb_project="akg", run_config={"lr": 1e-6})
    logger.log({"iteration": 3, "loss": 0.5, "kl": None, "flag": True, "tasks": ["a"]})
    logger.close()
    assert runs[0].init_kwargs["project"] == "akg" and runs[0].init_kwargs["config"] == {"lr": 1e-6}
    assert runs[0].logged == [(3, {"iteration": 3, "loss": 0.5})] and runs[0].finished
    assert json.loads((tmp_path / "metrics.jsonl").read_text())["loss"] == 0.5


def test_no_wandb_installed_is_not_an_error(tmp_path, monkeypatch):
    monkeypatch.setitem(sys.modules, "wandb", None)  # import wandb raises ImportError
    logger = MetricsLogger(tmp_path, tensorboard=False, wandb_project="akg")
    logger.log({"iteration": 1, "loss": 0.1})
    logger.close()
    assert logger.wandb_run is None and (tmp_path / "metrics.jsonl").is_file()
