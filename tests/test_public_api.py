"""The public API: the flat top-level names, one lazy ``__init__`` style everywhere, no torch on import."""

from __future__ import annotations

import ast
import importlib
import json
import subprocess
import sys
from pathlib import Path

import pytest

import ascend_kernel_gym

PACKAGE_DIR = Path(ascend_kernel_gym.__file__).resolve().parent
SUBPACKAGES = sorted(p.parent.name for p in PACKAGE_DIR.glob("*/__init__.py"))
TOP_LEVEL = ("AscendTritonEnv", "Evaluator", "EvalRequest", "EvalResult", "Task", "get_task", "load_suite")
#: resolved only with its extra installed (``verifiers``): in __all__, not imported by the fresh-import test
OPTIONAL_TOP_LEVEL = ("load_environment",)
#: Names each subpackage exported before the lazy rewrite; they must keep resolving.
KEPT = {
    "evaluation": {
        "Evaluator", "render_feedback", "scrub_text", "EvalRequest", "EvalResult", "ErrorType", "Stage",
        "LaunchRecord", "HACK_ERROR_TYPES", "StaticReport", "check_source", "get_shared_evaluator",
        "close_shared_evaluators", "EvaluatorClient", "EvaluatorServer",
    },
    "tasks": {
        "Task", "TaskLoadError", "UnknownTaskError", "bundled_suites", "get_task", "load_suite", "load_task_file",
        "load_task_source",
    },
    "backends": {
        "BACKENDS", "BackendUnavailableError", "DeviceInfo", "available_backends", "device_info", "resolve_backend",
    },
    "kb_index": {"BUNDLED_ENTRIES_DIR", "KB", "Entry", "EntryError", "Hit", "KnowledgeBase", "load_entries",
                 "parse_entry"},
    "envs": {"AscendTritonEnv", "DEFAULT_MAX_OBS_CHARS", "extract_code", "PRESETS", "REWARD_MODES", "resolve_reward",
             "step_reward", "CHARSET", "sanitize", "load_templates"},
    "wrappers": {"CompactionWrapper", "KBRetrievalWrapper", "KernelChoiceWrapper", "ATRL_DEFAULTS", "make_atrl_env",
                 "build_stack"},
    "integrations": {"KernelChoiceEnv", "AscendTritonToolEnv", "TRLEnvConfig", "build_trl_dataset",
                     "make_environment_factory"},
    "agents": {
        "ESTIMATORS", "ChoicePolicy", "EnvPool", "EpisodeRecord", "Generation", "HFPolicy", "KernelChoiceWrapper",
        "LoraSettings", "OpenAIChatPolicy", "Policy", "PolicyHTTPError", "ReferencePolicy", "RolloutBatch",
        "SamplingParams", "ScriptedPolicy", "SegmentGRPOConfig", "SegmentGRPOTrainer", "SegmentSample",
        "TokenPolicy", "TurnRecord", "assign_advantages", "collect_rollouts", "group_advantages", "make_env",
    },
}  # fmt: skip


def test_every_package_is_covered() -> None:
    expected = {"agents", "ascend", "backends", "envs", "evaluation", "integrations", "kb_index", "leaderboard"}
    assert expected | {"tasks", "wrappers"} <= set(SUBPACKAGES)


@pytest.mark.parametrize("package", ["", *SUBPACKAGES])
def test_init_has_the_one_lazy_style(package: str) -> None:
    """A docstring, an ``_EXPORTS`` table of literals, ``__getattr__`` and ``__dir__``; no eager imports."""
    path = PACKAGE_DIR / package / "__init__.py"
    tree = ast.parse(path.read_text())
    assert ast.get_docstring(tree), f"{path}: no module docstring"
    assigned = {t.id: node.value for node in tree.body if isinstance(node, ast.Assign) for t in node.targets}
    assert isinstance(assigned.get("_EXPORTS"), ast.Dict), f"{path}: no _EXPORTS dict"
    table = ast.literal_eval(assigned["_EXPORTS"])
    assert table and all(isinstance(k, str) and isinstance(v, str) for k, v in table.items())
    assert all(module.startswith("ascend_kernel_gym.") for module in table.values())
    functions = {node.name for node in tree.body if isinstance(node, ast.FunctionDef)}
    assert {"__getattr__", "__dir__"} <= functions, f"{path}: needs __getattr__ and __dir__"
    imported = {
        node.module if isinstance(node, ast.ImportFrom) else alias.name
        for node in tree.body
        if isinstance(node, (ast.Import, ast.ImportFrom))
        for alias in node.names
    }
    allowed = {"__future__", "importlib", "typing"}
    if not package:  # the top level registers the envs on import
        allowed.add("ascend_kernel_gym.envs.registration")
    assert imported <= allowed, f"{path}: eager imports {sorted(imported - allowed)}"


@pytest.mark.parametrize("package", SUBPACKAGES)
def test_every_exported_name_resolves_and_is_cached(package: str) -> None:
    module = importlib.import_module(f"ascend_kernel_gym.{package}")
    assert module.__all__ == sorted(module._EXPORTS)
    assert KEPT.get(package, set()) <= set(module.__all__), "a name exported before is gone"
    assert set(module.__all__) <= set(dir(module))
    for name in module.__all__:
        value = getattr(module, name)
        assert value is getattr(importlib.import_module(module._EXPORTS[name]), name)
        assert module.__dict__[name] is value  # cached: the next access does not go through __getattr__
    with pytest.raises(AttributeError, match="no_such_name"):
        module.no_such_name


def test_top_level_names_resolve_to_the_subpackage_objects() -> None:
    from ascend_kernel_gym import (
        AscendTritonEnv,
        EvalRequest,
        EvalResult,
        Evaluator,
        Task,
        envs,
        evaluation,
        get_task,
        load_suite,
        tasks,
    )

    assert ascend_kernel_gym.__all__ == ["__version__", *sorted(TOP_LEVEL + OPTIONAL_TOP_LEVEL)]
    assert AscendTritonEnv is envs.AscendTritonEnv and Evaluator is evaluation.Evaluator
    assert EvalRequest is evaluation.EvalRequest and EvalResult is evaluation.EvalResult
    assert Task is tasks.Task and get_task is tasks.get_task and load_suite is tasks.load_suite
    assert get_task("core/L1/relu").id == "core/L1/relu"
    assert isinstance(ascend_kernel_gym.__version__, str)


def test_a_fresh_import_registers_the_envs_without_torch_or_triton() -> None:
    names = ", ".join(TOP_LEVEL)
    script = (
        "import json, sys, importlib\n"
        "import gymnasium as gym\n"
        "import ascend_kernel_gym\n"
        f"from ascend_kernel_gym import {names}\n"
        f"for p in {SUBPACKAGES!r}: importlib.import_module('ascend_kernel_gym.' + p)\n"
        "ids = sorted(i for i in gym.registry if 'Ascend' in i)\n"
        "heavy = sorted(m for m in ('torch', 'triton', 'transformers', 'sentence_transformers') if m in sys.modules)\n"
        "print(json.dumps({'ids': ids, 'heavy': heavy}))\n"
    )
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=300, check=True)
    report = json.loads(out.stdout.strip().splitlines()[-1])
    assert report["heavy"] == []
    assert {"AscendTriton-v0", "AscendTriton-ATRL-v0", "AscendKernelChoice-v0"} <= set(report["ids"])
