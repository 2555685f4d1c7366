"""Backend detection: auto order, clear errors for unavailable backends, device facts."""

from __future__ import annotations

import pytest

from ascend_kernel_gym.backends import detect
from ascend_kernel_gym.backends.detect import BackendUnavailableError, device_info, resolve_backend


def test_auto_prefers_npu_then_cuda_then_interpreter(monkeypatch):
    present = {"npu": False, "cuda": False, "interpreter": True}
    monkeypatch.setattr(detect, "missing_for", lambda b: [] if present[b] else [f"{b}-thing"])
    assert resolve_backend("auto") == "interpreter"
    present["cuda"] = True
    assert resolve_backend("auto") == "cuda"
    present["npu"] = True
    assert resolve_backend("auto") == "npu"


def test_unavailable_backend_names_what_is_missing_and_how_to_install(monkeypatch):
    monkeypatch.setattr(detect.importlib.util, "find_spec", lambda name: None)
    with pytest.raises(BackendUnavailableError) as excinfo:
        resolve_backend("npu")
    message = str(excinfo.value)
    assert "torch_npu" in message and "triton-ascend" in message


def test_unknown_backend_is_rejected():
    with pytest.raises(ValueError, match="unknown backend 'tpu'"):
        resolve_backend("tpu")


def test_no_silent_fallback_from_cuda_on_this_machine():
    torch = pytest.importorskip("torch")
    if torch.cuda.is_available():
        pytest.skip("a GPU is present")
    with pytest.raises(BackendUnavailableError, match="NVIDIA GPU"):
        resolve_backend("cuda")


def test_interpreter_device_info():
    info = device_info("interpreter")
    assert info.backend == "interpreter" and info.device == "cpu"
    assert info.versions["torch"] and info.versions["triton"]
    assert info.to_dict()["name"].startswith("CPU")
