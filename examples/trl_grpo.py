"""GRPO with TRL on AscendTriton: the model calls a `submit_kernel` tool, the evaluator scores it.

TRL's ``GRPOTrainer(environment_factory=...)`` runs the multi-turn tool loop itself with
``transformers`` generation (no vLLM needed): each rollout gets its own
:class:`~ascend_kernel_gym.integrations.trl.AscendTritonToolEnv`, the model's ``submit_kernel``
calls run the real evaluator, and ``get_reward()`` (the best score of the episode) is the
reward.

    # a real model (downloaded by transformers; needs a chat template with tool calling)
    python examples/trl_grpo.py --model Qwen/Qwen2.5-0.5B-Instruct --steps 10 --backend cuda

    # offline smoke run: a tiny random model, nothing downloaded (what the test runs)
    python examples/trl_grpo.py --tiny --steps 1

In ``--tiny`` mode the model is a 2-layer Qwen2 with random weights and a byte-level BPE
tokenizer trained here on the suite's own files. A random model almost never writes a valid
tool call, so the tokenizer gets two extra tokens, each a whole ``submit_kernel`` call (one
with the task's reference solution, one with an off-by-one copy), and generation is restricted
to those two and ``<|im_end|>``. Rollouts then differ in reward (correct / incorrect / no
submission), and one GRPO step has a real learning signal.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

os.environ.setdefault("TRL_EXPERIMENTAL_SILENCE", "1")

SPECIAL_TOKENS = ("<|endoftext|>", "<|im_start|>", "<|im_end|>")


def tool_call_text(code: str) -> str:
    """The text of one ``submit_kernel`` call in the Qwen2.5 tool-call format."""
    payload = json.dumps({"name": "submit_kernel", "arguments": {"code": code}})
    return f"<tool_call>\n{payload}\n</tool_call>"


def tiny_tokenizer(corpus: Sequence[str], extra_tokens: Sequence[str] = (), vocab_size: int = 1024):
    """A byte-level BPE tokenizer trained on ``corpus``, with Qwen2.5's chat template (shipped by TRL).

    The Qwen2.5 template is one that TRL can parse tool calls from (``add_response_schema``).
    """
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast
    from trl.chat_template_utils import qwen2_5_chat_template

    backend = Tokenizer(models.BPE())
    backend.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    backend.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=vocab_size,
        special_tokens=list(SPECIAL_TOKENS),
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    backend.train_from_iterator(corpus, trainer=trainer)
    backend.add_tokens(list(extra_tokens))
    tokenizer = PreTrainedTokenizerFast(
        tokenizer_object=backend, eos_token="<|im_end|>", pad_token="<|endoftext|>", padding_side="left"
    )
    tokenizer.chat_template = qwen2_5_chat_template
    return tokenizer


def tiny_model(tokenizer, seed: int = 0, max_positions: int = 8192):
    """A randomly initialised 2-layer Qwen2 causal LM sized for ``tokenizer``."""
    import torch
    from transformers import Qwen2Config, Qwen2ForCausalLM

    config = Qwen2Config(
        vocab_size=len(tokenizer),
        hidden_size=32,
        intermediate_size=64,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=2,
        max_position_embeddings=max_positions,
        bos_token_id=tokenizer.convert_tokens_to_ids("<|im_start|>"),
        eos_token_id=tokenizer.eos_token_id,
        pad_token_id=tokenizer.pad_token_id,
        tie_word_embeddings=True,
    )
    torch.manual_seed(seed)
    return Qwen2ForCausalLM(config)


def suite_corpus(suite: str = "core") -> list[str]:
    """Local text to train the tiny tokenizer on: the suite's task files and reference solutions."""
    from ascend_kernel_gym.tasks import load_suite

    texts: list[str] = []
    for task in load_suite(suite):
        texts.append(task.source)
        if task.solution_path:
            texts.append(Path(task.solution_path).read_text())
    return texts


def tiny_setup(task_id: str, seed: int = 0) -> dict[str, Any]:
    """Tokenizer, model and generation restrictions of the offline smoke run (see the module docstring)."""
    from ascend_kernel_gym.tasks import get_task
    from ascend_kernel_gym.tasks.variants import with_mask_off_by_one

    task = get_task(task_id)
    reference = task.solution_source()
    if reference is None:
        raise ValueError(f"--tiny needs a task with a reference solution; {task_id} has none")
    broken = with_mask_off_by_one(reference)
    if broken is None:
        raise ValueError(f"--tiny needs a task whose solution has a bounds mask; {task_id} has none")
    calls = {"correct": tool_call_text(reference), "broken": tool_call_text(broken)}
    tokenizer = tiny_tokenizer(suite_corpus(task.suite or "core"), extra_tokens=list(calls.values()))
    model = tiny_model(tokenizer, seed=seed)
    allowed = {tokenizer.convert_tokens_to_ids(t) for t in (*calls.values(), "<|im_end|>")}
    suppress = [i for i in range(len(tokenizer)) if i not in allowed]
    return {"tokenizer": tokenizer, "model": model, "calls": calls, "generation_kwargs": {"suppress_tokens": suppress}}


def make_trainer(
    model: Any,
    tokenizer: Any,
    dataset: Any,
    environment_factory: Any,
    output_dir: str,
    *,
    max_steps: int = 1,
    num_generations: int = 4,
    max_completion_length: int = 1024,
    learning_rate: float = 1e-3,
    generation_kwargs: dict[str, Any] | None = None,
    seed: int = 0,
):
    """A ``GRPOTrainer`` on the CPU (or the accelerator transformers finds) with the env as tool provider."""
    from trl import GRPOConfig, GRPOTrainer

    args = GRPOConfig(
        output_dir=output_dir,
        max_steps=max_steps,
        per_device_train_batch_size=num_generations,
        num_generations=num_generations,
        max_completion_length=max_completion_length,
        max_tool_calling_iterations=2,
        learning_rate=learning_rate,
        temperature=1.0,
        logging_steps=1,
        save_strategy="no",
        report_to="none",
        bf16=False,
        gradient_checkpointing=False,
        seed=seed,
        generation_kwargs=generation_kwargs,
    )
    return GRPOTrainer(
        model=model,
        args=args,
        train_dataset=dataset,
        processing_class=tokenizer,
        environment_factory=environment_factory,
    )


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", help="a Hugging Face model id or local path (chat template with tool calling)")
    parser.add_argument("--tiny", action="store_true", help="offline smoke run with a tiny random model")
    parser.add_argument("--task-ids", nargs="+", default=["core/L1/relu"])
    parser.add_argument("--backend", default="auto")
    parser.add_argument("--steps", type=int, default=1)
    parser.add_argument("--num-generations", type=int, default=4)
    parser.add_argument("--max-turns", type=int, default=2, help="submissions per episode")
    parser.add_argument("--output-dir", default="runs/trl_grpo")
    args = parser.parse_args(argv)
    if bool(args.tiny) == bool(args.model):
        parser.error("pass exactly one of --model and --tiny")

    from ascend_kernel_gym.integrations.trl import build_trl_dataset, make_environment_factory

    dataset = build_trl_dataset("core", "all", task_ids=args.task_ids)
    factory = make_environment_factory(backend=args.backend, max_turns=args.max_turns)
    if args.tiny:
        setup = tiny_setup(args.task_ids[0])
        model, tokenizer, generation_kwargs = setup["model"], setup["tokenizer"], setup["generation_kwargs"]
    else:
        from transformers import AutoModelForCausalLM, AutoTokenizer

        tokenizer = AutoTokenizer.from_pretrained(args.model, padding_side="left")
        model = AutoModelForCausalLM.from_pretrained(args.model)
        generation_kwargs = None
    trainer = make_trainer(
        model,
        tokenizer,
        dataset,
        factory,
        args.output_dir,
        max_steps=args.steps,
        num_generations=args.num_generations,
        generation_kwargs=generation_kwargs,
    )
    trainer.train()
    for entry in trainer.state.log_history:
        if "reward" in entry:
            print(
                f"step {entry['step']}: reward {entry['reward']:+.3f} (std {entry['reward_std']:.3f}), "
                f"tool calls per rollout {entry.get('tools/call_frequency', 0):.2f}, loss {entry['loss']:+.4f}"
            )
    return 0


if __name__ == "__main__":
    sys.exit(main())
