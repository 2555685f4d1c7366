import time, torch, sys
torch.set_num_threads(int(sys.argv[1]))
from ascend_kernel_gym.agents.local_lm import build_char_tokenizer, build_random_causal_lm
tok = build_char_tokenizer(); m = build_random_causal_lm(tokenizer=tok)
impl = sys.argv[2]
m.config._attn_implementation = impl
L=1100; B=16
ids = torch.randint(5, 100, (B, L)); mask = torch.ones(B, L, dtype=torch.long); mask[::2, :100] = 0
pos = (mask.cumsum(-1)-1).clamp(min=0)
def t(f, n=2):
    f(); s=time.time()
    for _ in range(n): f()
    return (time.time()-s)/n
with torch.no_grad():
    print(sys.argv[1:], "padded batch fwd", t(lambda: m(input_ids=ids, attention_mask=mask, position_ids=pos)))
    print(sys.argv[1:], "padded batch fwd, no mask", t(lambda: m(input_ids=ids)))
