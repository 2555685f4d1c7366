#!/usr/bin/env bash
# GRPO on Qwen2.5-1.5B-Instruct with the ascend_triton agent loop (veRL 0.9, v1 trainer, vLLM rollouts).
# Needs GPUs (or Ascend NPUs with veRL's NPU setup) and `pip install "verl[vllm]"`; the CPU smoke run is
# examples/verl/cpu_smoke.py. Every rollout returns one sample per compaction segment; veRL's GRPO gives
# each segment the group-relative advantage of its episode (reward_score is the episode's return).
set -euo pipefail
DATA=${DATA:-data/ascend_triton}
MODEL=${MODEL:-Qwen/Qwen2.5-1.5B-Instruct}
python examples/verl/make_dataset.py --out "$DATA" --repeat 4
OVERRIDES=(
  algorithm.adv_estimator=grpo
  data.train_files="$DATA/train.parquet"
  data.val_files="$DATA/test.parquet"
  data.train_batch_size=16
  data.max_prompt_length=4096
  data.max_response_length=8192
  data.return_raw_chat=true
  actor_rollout_ref.model.path="$MODEL"
  actor_rollout_ref.actor.optim.lr=1e-6
  actor_rollout_ref.actor.ppo_mini_batch_size=16
  actor_rollout_ref.rollout.name=vllm
  actor_rollout_ref.rollout.n=8
  actor_rollout_ref.rollout.prompt_length=4096
  actor_rollout_ref.rollout.response_length=8192
  actor_rollout_ref.rollout.calculate_log_probs=true
  actor_rollout_ref.rollout.agent.agent_loop_config_path=examples/verl/agent_loop.yaml
  actor_rollout_ref.rollout.agent.default_agent_loop=ascend_triton
  trainer.n_gpus_per_node=8
  trainer.nnodes=1
  trainer.total_epochs=1
  trainer.logger=console
)
python -m verl.trainer.main_ppo "${OVERRIDES[@]}" "$@"
