import time, torch
from ascend_kernel_gym.agents.local_lm import build_char_tokenizer, build_random_causal_lm
tok = build_char_tokenizer(); m = build_random_causal_lm(tokenizer=tok)
L=1100; B=16
ids = torch.randint(5, 100, (B, L)); mask = torch.ones(B, L, dtype=torch.long); mask[::2, :100] = 0
pos = (mask.cumsum(-1)-1).clamp(min=0)
def t(f, n=2):
    f(); s=time.time()
    for _ in range(n): f()
    return (time.time()-s)/n
with torch.no_grad():
    print("padded batch fwd", t(lambda: m(input_ids=ids, attention_mask=mask, position_ids=pos)))
    print("per-sample fwd no mask", t(lambda: [m(input_ids=ids[i:i+1]) for i in range(B)]))
    print("per-sample fwd ones mask", t(lambda: [m(input_ids=ids[i:i+1], attention_mask=mask[i:i+1]*0+1) for i in range(B)]))
def fb(batched):
    if batched:
        out = m(input_ids=ids, attention_mask=mask, position_ids=pos).logits.sum(); out.backward()
    else:
        for i in range(B):
            m(input_ids=ids[i:i+1]).logits.sum().backward()
print("padded fwd+bwd", t(lambda: fb(True), 1))
print("per-sample fwd+bwd", t(lambda: fb(False), 1))
