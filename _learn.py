import os, time, sys, json
os.environ["TRITON_INTERPRET"]="1"
import torch
torch.set_num_threads(int(os.environ.get("TH","2")))
from ascend_kernel_gym.agents.config import SegmentGRPOConfig
from ascend_kernel_gym.agents.trainer import SegmentGRPOTrainer
TASKS = sys.argv[1].split(",") if len(sys.argv) > 1 else ["core/L1/relu", "core/L1/sigmoid"]
cfg = SegmentGRPOConfig(
    model_config="tiny", tokenizer=os.environ.get("TOK","bpe:1024"), task_ids=TASKS, tasks_per_iteration=len(TASKS), group_size=8,
    backend="interpreter", max_turns=int(os.environ.get("MT","4")), reward="default", reward_mode="score",
    compaction={"budget_tokens": int(os.environ.get("BUDGET","400")), "trigger_ratio": 1.0, "strategy": "policy", "max_compactions": 3},
    choice={"seed": 0}, temperature=1.0, max_new_tokens=4, advantage="segment", gamma=1.0,
    learning_rate=float(os.environ.get("LR", "3e-3")), iterations=int(os.environ.get("IT", "25")), mini_batches=int(os.environ.get("MB","2")), max_grad_norm=1.0,
    output_dir="/tmp/learn_run", resume=None, save_every=0, progress=False, tensorboard=False, seed=int(os.environ.get("SEED","0")), init_seed=int(os.environ.get("SEED","0")),
    env_kwargs={"num_trials": 2},
)
t0 = time.time()
tr = SegmentGRPOTrainer(cfg)
for i in range(cfg.iterations):
    r = tr.train_iteration()
    print(i, f"reward {r['reward_mean']:.3f} correct {r['correct_rate']:.3f} segs {r['segments_per_episode']:.2f} over {r['overlong_rate']:.2f} "
          f"tok/seg {r['tokens_per_segment']:.0f} clip {r['clip_fraction']:.3f} roll {r['rollout_s']:.1f}s gen {r['generation_s']:.1f}s env {r['env_s']:.1f}s upd {r['update_s']:.1f}s", flush=True)
print("total", time.time()-t0)
tr.close()
