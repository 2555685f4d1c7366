"""veRL's agent-loop worker driving AscendTriton episodes on the CPU, with a tiny local model: nothing downloaded.

What runs is veRL's own ``AgentLoopWorker.generate_sequences``: it looks up the ``ascend_triton``
agent loop in veRL's registry, instantiates it with hydra from ``agent_loop.yaml``-style options,
runs one episode per rollout (generation through :class:`LocalHFServerClient`, the same
``generate`` interface as veRL's vLLM / SGLang server manager; evaluation through the package's
evaluator on the interpreter), then pads and batches the outputs into a ``DataProto``. The
advantages are then computed with the registered ``akg_segment`` estimator.

    python examples/verl/cpu_smoke.py --rollouts 4

The model is a 2-layer Qwen2 with random weights and a byte-level BPE tokenizer trained here on
the suite's own files, saved to a temporary directory for veRL's ``HFModelConfig``. A random model
does not write kernels, so the tokenizer gets two extra tokens, each a whole answer (the task's
reference solution in a code block, an off-by-one copy), generation is restricted to them and
``<|im_end|>``, and a turn is one token (``max_tokens_per_turn: 1``): rollouts then differ
(correct, incorrect, no code) and so do their advantages.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

SPECIAL_TOKENS = ("<|endoftext|>", "<|im_start|>", "<|im_end|>")
#: A Qwen-style chat template; rendering a longer conversation extends the rendering of a shorter one.
CHAT_TEMPLATE = (
    "{% for message in messages %}{{ '<|im_start|>' + message['role'] + '\\n' + message['content'] "
    "+ '<|im_end|>\\n' }}{% endfor %}{% if add_generation_prompt %}{{ '<|im_start|>assistant\\n' }}{% endif %}"
)


def answer_text(code: str) -> str:
    """An assistant answer holding ``code`` in a Python block (what the env extracts)."""
    return f"```python\n{code.rstrip()}\n```"


def tiny_tokenizer(corpus: Sequence[str], extra_tokens: Sequence[str] = (), vocab_size: int = 512):
    """A byte-level BPE tokenizer trained on ``corpus``, with :data:`CHAT_TEMPLATE`."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast

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
    tokenizer.chat_template = CHAT_TEMPLATE
    return tokenizer


def tiny_model(tokenizer, seed: int = 0):
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
        max_position_embeddings=16384,
        bos_token_id=tokenizer.convert_tokens_to_ids("<|im_start|>"),
        eos_token_id=tokenizer.eos_token_id,
        pad_token_id=tokenizer.pad_token_id,
        tie_word_embeddings=True,
    )
    torch.manual_seed(seed)
    return Qwen2ForCausalLM(config)


def tiny_setup(task_id: str, model_dir: str | Path, seed: int = 0) -> dict[str, Any]:
    """Tokenizer and model saved to ``model_dir``, the two answers, and the generation restriction."""
    from ascend_kernel_gym.tasks import get_task, load_suite
    from ascend_kernel_gym.tasks.variants import with_mask_off_by_one

    task = get_task(task_id)
    reference = task.solution_source()
    broken = with_mask_off_by_one(reference or "")
    if reference is None or broken is None:
        raise ValueError(f"{task_id} needs a reference solution with a bounds mask")
    answers = {"correct": answer_text(reference), "broken": answer_text(broken)}
    corpus = []
    for other in load_suite(task.suite or "core"):
        corpus.append(other.source)
        if other.solution_path:
            corpus.append(Path(other.solution_path).read_text())
    tokenizer = tiny_tokenizer(corpus, extra_tokens=list(answers.values()))
    model = tiny_model(tokenizer, seed=seed)
    model_dir = Path(model_dir)
    model.save_pretrained(model_dir)
    tokenizer.save_pretrained(model_dir)
    allowed = {tokenizer.convert_tokens_to_ids(t) for t in (*answers.values(), "<|im_end|>")}
    suppress = [i for i in range(len(tokenizer)) if i not in allowed]
    return {
        "model": model,
        "tokenizer": tokenizer,
        "model_dir": str(model_dir),
        "answers": answers,
        "generation_kwargs": {"suppress_tokens": suppress},
    }


def verl_config(model_dir: str, agent_loop_config: str, *, prompt_length: int, response_length: int, n: int):
    """veRL's ``ppo_trainer`` config composed with hydra, set up for the ``ascend_triton`` agent loop."""
    import verl
    from hydra import compose, initialize_config_dir

    config_dir = str(Path(verl.__file__).parent / "trainer" / "config")
    overrides = [
        f"actor_rollout_ref.model.path={model_dir}",
        f"actor_rollout_ref.rollout.prompt_length={prompt_length}",
        f"actor_rollout_ref.rollout.response_length={response_length}",
        f"actor_rollout_ref.rollout.n={n}",
        "actor_rollout_ref.rollout.name=vllm",
        "actor_rollout_ref.rollout.calculate_log_probs=true",
        f"actor_rollout_ref.rollout.agent.agent_loop_config_path={agent_loop_config}",
        "actor_rollout_ref.rollout.agent.default_agent_loop=ascend_triton",
        "algorithm.adv_estimator=akg_segment",
    ]
    with initialize_config_dir(config_dir=config_dir, version_base=None):
        return compose(config_name="ppo_trainer", overrides=overrides)


def write_agent_loop_config(path: str | Path, **options: Any) -> str:
    """The agent-loop config file veRL reads (``agent_loop_config_path``): one ``ascend_triton`` entry."""
    import yaml

    entry = {
        "name": "ascend_triton",
        "_target_": "ascend_kernel_gym.integrations.verl_agent_loop.AscendTritonAgentLoop",
        **options,
    }
    Path(path).write_text(yaml.safe_dump([entry], sort_keys=False))
    return str(path)


def make_batch(task_ids: Sequence[str], n: int):
    """The rollout batch a veRL trainer hands the worker: each prompt row repeated ``n`` times, one uid per prompt."""
    import numpy as np
    from verl import DataProto

    def column(values: list[Any]) -> Any:
        array = np.empty(len(values), dtype=object)
        for i, value in enumerate(values):
            array[i] = value
        return array

    rows = [(g, task_id) for g, task_id in enumerate(task_ids) for _ in range(n)]
    non_tensor = {
        "raw_prompt": column([[{"role": "user", "content": t}] for _, t in rows]),
        "agent_name": column(["ascend_triton"] * len(rows)),
        "index": column([g for g, _ in rows]),
        "uid": column([f"prompt-{g}" for g, _ in rows]),
        "extra_info": column([{"task_id": t} for _, t in rows]),
    }
    return DataProto.from_dict(non_tensors=non_tensor)


def run_worker(config, client, batch):
    """veRL's ``AgentLoopWorker`` (the class its Ray actors run) on ``batch``; returns the output ``DataProto``."""
    from verl.experimental.agent_loop import AgentLoopWorker

    worker = AgentLoopWorker(config, client)
    return asyncio.run(worker.generate_sequences(batch))


def run_agent_loop(config, client, row: dict[str, Any], **options: Any):
    """One rollout of the agent loop built as veRL's workers build it (the same keyword arguments), outside a worker.

    Returns what ``run`` returns: a list of per-segment ``AgentLoopOutput`` (veRL's v1 trainer
    stores each as a row) unless ``return_segments=False``.
    """
    from verl.experimental.agent_loop.agent_loop import DictConfigWrap
    from verl.utils.dataset.rl_dataset import RLHFDataset

    from ascend_kernel_gym.integrations.verl_agent_loop import AscendTritonAgentLoop

    loop = AscendTritonAgentLoop(
        trainer_config=DictConfigWrap(config),
        server_manager=client,
        tokenizer=client.tokenizer,
        processor=None,
        dataset_cls=RLHFDataset,
        data_config=DictConfigWrap(config.data),
        **options,
    )
    sampling_params = {"temperature": 1.0, "top_p": 1.0, "top_k": -1, "repetition_penalty": 1.0, "logprobs": True}
    return asyncio.run(loop.run(sampling_params, **row))


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--task-id", default="core/L1/relu")
    parser.add_argument("--rollouts", type=int, default=4)
    parser.add_argument("--max-turns", type=int, default=2)
    args = parser.parse_args(argv)

    from ascend_kernel_gym.integrations.verl_advantages import compute_advantages
    from ascend_kernel_gym.integrations.verl_local_server import LocalHFServerClient

    with tempfile.TemporaryDirectory(prefix="akg-verl-") as tmp:
        setup = tiny_setup(args.task_id, Path(tmp) / "model")
        loop_config = write_agent_loop_config(
            Path(tmp) / "agent_loop.yaml",
            env_kwargs={"backend": "interpreter", "max_turns": args.max_turns, "num_trials": 2},
            return_segments=False,
            max_tokens_per_turn=1,  # one answer token per turn (see the module docstring)
            seed=0,
        )
        config = verl_config(setup["model_dir"], loop_config, prompt_length=4096, response_length=4096, n=args.rollouts)
        client = LocalHFServerClient(
            setup["model"], setup["tokenizer"], config=config, generation_kwargs=setup["generation_kwargs"], seed=0
        )
        output = run_worker(config, client, make_batch([args.task_id], args.rollouts))
        compute_advantages(output, "segment")
        for row in range(len(output)):
            mask = output.batch["response_mask"][row]
            turns = output.non_tensor_batch["akg_turns"][row]
            advantage = output.batch["advantages"][row][mask.bool()]
            print(
                f"rollout {row}: turn rewards {[round(t['reward'], 3) for t in turns]}, "
                f"policy tokens {int(mask.sum())}, advantage {advantage.unique().tolist()}"
            )
    return 0


if __name__ == "__main__":
    sys.exit(main())
