"""The calling process's side of the warm pool (evaluation/pool.py): the zygote's scrubbed environment,
and a worker that dies is started again on the next job."""

from __future__ import annotations

import warnings

import pytest

from ascend_kernel_gym.evaluation import EvalRequest
from ascend_kernel_gym.evaluation.pool import missing_sandbox_layers, report_missing_layers, zygote_env
from ascend_kernel_gym.evaluation.process import ENV_KEEP


@pytest.fixture
def parent_env(monkeypatch: pytest.MonkeyPatch) -> pytest.MonkeyPatch:
    """A calling process with secrets, settings of its own and the device variables a zygote needs."""
    for key in ("CUDA_VISIBLE_DEVICES", "ASCEND_RT_VISIBLE_DEVICES", "AKG_EVAL_DEBUG", "TRITON_INTERPRET"):
        monkeypatch.delenv(key, raising=False)
    monkeypatch.setenv("PATH", "/usr/bin")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "secret")
    monkeypatch.setenv("HF_TOKEN", "secret")
    monkeypatch.setenv("PYTHONPATH", "/somewhere/else")
    monkeypatch.setenv("OMP_NUM_THREADS", "64")
    monkeypatch.setenv("CUDA_HOME", "/usr/local/cuda")
    monkeypatch.setenv("TRITON_PTXAS_PATH", "/opt/ptxas")
    monkeypatch.setenv("TRITON_CACHE_DIR", "/home/me/.triton")
    return monkeypatch


def test_the_zygote_gets_only_the_variables_it_needs(parent_env) -> None:
    env = zygote_env("interpreter", None, threads=2)
    assert env["PATH"] == "/usr/bin" and env["CUDA_HOME"] == "/usr/local/cuda"
    assert env["TRITON_PTXAS_PATH"] == "/opt/ptxas"
    for dropped in ("AWS_SECRET_ACCESS_KEY", "HF_TOKEN", "PYTHONPATH", "TRITON_CACHE_DIR", "AKG_CACHE_DIR"):
        assert dropped not in env, dropped
    assert env["OMP_NUM_THREADS"] == env["MKL_NUM_THREADS"] == env["OPENBLAS_NUM_THREADS"] == "2"
    assert env["PYTHONNOUSERSITE"] == "1" and env["PYTHONDONTWRITEBYTECODE"] == "1"
    assert env["TRITON_INTERPRET"] == "1" and env["CUDA_VISIBLE_DEVICES"] == ""  # no device on the interpreter
    assert "PYTORCH_NVML_BASED_CUDA_CHECK" not in env and "AKG_EVAL_DEBUG" not in env
    assert zygote_env("interpreter", None, threads=0)["OMP_NUM_THREADS"] == "1"
    parent_env.setenv("AKG_EVAL_DEBUG", "yes")
    assert zygote_env("interpreter", None, threads=1)["AKG_EVAL_DEBUG"] == "1"


def test_each_device_worker_sees_its_own_device(parent_env) -> None:
    assert zygote_env("cuda", 1, threads=1)["CUDA_VISIBLE_DEVICES"] == "1"
    parent_env.setenv("CUDA_VISIBLE_DEVICES", "3,5")
    assert [zygote_env("cuda", i, threads=1)["CUDA_VISIBLE_DEVICES"] for i in range(3)] == ["3", "5", "3"]
    cuda = zygote_env("cuda", None, threads=1)
    assert cuda["CUDA_VISIBLE_DEVICES"] == "3,5" and cuda["PYTORCH_NVML_BASED_CUDA_CHECK"] == "1"
    assert "TRITON_INTERPRET" not in cuda
    parent_env.setenv("ASCEND_RT_VISIBLE_DEVICES", "0,2,4,6")
    npu = zygote_env("npu", 2, threads=1)
    assert npu["ASCEND_RT_VISIBLE_DEVICES"] == "4" and npu["CUDA_VISIBLE_DEVICES"] == "3,5"


def test_cuda_children_get_one_hardware_queue_unless_the_caller_chose(parent_env) -> None:
    parent_env.delenv("CUDA_DEVICE_MAX_CONNECTIONS", raising=False)
    assert zygote_env("cuda", 0, threads=1)["CUDA_DEVICE_MAX_CONNECTIONS"] == "1"
    assert "CUDA_DEVICE_MAX_CONNECTIONS" not in zygote_env("npu", 0, threads=1)
    assert "CUDA_DEVICE_MAX_CONNECTIONS" not in zygote_env("interpreter", None, threads=1)
    parent_env.setenv("CUDA_DEVICE_MAX_CONNECTIONS", "8")
    assert zygote_env("cuda", 0, threads=1)["CUDA_DEVICE_MAX_CONNECTIONS"] == "8"
    # the child keeps it through its own environment clean-up (CUDA reads it when the context starts)
    assert "CUDA_DEVICE_MAX_CONNECTIONS" in ENV_KEEP


def test_missing_sandbox_layers_are_reported_once_per_backend() -> None:
    assert missing_sandbox_layers({}) == {} and missing_sandbox_layers({"os_sandbox": None}) == {}
    layers = {"pid_namespace": "off: test-only reason 7f3a"}
    with pytest.warns(RuntimeWarning, match=r"without these layers on this machine: pid_namespace \(test-only"):
        report_missing_layers("test-backend", layers)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        report_missing_layers("test-backend", layers)  # said once already
        report_missing_layers("test-backend", {})
    with pytest.warns(RuntimeWarning, match="other-backend"):
        report_missing_layers("other-backend", layers)


def test_pool_replaces_a_dead_worker(evaluator, relu_task, relu_solution) -> None:
    evaluator.warm_up()
    handles = evaluator._handles
    starts = [h.starts for h in handles]
    for handle in handles:
        handle.proc.kill()  # the zygote itself dies (not just a child)
        handle.proc.wait()
    results = evaluator.evaluate_many(
        [EvalRequest(task=relu_task, code=relu_solution + f"\n# after kill {i}\n") for i in range(2)]
    )
    assert all(r.ok for r in results), [r.error_message for r in results]
    assert sum(h.starts for h in handles) > sum(starts)
    assert all(h.alive() for h in handles if h.starts > 0)


def test_an_unknown_judge_mode_is_refused_before_a_worker_starts(monkeypatch) -> None:
    from ascend_kernel_gym.evaluation.pool import judge_mode_from_env

    monkeypatch.setenv("AKG_JUDGE", "bogus")
    with pytest.raises(ValueError, match="AKG_JUDGE must be one of zygote, reference, child"):
        judge_mode_from_env()
    monkeypatch.setenv("AKG_JUDGE", "reference")
    assert judge_mode_from_env() == "reference"
    monkeypatch.delenv("AKG_JUDGE")
    assert judge_mode_from_env() == ""
