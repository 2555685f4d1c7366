"""Checkpoints of the segment-GRPO trainer in Hugging Face format (``akg eval --agent hf`` loads them)."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import torch

CHECKPOINT_PREFIX = "checkpoint-"
#: Where a LoRA run's checkpoint keeps its adapter (the checkpoint directory itself holds the merged model).
ADAPTER_DIR = "adapter"


def save_hf_model(model: Any, tokenizer: Any, target: Path) -> None:
    """Save ``model`` and ``tokenizer`` in Hugging Face format so that ``HFPolicy(target)`` (``akg eval --agent hf
    --model-path target``) loads them.

    A peft (LoRA) model is saved merged (a copy with the adapter folded into the weights) in ``target``, and
    its adapter alone in ``target/adapter`` (what resuming loads).
    """
    if hasattr(model, "merge_and_unload"):
        model.save_pretrained(target / ADAPTER_DIR)
        merged = copy.deepcopy(model).merge_and_unload()
        merged.save_pretrained(target)
        del merged
    else:
        model.save_pretrained(target)
    tokenizer.save_pretrained(target)


def load_hf_weights(model: Any, source: Path) -> None:
    """Load weights saved by :func:`save_hf_model` into ``model`` in place (same architecture)."""
    from safetensors.torch import load_file

    if hasattr(model, "merge_and_unload"):
        from peft import set_peft_model_state_dict

        adapter = source / ADAPTER_DIR / "adapter_model.safetensors"
        set_peft_model_state_dict(model, load_file(str(adapter), device=str(model.device)))
        return
    files = sorted(source.glob("*.safetensors"))
    if not files:
        raise FileNotFoundError(f"{source}: no *.safetensors weights")
    state: dict[str, torch.Tensor] = {}
    for file in files:
        state.update(load_file(str(file), device=str(next(model.parameters()).device)))
    missing, unexpected = model.load_state_dict(state, strict=False)
    tied = getattr(model.config, "tie_word_embeddings", False)
    missing = [k for k in missing if not (tied and k.endswith("lm_head.weight"))]
    if missing or unexpected:
        raise ValueError(f"{source}: weights do not match the model (missing {missing}, unexpected {unexpected})")
    if tied:
        model.tie_weights()


def checkpoint_number(path: Path) -> int:
    """The iteration number of a ``checkpoint-<n>`` directory (-1 if the name has none)."""
    try:
        return int(path.name[len(CHECKPOINT_PREFIX) :])
    except ValueError:
        return -1
