"""Write the RL dataset veRL's trainer reads (``data.train_files`` / ``data.val_files``) for the ascend_triton loop.

    python examples/verl/make_dataset.py --out data/ascend_triton --repeat 4

Each row is one task of the suite split: ``prompt`` (the env's opening context), ``agent_name``
(``ascend_triton``), ``data_source`` and ``extra_info.task_id``. Runs where veRL is installed.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path


def write_split(out_dir: Path, split: str, suite: str, repeat: int) -> Path:
    """``<out_dir>/<split>.parquet`` with one row per task of ``split`` (``repeat`` times each)."""
    import pandas as pd

    from ascend_kernel_gym.integrations.verl_agent_loop import dataset_rows
    from ascend_kernel_gym.tasks import load_suite

    task_ids = [task.id for task in load_suite(suite, split=split)]
    rows = dataset_rows(task_ids, {"suite": suite, "split": split, "backend": "interpreter"}, repeat=repeat)
    out_dir.mkdir(parents=True, exist_ok=True)
    path = out_dir / f"{split}.parquet"
    pd.DataFrame(rows).to_parquet(path)
    return path


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default="data/ascend_triton")
    parser.add_argument("--suite", default="core")
    parser.add_argument("--repeat", type=int, default=1)
    args = parser.parse_args(argv)
    for split in ("train", "test"):
        print(write_split(Path(args.out), split, args.suite, args.repeat if split == "train" else 1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
