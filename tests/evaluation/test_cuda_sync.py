"""How a CUDA child waits for the device (evaluation/cuda_sync.py), against a fake driver library."""

from __future__ import annotations

import ctypes

import pytest

from ascend_kernel_gym.evaluation import cuda_sync

BLOCKING, SPIN = cuda_sync.CU_CTX_SCHED_BLOCKING_SYNC, cuda_sync.CU_CTX_SCHED_SPIN


class FakeDriver:
    """The four driver calls the module makes, recorded; ``fail`` makes one return an error."""

    def __init__(self, fail: str = "", set_flags: bool = True) -> None:
        self.calls: list[tuple[str, int]] = []
        self.fail = fail
        if set_flags:
            self.cuCtxSetFlags = lambda flags: self._call("cuCtxSetFlags", flags)

    def _call(self, name: str, value: int = 0) -> int:
        self.calls.append((name, value))
        return 999 if name == self.fail else 0

    def cuInit(self, flags: int) -> int:  # the driver's names
        return self._call("cuInit", flags)

    def cuDeviceGet(self, device, ordinal: int) -> int:
        return self._call("cuDeviceGet", ordinal)

    def cuDevicePrimaryCtxSetFlags_v2(self, device, flags: int) -> int:
        return self._call("cuDevicePrimaryCtxSetFlags_v2", flags)


@pytest.fixture
def driver(monkeypatch):
    def install(fake: FakeDriver | None) -> FakeDriver | None:
        def load(name: str) -> FakeDriver:
            assert name == "libcuda.so.1"
            if fake is None:
                raise OSError("libcuda.so.1: cannot open shared object file")
            return fake

        monkeypatch.setattr(ctypes, "CDLL", load)
        return fake

    monkeypatch.delenv(cuda_sync.ENV, raising=False)
    monkeypatch.setattr(cuda_sync, "_configured", None)
    return install


def test_the_context_blocks_and_spins_only_around_the_timed_rounds(driver) -> None:
    fake = driver(FakeDriver())
    cuda_sync.before_context()
    assert cuda_sync.state() == "blocking"
    assert fake.calls == [("cuInit", 0), ("cuDeviceGet", 0), ("cuDevicePrimaryCtxSetFlags_v2", BLOCKING)]
    fake.calls.clear()
    with pytest.raises(RuntimeError), cuda_sync.spinning():
        assert fake.calls == [("cuCtxSetFlags", SPIN)]
        raise RuntimeError("a failing timed call")
    assert fake.calls == [("cuCtxSetFlags", SPIN), ("cuCtxSetFlags", BLOCKING)]  # blocking again after a failure


@pytest.mark.parametrize(
    ("fake", "why"),
    [
        (FakeDriver(set_flags=False), "no cuCtxSetFlags"),
        (FakeDriver(fail="cuDevicePrimaryCtxSetFlags_v2"), "CUDA driver error 999"),
        (FakeDriver(fail="cuInit"), "CUDA driver error 999"),
        (None, "no CUDA driver"),
    ],
)
def test_where_the_context_cannot_switch_back_it_spins_throughout(driver, fake, why) -> None:
    installed = driver(fake)
    cuda_sync.before_context()
    assert cuda_sync.state().startswith("spin") and why in cuda_sync.state()
    if installed is not None:
        if installed.fail == "cuInit":
            assert installed.calls == [("cuInit", 0)]  # nothing after the failed cuInit
        installed.calls.clear()
        with cuda_sync.spinning():
            pass
        assert installed.calls == []  # nothing to switch


def test_the_setting_turns_it_off_and_a_misspelt_one_fails_loudly(driver, monkeypatch) -> None:
    fake = driver(FakeDriver())
    monkeypatch.setenv(cuda_sync.ENV, "spin")
    assert cuda_sync.setting_from_env() == "spin" and cuda_sync.wanted() == "spin"
    cuda_sync.before_context()
    assert cuda_sync.state() == "spin (AKG_CUDA_SYNC=spin)" and fake.calls == []
    cuda_sync.configure("blocking")  # the zygote's setting wins over its own environment
    assert cuda_sync.wanted() == "blocking"
    monkeypatch.setenv(cuda_sync.ENV, "yield")
    with pytest.raises(ValueError, match="AKG_CUDA_SYNC must be one of blocking, spin"):
        cuda_sync.setting_from_env()
    with pytest.raises(ValueError, match="AKG_CUDA_SYNC"):
        cuda_sync.configure("yield")
