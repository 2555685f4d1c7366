"""The Stable-Baselines3 adapter: the choice env over kernel variants, check_env and a PPO run.

Unit tests use a stub evaluator (they test this module's bookkeeping); the integration tests use
the real evaluator on the interpreter and SB3 itself.
"""

from __future__ import annotations

import re
import warnings
from pathlib import Path

import numpy as np
import pytest
from example_scripts import load_example

from ascend_kernel_gym.evaluation.result import ErrorType, EvalResult, Stage
from ascend_kernel_gym.integrations.sb3 import DEFAULT_MENU, OUTCOMES, KernelChoiceEnv, outcome_of, task_features
from ascend_kernel_gym.tasks import get_task
from ascend_kernel_gym.tasks.variants import kernel_variants

ROOT = Path(__file__).resolve().parents[2]
DOCS = ROOT / "docs" / "integrations.md"
RELU = "core/L1/relu"
SUM = "core/L1/sum_dim"


def docs_blocks(marker: str) -> dict[str, str]:
    """Python blocks of docs/integrations.md preceded by ``<!-- {marker}: NAME -->``, by NAME."""
    pattern = re.compile(rf"<!-- {marker}: (\S+) -->\n```python\n(.*?)```", re.DOTALL)
    return dict(pattern.findall(DOCS.read_text()))


class StubEvaluator:
    """Grades a variant by comparing it with the reference solution; counts calls."""

    backend = "interpreter"

    def __init__(self) -> None:
        self.calls: list[str] = []

    def evaluate(self, request):
        self.calls.append(request.code)
        correct = request.code == request.task.solution_source()
        return EvalResult(
            task_id=request.task.id,
            backend="interpreter",
            profile="small",
            code_hash=str(hash(request.code)),
            stage=Stage.DONE,
            format_ok=True,
            static_ok=True,
            compiled=True,
            correct=correct,
            error_type=ErrorType.NONE if correct else ErrorType.VALUE_MISMATCH,
        )

    def evaluate_many(self, requests):
        return [self.evaluate(r) for r in requests]


# ------------------------------------------------------------------------------ menu
# The variant makers themselves are tested in tests/tasks/test_variants.py.


def test_default_menu_is_the_slot_order_of_the_generated_variants():
    assert tuple(v.name for v in kernel_variants(get_task(RELU))) == DEFAULT_MENU
    assert DEFAULT_MENU[0] == "reference" and DEFAULT_MENU[-1] == "torch_fallback"


# ------------------------------------------------------------------------------ env logic (stub evaluator)


def test_env_memoises_evaluations_and_grades_missing_slots_without_the_evaluator():
    stub = StubEvaluator()
    env = KernelChoiceEnv(
        [RELU, SUM],
        evaluator=stub,
        extra_variants={RELU: {"alt": get_task(RELU).solution_source()}},
    )
    assert env.menu[-1] == "alt"
    obs, info = env.reset(seed=0, options={"task_id": SUM})
    assert info["task_id"] == SUM and obs in env.observation_space
    _, reward, terminated, truncated, info = env.step(env.menu.index("alt"))  # missing for sum_dim
    assert stub.calls == [] and info["outcome"] == "invalid" and reward < 0
    assert not terminated and not truncated
    env.step(1)
    env.step(1)
    assert len(stub.calls) == 1  # the second choice of the same variant is a memo hit


def test_env_observation_layout_and_episode_end():
    env = KernelChoiceEnv([RELU], evaluator=StubEvaluator(), max_attempts=2)
    names = env.feature_names
    assert env.observation_space.shape == (len(names),)
    obs, _ = env.reset(seed=1)
    assert obs[names.index("last=none")] == 1.0 and obs[names.index("category=activation")] == 1.0
    assert obs[names.index("dtype=float32")] == 1.0 and obs[names.index("level=1")] == 1.0
    features = task_features(get_task(RELU), "small")
    assert np.allclose(obs[: len(features)], features)
    broken = env.menu.index("mask_off_by_one")
    obs, reward, terminated, truncated, info = env.step(broken)
    assert info["outcome"] == "incorrect" and not terminated and not truncated
    assert obs[names.index("last=incorrect")] == 1.0 and obs[names.index("tried=mask_off_by_one")] == 1.0
    assert obs[names.index("last_score")] == pytest.approx(reward)
    obs, reward, terminated, truncated, info = env.step(0)
    assert info["outcome"] == "ok" and terminated and not truncated and reward > 0
    env.reset()
    env.step(broken)
    *_, terminated, truncated, _ = env.step(broken)
    assert truncated and not terminated


class EstimatingStub(StubEvaluator):
    """Attaches a cost-model style estimate: the 2048 block is "faster" than the reference."""

    def evaluate(self, request):
        result = super().evaluate(request)
        result.correct = True
        result.error_type = ErrorType.NONE
        result.estimate = {"est_speedup": 2.0 if "BLOCK_SIZE = 2048" in request.code else 1.0}
        return result


def test_reward_uses_the_cost_model_estimate_only_when_asked():
    fast = DEFAULT_MENU.index("block_size=2048")
    rewards = {}
    for use_estimate in (True, False):
        env = KernelChoiceEnv([RELU], evaluator=EstimatingStub(), use_estimate=use_estimate)
        env.reset(seed=0)
        reference = env.step(0)[1]
        env.reset(seed=0)
        rewards[use_estimate] = (reference, env.step(fast)[1])
    assert rewards[True][1] > rewards[True][0] == pytest.approx(0.5)
    assert rewards[False][1] == rewards[False][0] == pytest.approx(0.5)


def test_gymnasium_env_checker_passes_with_a_stub_evaluator():
    from gymnasium.utils.env_checker import check_env

    env = KernelChoiceEnv([RELU, SUM], evaluator=StubEvaluator(), render_mode="ansi")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        check_env(env)
    # The only complaint: instantiated directly rather than through gym.make (no spec).
    assert [str(w.message) for w in caught if "spec" not in str(w.message)] == []
    env.reset(seed=0, options={"task_id": RELU})
    env.step(0)
    assert env.render() == "core/L1/relu attempt 1/3: reference -> ok (score +0.50)"


def test_env_rejects_misuse():
    with pytest.raises(ValueError, match="max_attempts"):
        KernelChoiceEnv([RELU], evaluator=StubEvaluator(), max_attempts=0)
    with pytest.raises(ValueError, match="extra_variants"):
        KernelChoiceEnv([RELU], evaluator=StubEvaluator(), extra_variants={"core/L1/nope": {"a": "x"}})
    with pytest.raises(ValueError, match="menu is empty"):
        KernelChoiceEnv([RELU], evaluator=StubEvaluator(), include_reference=False, block_sizes=(), mutations=())
    env = KernelChoiceEnv([RELU], evaluator=StubEvaluator())
    env.reset(seed=0)
    with pytest.raises(ValueError, match="action"):
        env.step(len(env.menu))
    with pytest.raises(ValueError, match="task_id"):
        env.reset(options={"task_id": SUM})


def test_outcome_classes():
    def result(**kw):
        base = dict(task_id="t", backend="interpreter", profile="small", code_hash="h")
        return EvalResult(**{**base, **kw})

    assert outcome_of(None) == "none"
    assert outcome_of(result(format_ok=True, static_ok=True, compiled=True, correct=True)) == "ok"
    assert outcome_of(result(format_ok=True, static_ok=True, compiled=True, correct=True, hack=True)) == "hack"
    assert outcome_of(result(format_ok=False, error_type=ErrorType.NO_CODE)) == "invalid"
    assert outcome_of(result(format_ok=True, static_ok=True, error_type=ErrorType.COMPILE_ERROR)) == "error"
    mismatch = result(format_ok=True, static_ok=True, compiled=True, error_type=ErrorType.VALUE_MISMATCH)
    assert outcome_of(mismatch) == "incorrect"
    oob_read = result(format_ok=True, static_ok=True, compiled=True, error_type=ErrorType.OUT_OF_BOUNDS)
    assert outcome_of(oob_read) == "error"  # a read outside the tensors: an error, not a plain wrong answer
    assert set(OUTCOMES) >= {"none", "ok", "incorrect", "error", "invalid", "hack"}


@pytest.mark.slow
def test_minilm_embedding_is_appended_and_tells_tasks_apart():
    env = KernelChoiceEnv([RELU, SUM], evaluator=StubEvaluator(), embedding=True)
    assert env.embedding_dim == 384
    relu_obs, _ = env.reset(options={"task_id": RELU})
    sum_obs, _ = env.reset(options={"task_id": SUM})
    relu_vec, sum_vec = relu_obs[-384:], sum_obs[-384:]
    assert np.linalg.norm(relu_vec) == pytest.approx(1.0, abs=1e-3)
    assert float(relu_vec @ sum_vec) < 0.99
    assert relu_obs in env.observation_space


# ------------------------------------------------------------------------------ real evaluator + SB3


def test_docs_excerpts_are_verbatim_copies_of_the_examples():
    excerpts = docs_blocks("from")
    assert set(excerpts) == {"examples/sb3_ppo.py", "examples/trl_grpo.py"}
    for path, code in excerpts.items():
        assert code in (ROOT / path).read_text(), f"docs/integrations.md excerpt of {path} is out of date"


@pytest.mark.slow
def test_docs_quickstart_check_env_passes_and_the_real_evaluator_grades_the_default_menu():
    namespace: dict = {}
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        exec(docs_blocks("test")["sb3-quickstart"], namespace)
    assert [f"{w.category.__name__}: {w.message}" for w in caught] == []
    env = namespace["env"]
    outcomes = {name: outcome_of(env.result_for(RELU, name)) for name in env.menu}
    assert outcomes["reference"] == "ok"
    assert outcomes["block_size=2048"] == "ok"
    assert outcomes["mask_off_by_one"] == "incorrect"
    assert outcomes["torch_fallback"] == "hack"
    assert outcomes["skip_launch"] in ("hack", "incorrect")
    assert namespace["verdicts"]["reference"] == "none"
    assert namespace["model"].num_timesteps >= 128


@pytest.mark.slow
def test_ppo_learns_to_pick_the_correct_variant():
    from stable_baselines3 import PPO

    example = load_example("sb3_ppo")
    env = example.make_env(backend="interpreter")
    env.precompute()
    good = {t.id: env.good_actions(t) for t in env.tasks}
    # One correct slot per task, and not the same one: the policy has to read the observation.
    assert good == {RELU: [env.menu.index("solution_a")], SUM: [env.menu.index("solution_b")]}
    chance = 1 / len(env.menu)

    untrained = PPO("MlpPolicy", env, seed=0, device="cpu", policy_kwargs={"net_arch": [32, 32]})
    before = example.choice_rate(untrained, env, episodes=50, deterministic=False)
    model = example.train(env, total_timesteps=2048, seed=0)
    after = example.choice_rate(model, env, episodes=50, deterministic=True)
    after_sampled = example.choice_rate(model, env, episodes=50, deterministic=False)
    print(f"chance {chance:.2f}; untrained {before:.2f}; trained greedy {after:.2f}, sampled {after_sampled:.2f}")
    assert before <= 0.4
    assert after >= 0.9
    assert after_sampled >= 0.8
