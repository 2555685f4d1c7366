import cProfile, pstats, time, sys
sys.path.insert(0, "tests/agents")
from conftest import FakeEvaluator
from test_rollout import make_factory, TASKS
from ascend_kernel_gym.agents.local_lm import build_char_tokenizer, build_random_causal_lm
from ascend_kernel_gym.agents.hf import HFPolicy, SamplingParams
from ascend_kernel_gym.agents.rollout import collect_rollouts
from ascend_kernel_gym.tasks.suite import get_task
tok = build_char_tokenizer()
pol = HFPolicy(build_random_causal_lm(tokenizer=tok), tok, sampling=SamplingParams(max_new_tokens=6, seed=0))
f = make_factory(FakeEvaluator(), tokenizer=tok, budget=700, max_turns=3)
t=time.time()
cProfile.run("b = collect_rollouts(pol, [get_task(t) for t in TASKS], 2, env_factory=f, seed=1)", "/tmp/prof")
print(time.time()-t, b.stats)
pstats.Stats("/tmp/prof").sort_stats("cumulative").print_stats(25)
