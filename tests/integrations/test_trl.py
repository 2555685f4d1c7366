"""The TRL adapter: the environment_factory contract, the dataset helper, and a real GRPO step.

Unit tests use a stub evaluator; the GRPO test runs TRL's GRPOTrainer (transformers generation
on the CPU, no vLLM) with a tiny random model and the real evaluator on the interpreter.
"""

from __future__ import annotations

import inspect
import re
from pathlib import Path

import pytest
from example_scripts import load_example

from ascend_kernel_gym.evaluation.result import ErrorType, EvalResult, Stage
from ascend_kernel_gym.integrations.trl import (
    DEFAULT_INSTRUCTION,
    AscendTritonToolEnv,
    TRLEnvConfig,
    build_trl_dataset,
    make_environment_factory,
)
from ascend_kernel_gym.tasks import get_task, load_suite

ROOT = Path(__file__).resolve().parents[2]
DOCS = ROOT / "docs" / "integrations.md"
RELU = "core/L1/relu"


def docs_snippet(name: str) -> str:
    """The Python block of docs/integrations.md preceded by ``<!-- test: name -->``."""
    match = re.search(rf"<!-- test: {re.escape(name)} -->\n```python\n(.*?)```", DOCS.read_text(), re.DOTALL)
    assert match, f"docs/integrations.md has no tested snippet {name!r}"
    return match.group(1)


class StubEvaluator:
    """Correct iff the code is the task's reference solution."""

    backend = "interpreter"

    def __init__(self) -> None:
        self.codes: list[str] = []

    def evaluate(self, request):
        self.codes.append(request.code)
        correct = request.code.strip() == (request.task.solution_source() or "").strip()
        return EvalResult(
            task_id=request.task.id,
            backend="interpreter",
            profile="small",
            code_hash="h",
            stage=Stage.DONE,
            format_ok=True,
            static_ok=True,
            compiled=True,
            correct=correct,
            error_type=ErrorType.NONE if correct else ErrorType.VALUE_MISMATCH,
            error_message="" if correct else "output mismatch",
        )


def tool_methods(cls) -> list[str]:
    """What TRL's GRPOTrainer offers the model as tools (its own inspection rule)."""
    return [
        name
        for name, _ in inspect.getmembers(cls, predicate=inspect.isfunction)
        if name not in ("reset", "get_reward") and not name.startswith("_")
    ]


def test_class_meets_the_environment_factory_contract():
    from transformers.utils import get_json_schema

    env = AscendTritonToolEnv()  # no-argument constructor; builds nothing heavy yet
    assert env.env is None and env.config == TRLEnvConfig()
    assert tool_methods(AscendTritonToolEnv) == ["submit_kernel"]
    schema = get_json_schema(env.submit_kernel)
    assert schema["function"]["name"] == "submit_kernel"
    assert schema["function"]["parameters"]["required"] == ["code"]
    assert "ModelNew" in schema["function"]["parameters"]["properties"]["code"]["description"]
    assert inspect.signature(AscendTritonToolEnv.get_reward).return_annotation in (float, "float")


def test_factory_binds_and_checks_options():
    factory = make_environment_factory(backend="interpreter", max_turns=2)
    env = factory()
    assert isinstance(env, AscendTritonToolEnv) and env.config.max_turns == 2
    assert factory() is not env
    with pytest.raises(ValueError, match="max_turns"):
        make_environment_factory(max_turns=0)
    with pytest.raises(ValueError, match="env_kwargs"):
        make_environment_factory(env_kwargs={"max_turns": 3})
    with pytest.raises(TypeError, match="config"):
        AscendTritonToolEnv({"backend": "cuda"})


def test_build_trl_dataset_rows():
    ds = build_trl_dataset("core", "all", task_ids=[RELU, "core/L1/sum_dim"], repeat=2, system_prompt="sys")
    assert ds.column_names == ["prompt", "task_id", "level", "category"]
    assert ds["task_id"] == [RELU, RELU, "core/L1/sum_dim", "core/L1/sum_dim"]
    assert ds[0]["prompt"] == [{"role": "system", "content": "sys"}, {"role": "user", "content": DEFAULT_INSTRUCTION}]
    train = build_trl_dataset("core", "train")
    assert set(train["task_id"]) == {t.id for t in load_suite("core", split="train")}
    with pytest.raises(ValueError, match="repeat"):
        build_trl_dataset(repeat=0)


def test_episode_reset_submit_and_reward_with_a_stub_evaluator():
    stub = StubEvaluator()
    env = AscendTritonToolEnv(backend="interpreter", max_turns=2, env_kwargs={"evaluator": stub, "num_trials": 1})
    assert env.get_reward() == pytest.approx(-0.8)  # no submission: the default preset's "no code" score
    prompt = env.reset(prompt=[{"role": "user", "content": ""}], task_id=RELU, level=1)
    assert "torch.relu" in prompt and env.task_id == RELU
    assert env.get_reward() == pytest.approx(-0.8)

    feedback = env.submit_kernel("import torch\nclass ModelNew: pass")
    assert [c.strip() for c in stub.codes] == ["import torch\nclass ModelNew: pass"]
    assert "1 submission(s) left" in feedback and "-0.200" in feedback
    assert env.get_reward() == pytest.approx(-0.2)

    feedback = env.submit_kernel(get_task(RELU).solution_source())
    assert "episode is over" in feedback.lower()
    assert env.get_reward() == pytest.approx(0.5) and env.scores == [pytest.approx(-0.2), pytest.approx(0.5)]

    refused = env.submit_kernel("anything")
    assert "no further submissions" in refused.lower() and len(stub.codes) == 2

    env.reset(task_id=RELU)  # a new episode forgets the old one
    assert env.num_submissions == 0
    with_fences = 'X = """\n```\nnot the end\n```\n"""'
    env.submit_kernel(with_fences)
    assert stub.codes[-1].strip() == with_fences  # passed through verbatim, inner fences included

    env.reset(task_id=RELU)
    assert env.num_submissions == 0 and env.get_reward() == pytest.approx(-0.8)
    env.submit_kernel("")  # empty code is a failed turn, not an evaluation
    assert len(stub.codes) == 3 and env.get_reward() == pytest.approx(-0.8)


def test_no_submission_reward_override():
    env = AscendTritonToolEnv(
        no_submission_reward=-3.0, env_kwargs={"evaluator": StubEvaluator()}, backend="interpreter"
    )
    env.reset(task_id=RELU)
    assert env.get_reward() == -3.0


@pytest.mark.slow
def test_grpo_trainer_runs_an_optimisation_step_with_the_environment_factory(tmp_path):
    import torch

    example = load_example("trl_grpo")
    setup = example.tiny_setup(RELU, seed=0)
    model, tokenizer = setup["model"], setup["tokenizer"]
    dataset = build_trl_dataset("core", "all", task_ids=[RELU])
    factory = make_environment_factory(backend="interpreter", max_turns=1, env_kwargs={"num_trials": 2})
    trainer = example.make_trainer(
        model,
        tokenizer,
        dataset,
        factory,
        str(tmp_path),
        max_steps=1,
        num_generations=8,
        generation_kwargs=setup["generation_kwargs"],
    )
    before = {name: p.detach().clone() for name, p in model.named_parameters()}
    trainer.train()

    assert trainer.state.global_step == 1
    logs = next(entry for entry in trainer.state.log_history if "reward" in entry)
    assert logs["tools/call_frequency"] > 0 and logs["tools/failure_frequency"] == 0

    # Every rollout's reward is the real evaluator's verdict on what it submitted.
    envs = trainer.environments
    assert len(envs) == 8 and all(isinstance(e, AscendTritonToolEnv) for e in envs)
    reference = get_task(RELU).solution_source().strip()
    kinds = set()
    for env in envs:
        if env.num_submissions == 0:
            kinds.add("none")
            assert env.get_reward() == pytest.approx(-0.8)
            continue
        first_code = env.env.unwrapped.attempts[0]["code"].strip()
        verdict = env.env.unwrapped.attempts[0]["eval"]
        if first_code == reference:
            kinds.add("correct")
            assert verdict["correct"] and not verdict["hack"] and env.get_reward() == pytest.approx(0.5)
        else:
            kinds.add("broken")
            assert not verdict["correct"] and env.get_reward() < 0
    assert logs["reward"] == pytest.approx(sum(e.get_reward() for e in envs) / len(envs), abs=1e-4)
    assert len(kinds) >= 2 and logs["reward_std"] > 0
    changed = [name for name, p in model.named_parameters() if not torch.equal(before[name], p.detach())]
    assert changed, "the GRPO step left every parameter unchanged"


@pytest.mark.slow
def test_docs_trl_env_snippet_runs_with_the_real_evaluator():
    namespace: dict = {}
    exec(docs_snippet("trl-env"), namespace)
    assert "torch.relu" in namespace["prompt"]
    assert namespace["reward"] == pytest.approx(0.5)
    assert "1 submission(s) left" in namespace["feedback"]
    verdict = namespace["env"].last_info["eval"]
    assert verdict["correct"] and not verdict["hack"]


@pytest.mark.slow
def test_docs_multiturn_loop_and_token_masks_run_with_the_real_evaluator():
    import gymnasium as gym

    namespace: dict = {}
    exec(docs_snippet("multiturn-loop"), namespace)
    exec(docs_snippet("token-masks"), namespace)
    reference = get_task(RELU).solution_source()
    answers = iter(["Let me think about it first.", f"Here is the kernel:\n```python\n{reference}```"])
    env = gym.make("AscendTriton-v0", backend="interpreter", max_turns=2, num_trials=2)
    episode = namespace["run_episode"](env, lambda messages: next(answers), task_id=RELU, seed=0)
    assert episode["num_turns"] == 2 and episode["best_score"] == pytest.approx(0.5)
    assert episode["rewards"][0] == pytest.approx(-0.8)  # no code block
    assert episode["return"] == pytest.approx(0.5)  # improvement mode: the return is the best score
    roles = [m["role"] for m in episode["messages"]]
    assert roles == ["system", "user", "assistant", "user", "assistant", "user"]

    tokenizer = load_example("trl_grpo").tiny_tokenizer(["def f(x):\n    return x\n"] * 4, vocab_size=300)
    out = namespace["to_token_masks"](episode["messages"], tokenizer)
    ids, mask = out["response_ids"], out["response_mask"]
    assert len(ids) == len(mask) and 0 < sum(mask) < len(mask)
    policy_text = tokenizer.decode([i for i, m in zip(ids, mask) if m])
    env_text = tokenizer.decode([i for i, m in zip(ids, mask) if not m])
    assert "Let me think about it first." in policy_text and "@triton.jit" in policy_text
    first_feedback = episode["messages"][3]["content"]
    assert first_feedback[:60] in env_text and "Let me think" not in env_text
    full = tokenizer.apply_chat_template(
        episode["messages"], add_generation_prompt=True, tokenize=True, return_dict=False
    )
    assert out["prompt_ids"] + ids == full
