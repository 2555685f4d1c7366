"""AdamW with optional float32 master weights, for models whose weights are bfloat16 / float16.

Why: in bfloat16 (8 bits of mantissa) a weight ``w`` only changes when the update is larger than
about ``|w| * 2^-9``; with AdamW's update of about ``lr`` per step and ``lr = 1e-6``, almost every
update of a weight of size ~0.01 or more rounds away. With master weights the optimizer holds a
float32 copy of every trainable parameter; gradients are accumulated in float32 on that copy
(``accumulate`` after each micro-batch's backward), AdamW's moments are float32, the step updates
the copy, and the model's low-precision weights are then rounded from it. Memory per trainable
parameter: 2 (bf16 weight) + 4 (master) + 4 (float32 gradient) + 8 (AdamW moments) bytes, plus a
transient bf16 gradient; frozen weights (LoRA's base model) stay at 2 bytes. Without master weights
(float32 models) this is plain ``torch.optim.AdamW`` on the model's parameters.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import torch


class TrainerOptimizer:
    """AdamW over the trainable parameters, optionally through float32 master copies.

    Args:
        params: the model's trainable parameters.
        master_weights: keep float32 master copies (for low-precision models).
        **adamw: ``torch.optim.AdamW`` arguments (``lr``, ``betas``, ``weight_decay``).
    """

    def __init__(self, params: Iterable[torch.nn.Parameter], *, master_weights: bool, **adamw: Any) -> None:
        self.params = [p for p in params if p.requires_grad]
        if not self.params:
            raise ValueError("no trainable parameters")
        self.master_weights = master_weights
        if master_weights:
            self.master = [torch.nn.Parameter(p.detach().float().clone()) for p in self.params]
        else:
            self.master = self.params
        if all(m.is_cuda for m in self.master):
            adamw.setdefault("fused", True)  # one kernel for the whole update instead of several per tensor
        self.optimizer = torch.optim.AdamW(self.master, **adamw)

    @property
    def param_groups(self) -> list[dict[str, Any]]:
        return self.optimizer.param_groups

    @property
    def trainable(self) -> list[torch.nn.Parameter]:
        """The tensors the optimizer updates (their ``.grad`` is the accumulated gradient)."""
        return self.master

    def zero_grad(self) -> None:
        for p in self.params:
            p.grad = None
        self.optimizer.zero_grad(set_to_none=True)

    def accumulate(self) -> None:
        """Move the model's gradients into the float32 master gradients (a no-op without master weights)."""
        if not self.master_weights:
            return
        for p, m in zip(self.params, self.master, strict=True):
            if p.grad is None:
                continue
            grad = p.grad.detach().float()
            m.grad = grad if m.grad is None else m.grad.add_(grad)
            p.grad = None

    def clip_grad_norm(self, max_norm: float | None) -> float:
        """Clip the accumulated gradient's global norm (``None``: only measure it); returns the norm before."""
        self.accumulate()
        limit = float("inf") if max_norm is None else max_norm
        return float(torch.nn.utils.clip_grad_norm_(self.master, limit))

    def step(self) -> None:
        """One AdamW step; with master weights, then round the model's weights from the masters."""
        self.accumulate()
        self.optimizer.step()
        if self.master_weights:
            with torch.no_grad():
                for p, m in zip(self.params, self.master, strict=True):
                    p.copy_(m)

    def state_dict(self) -> dict[str, Any]:
        state: dict[str, Any] = {"optimizer": self.optimizer.state_dict(), "master_weights": self.master_weights}
        if self.master_weights:
            state["master"] = [m.detach().cpu() for m in self.master]
        return state

    def load_state_dict(self, state: dict[str, Any]) -> None:
        """Restore :meth:`state_dict` (master weights too: the model's weights are rounded from them)."""
        if "optimizer" not in state:  # a plain AdamW state dict (checkpoints of earlier versions)
            self.optimizer.load_state_dict(state)
            return
        if bool(state.get("master_weights")) != self.master_weights:
            raise ValueError("checkpoint and trainer disagree on master_weights")
        if self.master_weights:
            with torch.no_grad():
                for p, m, saved in zip(self.params, self.master, state["master"], strict=True):
                    m.copy_(saved.to(m.device))
                    p.copy_(m)
        self.optimizer.load_state_dict(state["optimizer"])
