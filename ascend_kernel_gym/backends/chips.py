"""Chip profiles (Ascend NPUs and an H200 for validating the cost model), stored as JSON data.

Figures marked ``*_is_assumption`` or ``*_is_derived`` are not vendor figures: the JSON says
where each number came from. Users can pass the path of their own JSON profile anywhere a
profile name is accepted.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field, fields
from functools import lru_cache
from pathlib import Path
from typing import Any

CHIPS_DIR = Path(__file__).parent / "chips"


@dataclass(frozen=True)
class ChipProfile:
    """Facts about one accelerator that the Ascend checks and the cost model need."""

    name: str
    vendor: str
    kind: str  # "ascend" or "gpu"
    soc: str
    product: str
    hbm_bandwidth_gbps: float
    peak_dot_tflops: float
    peak_vector_tflops: float
    round_overhead_us: float
    launch_overhead_us: float
    max_grid: int
    hbm_gb: float = 0.0
    l2_mb: float = 0.0
    cube_cores: int | None = None
    vector_cores: int | None = None
    cube_clock_mhz: float | None = None
    sm_count: int | None = None
    clock_mhz: float | None = None
    max_resident_programs_per_core: int = 1
    ub_bytes: int | None = None
    l1_bytes: int | None = None
    l0a_bytes: int | None = None
    l0b_bytes: int | None = None
    l0c_bytes: int | None = None
    ub_block_bytes: int | None = None
    align_vector_last_dim_bytes: int | None = None
    align_cube_last_dim_bytes: int | None = None
    cube_mac: tuple[int, ...] | None = None
    multibuffer_default: bool = False
    hbm_bandwidth_is_assumption: bool = False
    peak_dot_tflops_is_derived: bool = False
    peak_vector_tflops_is_assumption: bool = False
    overheads_are_assumptions: bool = True
    notes: dict[str, str] = field(default_factory=dict)
    sources: tuple[str, ...] = ()

    @property
    def is_ascend(self) -> bool:
        return self.kind == "ascend"

    def parallel_slots(self, uses_dot: bool) -> int:
        """Programs that run at once: cube cores for dot kernels and vector cores otherwise on
        Ascend (ascend-facts 9); SMs x resident programs on a GPU."""
        if self.is_ascend:
            cores = self.cube_cores if uses_dot else self.vector_cores
            return int(cores or 1)
        return int((self.sm_count or 1) * self.max_resident_programs_per_core)

    def to_dict(self) -> dict[str, Any]:
        return {f.name: getattr(self, f.name) for f in fields(self)}


def list_chips() -> list[str]:
    return sorted(p.stem for p in CHIPS_DIR.glob("*.json"))


@lru_cache(maxsize=32)
def load_chip(name_or_path: str) -> ChipProfile:
    """A bundled profile by name (``910B3``, ``Ascend910B3`` or ``H200``) or a JSON file path."""
    path = Path(name_or_path)
    if not path.is_file():
        key = str(name_or_path).removeprefix("Ascend").removeprefix("ascend")
        path = CHIPS_DIR / f"{key}.json"
        if not path.is_file():
            raise ValueError(f"unknown chip profile {name_or_path!r}; bundled: {list_chips()} (or give a JSON path)")
    data = json.loads(path.read_text())
    known = {f.name for f in fields(ChipProfile)}
    notes = {k: str(v) for k, v in data.items() if k.endswith("_note") or k == "notes"}
    values = {k: v for k, v in data.items() if k in known and k != "notes"}
    unknown = set(data) - known - set(notes)
    if unknown:
        raise ValueError(f"{path}: unknown chip profile keys {sorted(unknown)}")
    if "cube_mac" in values and values["cube_mac"] is not None:
        values["cube_mac"] = tuple(values["cube_mac"])
    values["sources"] = tuple(values.get("sources", ()))
    try:
        return ChipProfile(**values, notes=notes)
    except TypeError as exc:
        raise ValueError(f"{path}: invalid chip profile ({exc})") from None
