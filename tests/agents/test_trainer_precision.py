"""Trainer: float32 master weights for bfloat16 models, cut answers masked, checkpoints that ``akg eval`` loads."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("transformers")

from ascend_kernel_gym.agents.config import SegmentGRPOConfig  # noqa: E402
from ascend_kernel_gym.agents.hf import HFPolicy, SamplingParams  # noqa: E402
from ascend_kernel_gym.agents.local_lm import build_random_causal_lm  # noqa: E402
from ascend_kernel_gym.agents.precision import TrainerOptimizer  # noqa: E402
from ascend_kernel_gym.agents.trainer import SegmentGRPOTrainer  # noqa: E402

from .test_trainer import PROMPT, make_batch, make_trainer  # noqa: E402


def test_bf16_updates_round_away_without_master_weights_and_accumulate_with_them():
    # Next to 1.0 bf16 weights are 2^-8 = 0.0039 apart; Adam's step with a constant gradient is lr = 1e-4
    # (m / sqrt(v) = 1 after bias correction). Without master weights each step rounds back to 1.0; with
    # float32 masters 10 steps move the master to 1 - 10 * 1e-4 = 0.999 (the bf16 copy is its rounding, 1.0).
    results = {}
    for master in (False, True):
        weight = torch.nn.Parameter(torch.ones(4, dtype=torch.bfloat16))
        opt = TrainerOptimizer([weight], master_weights=master, lr=1e-4, betas=(0.9, 0.999), weight_decay=0.0)
        for _ in range(10):
            opt.zero_grad()
            weight.sum().backward()  # gradient 1 everywhere: AdamW steps by -lr
            opt.accumulate()
            opt.step()
        results[master] = (weight.detach().float().clone(), opt.trainable[0].detach().clone())
    assert torch.equal(results[False][0], torch.ones(4))  # every update rounded away
    assert results[True][1] == pytest.approx(torch.full((4,), 0.999), abs=2e-6)  # the master moved 10 lr
    assert results[True][1].dtype == torch.float32 and results[True][0].dtype == torch.float32


def test_master_gradients_accumulate_in_float32():
    weight = torch.nn.Parameter(torch.zeros(1, dtype=torch.bfloat16))
    opt = TrainerOptimizer([weight], master_weights=True, lr=1.0)
    opt.zero_grad()
    for _ in range(3):  # three micro-batches of gradient 1 + 1/512: bf16 cannot hold 1 + 1/512 (spacing 1/128)
        (weight * torch.tensor(1.0 + 1 / 512, dtype=torch.bfloat16)).sum().backward()
        opt.accumulate()
        assert weight.grad is None
    # bf16(1 + 1/512) rounds to 1.0 per micro-batch; the float32 sum of three is exactly 3
    assert float(opt.trainable[0].grad) == 3.0


def test_bf16_trainer_step_changes_the_master_and_resumes(char_tokenizer, tmp_path):
    model = build_random_causal_lm(tokenizer=char_tokenizer, seed=0).to(torch.bfloat16)
    policy = HFPolicy(model, char_tokenizer, sampling=SamplingParams(max_new_tokens=4, seed=0))
    trainer = make_trainer(policy, tmp_path, dtype="bfloat16", learning_rate=1e-6)
    assert trainer.optimizer.master_weights
    masters = [m.detach().clone() for m in trainer.optimizer.trainable]
    trainer.update(make_batch(policy, ["A", "B"], [1.0, 0.0]))
    moved = [m for m, before in zip(trainer.optimizer.trainable, masters) if not torch.equal(m, before)]
    assert moved  # lr 1e-6 still moves float32 masters
    path = trainer.save_checkpoint()
    fresh = HFPolicy(
        build_random_causal_lm(tokenizer=char_tokenizer, seed=7).to(torch.bfloat16),
        char_tokenizer,
        sampling=SamplingParams(max_new_tokens=4, seed=0),
    )
    resumed = make_trainer(fresh, tmp_path, dtype="bfloat16", resume=str(path))
    for a, b in zip(trainer.optimizer.trainable, resumed.optimizer.trainable, strict=True):
        assert torch.equal(a, b)  # exact float32 masters, not the bf16 weights
    for a, b in zip(policy.model.parameters(), fresh.model.parameters(), strict=True):
        assert torch.equal(a, b)


def test_truncated_answers_masked_or_penalised(tiny_policy, tmp_path):
    batch = make_batch(tiny_policy, ["A", "B"], [1.0, 0.0])
    batch.episodes[0].turns[0].truncated = True
    masked = make_trainer(tiny_policy, tmp_path / "m", truncated_answers="mask")
    # episode 0's only answer is masked: only episode 1's 2 tokens train
    assert masked.update(batch)["trained_tokens"] == 2
    kept = make_trainer(tiny_policy, tmp_path / "k")
    assert kept.update(make_batch(tiny_policy, ["A", "B"], [1.0, 0.0]))["trained_tokens"] == 4
    # penalize 2.0: rewards [1 - 2, 0] -> leave-one-out advantages [-1, +1]
    penalised = make_trainer(tiny_policy, tmp_path / "p", truncated_answers="penalize", truncation_penalty=2.0)
    batch = make_batch(tiny_policy, ["A", "B"], [1.0, 0.0])
    batch.episodes[0].turns[0].truncated = True
    metrics = penalised.update(batch)
    assert batch.samples[0].advantages == pytest.approx([-1.0, -1.0])
    assert batch.samples[1].advantages == pytest.approx([1.0, 1.0])
    assert metrics["trained_tokens"] == 4


def test_checkpoint_loads_with_akg_eval_hf_agent(char_tokenizer, tmp_path):
    from ascend_kernel_gym.leaderboard.agents import build_policy

    model = build_random_causal_lm(tokenizer=char_tokenizer, seed=0)
    policy = HFPolicy(model, char_tokenizer, sampling=SamplingParams(max_new_tokens=4, seed=0))
    trainer = make_trainer(policy, tmp_path)
    trainer.update(make_batch(policy, ["A", "B"], [1.0, 0.0]))
    path = trainer.save_checkpoint()
    assert (path / "config.json").is_file() and list(path.glob("*.safetensors"))
    loaded = build_policy("hf", [], {"model_path": str(path), "temperature": 0.0, "max_tokens": 5})
    assert isinstance(loaded, HFPolicy)
    trained = dict(policy.model.named_parameters())
    for name, param in loaded.model.named_parameters():
        assert torch.equal(param.detach().cpu(), trained[name].detach().cpu()), name
    greedy = HFPolicy(policy.model, char_tokenizer, sampling=SamplingParams(temperature=0.0, max_new_tokens=5))
    assert loaded.generate([PROMPT])[0].token_ids == greedy.generate([PROMPT])[0].token_ids


def test_lora_checkpoint_is_merged_for_eval(char_tokenizer, tmp_path):
    pytest.importorskip("peft")
    from ascend_kernel_gym.leaderboard.agents import build_policy

    model = build_random_causal_lm(tokenizer=char_tokenizer, seed=0)
    policy = HFPolicy(
        model, char_tokenizer, sampling=SamplingParams(temperature=0.0, max_new_tokens=5), lora={"r": 4, "alpha": 8}
    )
    trainer = make_trainer(policy, tmp_path, learning_rate=5e-2)
    for _ in range(3):
        trainer.update(make_batch(policy, ["A", "B"], [1.0, 0.0]))
    path = trainer.save_checkpoint()
    assert (path / "adapter" / "adapter_config.json").is_file()
    loaded = build_policy("hf", [], {"model_path": str(path), "temperature": 0.0, "max_tokens": 5})
    prompt_ids = policy.encode_messages(PROMPT)
    with torch.no_grad():
        expected = policy.model(input_ids=torch.tensor([prompt_ids])).logits
        got = loaded.model(input_ids=torch.tensor([prompt_ids])).logits
    assert torch.allclose(expected, got, atol=1e-4)
    # resuming loads the adapter back into a fresh LoRA model
    fresh = HFPolicy(
        build_random_causal_lm(tokenizer=char_tokenizer, seed=0),
        char_tokenizer,
        sampling=SamplingParams(temperature=0.0, max_new_tokens=5),
        lora={"r": 4, "alpha": 8},
    )
    make_trainer(fresh, tmp_path, resume=str(path))
    with torch.no_grad():
        assert torch.allclose(fresh.model(input_ids=torch.tensor([prompt_ids])).logits, expected, atol=1e-5)


def test_presets_set_the_ablation_objectives():
    grpo = SegmentGRPOConfig.from_preset("grpo")
    assert (grpo.reward_mode, grpo.compaction, grpo.advantage) == ("terminal", None, "trajectory")
    assert grpo.loss_aggregation == "sequence_mean" and grpo.normalize_std and grpo.clip_high == 0.2
    seg = SegmentGRPOConfig.from_dict({"preset": "segment_grpo", "group_size": 4})
    assert seg.advantage == "segment" and seg.compaction == {"strategy": "policy"} and seg.group_size == 4
    assert SegmentGRPOConfig.from_dict({"preset": "dr_grpo", "advantage": "turn"}).advantage == "turn"
    with pytest.raises(ValueError, match="preset"):
        SegmentGRPOConfig.from_dict({"preset": "ppo"})
    assert SegmentGRPOTrainer  # imported for the layering check of this module


def test_yaml_preset_and_cli_override(tmp_path):
    import yaml

    path = tmp_path / "c.yaml"
    path.write_text(yaml.safe_dump({"preset": "grpo", "group_size": 4, "loss_aggregation": "token_mean"}))
    config = SegmentGRPOConfig.from_yaml(path)
    # the preset's values, then the file's keys win
    assert config.advantage == "trajectory" and config.loss_aggregation == "token_mean" and config.group_size == 4
    config = SegmentGRPOConfig.from_yaml(path, preset="segment_grpo")
    assert config.advantage == "segment" and config.compaction == {"strategy": "policy"}


def test_config_picks_the_generation_engine(tmp_path):
    config = SegmentGRPOConfig(
        generation_engine="generate",
        static_cache=True,
        rollout_waves=2,
        output_dir=str(tmp_path),
        resume=None,
        progress=False,
        tensorboard=False,
    )
    from ascend_kernel_gym.agents.trainer import build_policy

    policy = build_policy(config)
    assert (policy.engine, policy.static_cache, policy.compile_decode) == ("generate", True, False)
    with pytest.raises(ValueError, match="generation_engine"):
        SegmentGRPOConfig(generation_engine="vllm")
    with pytest.raises(ValueError, match="rollout_waves"):
        SegmentGRPOConfig(rollout_waves=0)
