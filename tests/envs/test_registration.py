"""Environment registration (envs/registration.py): the package's ids, their entry points, idempotence."""

from __future__ import annotations

import importlib
import warnings

import gymnasium as gym
import pytest
from env_helpers import RELU
from gymnasium.utils.env_checker import check_env

import ascend_kernel_gym  # noqa: F401 - registers the envs
from ascend_kernel_gym.envs import registration

PACKAGE_IDS = sorted(
    env_id
    for env_id, spec in gym.registry.items()
    if isinstance(spec.entry_point, str) and spec.entry_point.startswith("ascend_kernel_gym")
)
EXPECTED = {
    "AscendTriton-v0": registration.ENTRY_POINT,
    "AscendTriton-ATRL-v0": registration.ATRL_ENTRY_POINT,
    "AscendKernelChoice-v0": registration.KERNEL_CHOICE_ENTRY_POINT,
}


def test_package_registers_its_ids() -> None:
    assert "AscendTriton-v0" in PACKAGE_IDS
    assert gym.spec("AscendTriton-v0").nondeterministic is True


def test_every_id_points_at_an_importable_callable_and_is_marked_nondeterministic() -> None:
    assert set(PACKAGE_IDS) == set(EXPECTED)
    for env_id, entry_point in EXPECTED.items():
        spec = gym.spec(env_id)
        assert spec.entry_point == entry_point and spec.nondeterministic is True
        module, _, name = entry_point.partition(":")
        assert callable(getattr(importlib.import_module(module), name))


def test_registering_again_changes_nothing() -> None:
    before = {env_id: gym.spec(env_id) for env_id in EXPECTED}
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # gymnasium warns when an id is overridden
        registration.register_envs()
        registration.register_envs()
    assert {env_id: gym.spec(env_id) for env_id in EXPECTED} == before
    assert all(gym.spec(env_id) is before[env_id] for env_id in EXPECTED)


def test_a_removed_id_is_registered_again() -> None:
    spec = gym.registry.pop("AscendKernelChoice-v0")
    try:
        registration.register_envs()
        assert gym.spec("AscendKernelChoice-v0").entry_point == spec.entry_point
    finally:
        gym.registry["AscendKernelChoice-v0"] = spec


# Preset ids may build heavier stacks (e.g. dense KB retrieval loads a sentence-transformers model).
ID_PARAMS = [pytest.param(i, marks=() if i == "AscendTriton-v0" else pytest.mark.slow) for i in PACKAGE_IDS]


@pytest.mark.parametrize("env_id", ID_PARAMS)
def test_gymnasium_check_env_passes_for_every_registered_id(env_id: str) -> None:
    env = gym.make(env_id)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        check_env(env.unwrapped)
    gym_warnings = [str(w.message) for w in caught if issubclass(w.category, UserWarning)]
    assert gym_warnings == []
    env.close()


def test_gymnasium_make_with_module_prefix() -> None:
    env = gym.make("ascend_kernel_gym:AscendTriton-v0", task_ids=[RELU], backend="interpreter")
    obs, _ = env.reset(seed=0)
    assert obs in env.observation_space and "core/L1/relu" in obs
    env.close()
