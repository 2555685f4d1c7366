from pathlib import Path
from ascend_kernel_gym.agents.local_lm import build_bpe_tokenizer, _local_corpus
import ascend_kernel_gym
root = Path(ascend_kernel_gym.__file__).parent
corpus = _local_corpus() + [p.read_text() for p in (root/"kb_index").rglob("*.md")] + [p.read_text() for p in (root/"envs"/"prompts").glob("*.md")]
print(len(corpus), sum(map(len, corpus)))
fb = '## Result of turn 1 of 6: score 0.500 (best so far 0.500)\n\nCorrect: passed 5/5 correctness trials (max abs error 0).\nSpeed is not measured on the interpreter backend.\nKernels launched: relu_kernel.\n\nYou have 5 turn(s) left. Reply with the complete, improved solution in one ```python block.'
from ascend_kernel_gym.wrappers.compaction import summary_request_text
r = summary_request_text(800, 800, 128)
for v in (300, 512, 1024, 2048):
    tok = build_bpe_tokenizer(v, corpus)
    print(v, len(tok), len(fb), len(tok(fb)["input_ids"]), len(r), len(tok(r)["input_ids"]))
