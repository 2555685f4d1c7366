import os, time, cProfile, pstats
from ascend_kernel_gym.agents.config import SegmentGRPOConfig
from ascend_kernel_gym.agents.trainer import SegmentGRPOTrainer
cfg = SegmentGRPOConfig(model_config="tiny", tokenizer="char", task_ids=["core/L1/relu","core/L1/sigmoid"], tasks_per_iteration=2, group_size=8,
    backend="interpreter", max_turns=4, reward_mode="score", env_kwargs={"num_trials": 2},
    compaction={"budget_tokens": 800, "trigger_ratio": 1.0, "strategy": "policy", "max_compactions": 3},
    choice={"seed": 0}, max_new_tokens=4, learning_rate=1e-2, mini_batches=4, iterations=3, output_dir="/tmp/prof_run", resume=None, save_every=0, progress=False, tensorboard=False)
tr = SegmentGRPOTrainer(cfg)
tr.train_iteration()
t=time.process_time(); w=time.time()
cProfile.run("r = tr.train_iteration()", "/tmp/prof2")
print("cpu", time.process_time()-t, "wall", time.time()-w, {k: round(v,2) for k,v in r.items() if isinstance(v,float)})
pstats.Stats("/tmp/prof2").sort_stats("tottime").print_stats(25)
tr.close()
