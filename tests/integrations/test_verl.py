"""The veRL agent loop, driven end to end by veRL itself on the CPU with a tiny local model.

Needs veRL (``make test-verl`` builds the separate environment it pins transformers in); skipped
without it. Generation: :class:`LocalHFServerClient` (veRL's server-manager ``generate`` interface)
over a 2-layer random Qwen2 whose tokenizer has one token per whole answer (see
examples/verl/cpu_smoke.py). Evaluation: the package's evaluator on the interpreter.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

pytest.importorskip("verl", reason="veRL is not installed (make test-verl)")

from example_scripts import load_example

from ascend_kernel_gym.agents.advantages import discounted_returns, group_advantages
from ascend_kernel_gym.integrations.verl_advantages import compute_advantages, row_turn_advantages
from ascend_kernel_gym.integrations.verl_agent_loop import AGENT_NAME, AscendTritonAgentLoop
from ascend_kernel_gym.integrations.verl_local_server import LocalHFServerClient
from ascend_kernel_gym.wrappers.compaction import SUMMARY_HEADER
from ascend_kernel_gym.wrappers.kb_retrieval import TIPS_HEADER

ROOT = Path(__file__).resolve().parents[2]
DOCS = ROOT / "docs" / "integrations.md"
RELU = "core/L1/relu"
ENV = {"backend": "interpreter", "max_turns": 2, "num_trials": 2}
PROMPT_LENGTH = RESPONSE_LENGTH = 4096


@pytest.fixture(scope="module")
def smoke():
    return load_example("verl/cpu_smoke")


@pytest.fixture(scope="module")
def setup(smoke, tmp_path_factory):
    return smoke.tiny_setup(RELU, tmp_path_factory.mktemp("verl") / "model")


def docs_snippet(name: str) -> str:
    match = re.search(rf"<!-- test: {re.escape(name)} -->\n```python\n(.*?)```", DOCS.read_text(), re.DOTALL)
    assert match, f"docs/integrations.md has no tested snippet {name!r}"
    return match.group(1)


def make_config(smoke, setup, tmp_path, n, **options):
    loop_config = smoke.write_agent_loop_config(tmp_path / "agent_loop.yaml", **options)
    return smoke.verl_config(
        setup["model_dir"], loop_config, prompt_length=PROMPT_LENGTH, response_length=RESPONSE_LENGTH, n=n
    )


def make_client(setup, config, seed=0):
    return LocalHFServerClient(
        setup["model"], setup["tokenizer"], config=config, generation_kwargs=setup["generation_kwargs"], seed=seed
    )


def runs_of_ones(mask):
    runs, start = [], None
    for i, value in enumerate([*mask, 0]):
        if value and start is None:
            start = i
        elif not value and start is not None:
            runs.append((start, i))
            start = None
    return runs


def expected_score(setup, token_id):
    """The evaluator's verdict each one-token answer must get (default preset, interpreter: no speedup)."""
    tokenizer = setup["tokenizer"]
    ids = {tokenizer.convert_tokens_to_ids(text): kind for kind, text in setup["answers"].items()}
    return {"correct": 0.5, "broken": -0.2}.get(ids.get(token_id), -0.8)  # <|im_end|>: an empty answer, no code


def check_turns_token_exact(client, prompt, response, turns):
    """Every turn's policy tokens are what the server returned for exactly the context before them."""
    for turn in turns:
        start, end = turn["span"]
        matches = [q for q in client.requests if q["prompt_ids"] == prompt + response[:start]]
        assert matches, f"no generate request had the context of turn {turn['index']}"
        assert any(q["token_ids"] == response[start:end] for q in matches)


@pytest.mark.slow
def test_verl_agent_loop_worker_runs_episodes_and_the_registered_estimators_score_them(smoke, setup, tmp_path):
    import torch
    from verl.trainer.ppo import core_algos

    n = 4
    config = make_config(smoke, setup, tmp_path, n, env_kwargs=ENV, return_segments=False, max_tokens_per_turn=1)
    client = make_client(setup, config)
    output = smoke.run_worker(config, client, smoke.make_batch([RELU], n))

    batch, columns = output.batch, output.non_tensor_batch
    assert len(output) == n
    assert batch["prompts"].shape == (n, PROMPT_LENGTH) and batch["responses"].shape == (n, RESPONSE_LENGTH)
    assert set(columns["agent_name"]) == {AGENT_NAME} and len(set(columns["akg_episode"])) == n
    tokenizer = setup["tokenizer"]
    returns = []
    for r in range(n):
        attention = batch["attention_mask"][r]
        prompt = batch["prompts"][r][attention[:PROMPT_LENGTH].bool()].tolist()
        length = int(attention[PROMPT_LENGTH:].sum())
        response = batch["responses"][r][:length].tolist()
        mask = batch["response_mask"][r][:length].tolist()
        turns = columns["akg_turns"][r]
        # The YAML entry's options hold for every rollout (max_turns 2), not only the first one.
        assert [t["index"] for t in turns] == [0, 1] and columns["__num_turns__"][r] == 4
        assert runs_of_ones(mask) == [tuple(t["span"]) for t in turns]
        check_turns_token_exact(client, prompt, response, turns)
        for turn in turns:
            assert turn["score"] == pytest.approx(expected_score(setup, response[turn["span"][0]]))
            assert turn["correct"] == (turn["score"] > 0)
        # Environment tokens: the env's feedback as the chat template renders it, masked out.
        env_text = tokenizer.decode([t for t, m in zip(response, mask) if not m], skip_special_tokens=False)
        assert "<|im_start|>user\n" in env_text and "Score" not in tokenizer.decode(response[:1])
        logprobs = batch["rollout_log_probs"][r][:length]
        assert all(logprobs[i] < 0 for i in range(length) if mask[i])
        assert all(logprobs[i] == 0 for i in range(length) if not mask[i])
        rewards = [t["reward"] for t in turns]
        assert float(batch["rm_scores"][r].sum()) == pytest.approx(sum(rewards))  # improvement mode: the best score
        assert sum(rewards) == pytest.approx(max(t["score"] for t in turns))
        returns.append(sum(rewards))
    assert len(set(returns)) >= 2, "the seeded rollouts should differ in return"

    mask = batch["response_mask"]
    for name in ("akg_segment", "akg_turn", "akg_trajectory"):
        estimate = core_algos.get_adv_estimator_fn(name)
        advantages, _ = estimate(
            token_level_rewards=batch["rm_scores"],
            response_mask=mask,
            index=columns["uid"],
            config={"gamma": 1.0, "norm_adv_by_std_in_grpo": False},
            non_tensor_batch=columns,
        )
        assert (advantages[mask == 0] == 0).all()
        for r in range(n):
            others = [returns[j] for j in range(n) if j != r]
            if name == "akg_trajectory":
                want = [returns[r] - sum(returns) / n] * 2
            elif name == "akg_segment":  # one segment per episode: leave-one-out on the return
                want = [returns[r] - sum(others) / (n - 1)] * 2
            else:
                rewards = [[t["reward"] for t in columns["akg_turns"][j]] for j in range(n)]
                togo = [discounted_returns(rw) for rw in rewards]
                want = [togo[r][t] - sum(togo[j][t] for j in range(n) if j != r) / (n - 1) for t in range(2)]
            for turn, value in zip(columns["akg_turns"][r], want, strict=True):
                start, end = turn["span"]
                assert advantages[r, start:end].tolist() == pytest.approx([value] * (end - start))
        if name == "akg_segment":
            assert advantages.abs().sum() > 0
    # veRL's algorithm config: gamma and norm_adv_by_std_in_grpo (True by default) reach the estimator.
    assert config.algorithm.norm_adv_by_std_in_grpo
    normalised, _ = core_algos.get_adv_estimator_fn("akg_trajectory")(
        token_level_rewards=batch["rm_scores"],
        response_mask=mask,
        index=columns["uid"],
        config=config.algorithm,
        non_tensor_batch=columns,
    )
    trajectory = group_advantages([[(0, r)] for r in returns], "trajectory", normalize_std=True)
    for r in range(n):
        assert normalised[r][mask[r] == 1].tolist() == pytest.approx([trajectory[r][0]] * int(mask[r].sum()), abs=1e-5)
    # The docs' snippet: the registered estimator on the worker's batch, with veRL's algorithm config.
    namespace = {"batch": output, "config": config}
    exec(docs_snippet("verl-advantages"), namespace)
    normalised_segment = compute_advantages(output, "segment", normalize_std=True).batch["advantages"].clone()
    assert torch.allclose(namespace["advantages"], normalised_segment, atol=1e-6)
    assert namespace["advantages"].abs().sum() > 0
    # compute_advantages writes the same into the batch.
    compute_advantages(output, "segment")
    assert (
        output.batch["advantages"].shape == mask.shape and (output.batch["returns"] == output.batch["advantages"]).all()
    )


@pytest.mark.slow
def test_a_compacted_episode_gives_one_token_exact_sample_per_segment(smoke, setup, tmp_path):
    from verl.experimental.agent_loop import AgentLoopOutput

    config = make_config(smoke, setup, tmp_path, 2)
    client = make_client(setup, config, seed=1)
    options = {
        "env_kwargs": {**ENV, "max_turns": 3},
        "compaction": {"budget_tokens": 1200, "strategy": "rules"},
        "kb": {"dense": False, "k": 2},
        "max_tokens_per_turn": 1,
        "seed": 0,
    }
    episodes = []
    for session in range(2):
        row = {"uid": "prompt-0", "session_id": session, "extra_info": {"task_id": RELU}, "raw_prompt": []}
        outputs = smoke.run_agent_loop(config, client, row, **options)
        assert isinstance(outputs, list) and all(isinstance(o, AgentLoopOutput) for o in outputs)
        episodes.append(outputs)

    tokenizer = setup["tokenizer"]
    assert max(len(outputs) for outputs in episodes) >= 2, "the budget should force a compaction"
    for outputs in episodes:
        fields = [o.extra_fields for o in outputs]
        assert [f["akg_segment"] for f in fields] == list(range(len(outputs)))
        turn_order = [t["index"] for f in fields for t in f["akg_turns"]]
        assert turn_order == list(range(3)) and all(f["akg_turns"] for f in fields)
        assert len({f["akg_episode"] for f in fields}) == 1
        assert all(f["akg_episode_turns"] == fields[0]["akg_episode_turns"] for f in fields)
        assert [seg for seg, _ in fields[0]["akg_episode_turns"]] == [
            f["akg_segment"] for f in fields for _ in f["akg_turns"]
        ]
        episode_return = sum(r for _, r in fields[0]["akg_episode_turns"])
        texts = []
        for output in outputs:
            prompt_text = tokenizer.decode(output.prompt_ids, skip_special_tokens=False)
            if output.extra_fields["akg_segment"] > 0:
                assert SUMMARY_HEADER in prompt_text  # a later segment starts from the compacted context
                assert output.prompt_ids[:50] == outputs[0].prompt_ids[:50]  # the same system prompt and task
            assert output.reward_score == pytest.approx(episode_return)
            response = list(output.response_ids)
            assert runs_of_ones(output.response_mask) == [tuple(t["span"]) for t in output.extra_fields["akg_turns"]]
            check_turns_token_exact(client, list(output.prompt_ids), response, output.extra_fields["akg_turns"])
            row = output.as_dict()  # what veRL's v1 trainer stores per output
            assert row["responses"].shape == row["response_mask"].shape == row["rollout_log_probs"].shape
            assert float(row["rm_scores"][-1]) == pytest.approx(episode_return)
            env_ids = [t for t, m in zip(response, output.response_mask) if not m]
            texts += [prompt_text, tokenizer.decode(env_ids, skip_special_tokens=False)]
        assert any(TIPS_HEADER in text for text in texts)  # KB tips reach the model

    rows = [o for outputs in episodes for o in outputs]
    per_row = row_turn_advantages(
        ["prompt-0"] * len(rows),
        [o.extra_fields["akg_episode"] for o in rows],
        [o.extra_fields["akg_turns"] for o in rows],
        [o.extra_fields["akg_episode_turns"] for o in rows],
        "segment",
    )
    expected = group_advantages([[tuple(t) for t in e[0].extra_fields["akg_episode_turns"]] for e in episodes])
    flat = [
        [expected[e][t["index"]] for t in o.extra_fields["akg_turns"]] for e, outs in enumerate(episodes) for o in outs
    ]
    assert per_row == flat


def test_options_that_cannot_work_are_refused(smoke, setup, tmp_path):
    from verl.trainer.ppo import core_algos

    config = make_config(smoke, setup, tmp_path, 1)
    with pytest.raises(ValueError, match="compaction off"):
        smoke.run_agent_loop(config, make_client(setup, config), {}, return_segments=False, compaction={})
    with pytest.raises(ValueError, match="max_tokens_per_turn"):
        smoke.run_agent_loop(config, make_client(setup, config), {}, max_tokens_per_turn=0)
    import torch

    estimate = core_algos.get_adv_estimator_fn("akg_segment")
    with pytest.raises(ValueError, match="compute_advantages"):
        estimate(token_level_rewards=torch.zeros(1, 2), response_mask=torch.ones(1, 2), index=["u"], config=None)


def test_the_loop_is_registered_with_veRL_under_its_name():
    from verl.experimental.agent_loop import AgentLoopBase
    from verl.experimental.agent_loop.agent_loop import _agent_loop_registry

    assert issubclass(AscendTritonAgentLoop, AgentLoopBase)
    target = _agent_loop_registry[AGENT_NAME]["_target_"]
    assert target == "ascend_kernel_gym.integrations.verl_agent_loop.AscendTritonAgentLoop"


def test_the_example_dataset_loads_in_verls_rl_dataset_and_the_example_config_composes(smoke, setup, tmp_path):
    from omegaconf import OmegaConf
    from verl.utils.dataset.rl_dataset import RLHFDataset

    make_dataset = load_example("verl/make_dataset")
    path = make_dataset.write_split(tmp_path, "test", "core", repeat=2)
    config = make_config(smoke, setup, tmp_path, 1)
    data_config = OmegaConf.merge(config.data, {"max_prompt_length": 8192, "return_raw_chat": True})
    dataset = RLHFDataset(data_files=[str(path)], tokenizer=setup["tokenizer"], config=data_config)
    from ascend_kernel_gym.tasks import load_suite

    test_ids = [t.id for t in load_suite("core", split="test")]
    assert len(dataset) == 2 * len(test_ids)
    item = dataset[0]
    assert item["agent_name"] == AGENT_NAME and item["extra_info"]["task_id"] == test_ids[0]
    assert [m["role"] for m in item["raw_prompt"]] == ["system", "user"]

    # The GRPO script's overrides and agent-loop file are valid for veRL's config schema.
    script = (ROOT / "examples" / "verl" / "run_grpo.sh").read_text()
    block = script.split("OVERRIDES=(", 1)[1].split(")\n", 1)[0]
    overrides = [
        line.strip().replace('"$DATA', str(tmp_path)).replace('"$MODEL"', setup["model_dir"]).replace('"', "")
        for line in block.strip().splitlines()
    ]
    import verl
    from hydra import compose, initialize_config_dir

    with initialize_config_dir(config_dir=str(Path(verl.__file__).parent / "trainer" / "config"), version_base=None):
        composed = compose(config_name="ppo_trainer", overrides=overrides)
    assert composed.actor_rollout_ref.rollout.agent.default_agent_loop == AGENT_NAME
    (entry,) = OmegaConf.load(ROOT / "examples" / "verl" / "agent_loop.yaml")
    assert entry.name == AGENT_NAME and entry._target_.endswith("AscendTritonAgentLoop")
    options = {k: v for k, v in entry.items() if k not in ("name", "_target_")}
    from verl.experimental.agent_loop.agent_loop import DictConfigWrap

    built = AscendTritonAgentLoop(
        trainer_config=DictConfigWrap(config),
        server_manager=make_client(setup, config),
        tokenizer=setup["tokenizer"],
        processor=None,
        dataset_cls=RLHFDataset,
        data_config=DictConfigWrap(config.data),
        **options,
    )
    assert built.options["compaction"]["strategy"] == "policy" and built.options["kb"] == {"k": 3}
    assert built.max_tokens_per_turn == 4096 and isinstance(built.options["env_kwargs"], dict)
