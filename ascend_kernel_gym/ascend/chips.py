"""Chip profiles (Ascend NPUs and an H200 for validating the cost model), stored as JSON data.

Each bundled profile is one JSON file in ``ascend/chips/``. Figures are of three kinds, and the
JSON says which is which:

- vendor / platform figures (CANN platform ini files, NVIDIA datasheets): plain keys;
- derived figures (``*_is_derived``), e.g. the Ascend cube peak = cube cores x 16^3 MACs x 2 x clock;
- assumptions (``*_is_assumption``, ``overheads_are_assumptions``): no public figure exists, the
  value is a documented guess used only by the cost model (HBM bandwidth of Ascend chips,
  vector peaks, overheads, memory latency, L2 bandwidth).

Users can pass the path of their own JSON profile anywhere a profile name is accepted.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field, fields
from functools import lru_cache
from pathlib import Path
from typing import Any

CHIPS_DIR = Path(__file__).parent / "chips"
#: Triton's default ``num_warps`` on GPUs (used when a launch does not say).
DEFAULT_NUM_WARPS = 4


@dataclass(frozen=True)
class ChipProfile:
    """Facts about one accelerator that the Ascend checks and the cost model need.

    Attributes (units in the names): see ``docs/ascend.md`` for the table of bundled values and
    which of them are assumptions.
    """

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
    #: Most programs (thread blocks) resident on one core at once (GPU: hardware block limit per SM).
    max_resident_programs_per_core: int = 1
    #: GPU: threads one SM holds; with ``warp_size`` and a launch's ``num_warps`` this caps residency.
    max_threads_per_core: int | None = None
    warp_size: int | None = None
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
    #: Cost model: rate of a dot with fp32 operands relative to ``peak_dot_tflops`` (fp16/bf16).
    dot_fp32_rate: float = 0.5
    #: Cost model: rate of fp32 dots with ``input_precision="ieee"`` (None: same as ``dot_fp32_rate``).
    dot_fp32_ieee_rate: float | None = None
    #: Cost model: L2 bandwidth for re-reads of data already read once in the same launch.
    l2_bandwidth_gbps: float | None = None
    #: Cost model: latency of one global-memory access (Little's law bound on small tiles).
    mem_latency_us: float = 1.0
    #: Cost model: memory tiles one program keeps in flight (2 with Ascend's double buffering).
    tiles_in_flight_per_program: float = 1.0
    hbm_bandwidth_is_assumption: bool = False
    peak_dot_tflops_is_derived: bool = False
    peak_vector_tflops_is_assumption: bool = False
    overheads_are_assumptions: bool = True
    notes: dict[str, str] = field(default_factory=dict)
    sources: tuple[str, ...] = ()

    @property
    def is_ascend(self) -> bool:
        return self.kind == "ascend"

    def physical_cores(self, uses_dot: bool) -> int:
        """Cores that share the chip's bandwidth and peak for one launch: on Ascend the cube cores
        for kernels with ``tl.dot`` and the vector cores otherwise (ascend-facts 9); SMs on a GPU."""
        if self.is_ascend:
            cores = self.cube_cores if uses_dot else self.vector_cores
            return int(cores or 1)
        return int(self.sm_count or 1)

    def resident_programs_per_core(self, num_warps: int | None = None) -> int:
        """Programs one core runs at once: 1 on Ascend; on a GPU the smaller of the block limit and
        ``max_threads_per_core / (num_warps * warp_size)`` (registers and shared memory ignored)."""
        if self.is_ascend:
            return 1
        limit = max(1, int(self.max_resident_programs_per_core))
        if self.max_threads_per_core and self.warp_size:
            warps = int(num_warps or DEFAULT_NUM_WARPS)
            limit = min(limit, max(1, self.max_threads_per_core // (max(1, warps) * self.warp_size)))
        return limit

    def parallel_slots(self, uses_dot: bool, num_warps: int | None = None) -> int:
        """Programs that run at once: cube cores for dot kernels and vector cores otherwise on
        Ascend (ascend-facts 9); SMs x resident programs on a GPU."""
        return self.physical_cores(uses_dot) * self.resident_programs_per_core(num_warps)

    def assumptions(self) -> list[str]:
        """Human-readable list of the figures of this profile that are assumptions or derived."""
        out = []
        if self.hbm_bandwidth_is_assumption:
            out.append(f"HBM bandwidth {self.hbm_bandwidth_gbps:g} GB/s is an assumption (no official figure)")
        if self.peak_dot_tflops_is_derived:
            out.append(
                f"dot peak {self.peak_dot_tflops:g} TFLOP/s is derived (cube cores x 16^3 MACs x 2 x clock), "
                "not a vendor figure"
            )
        if self.peak_vector_tflops_is_assumption:
            out.append(f"vector peak {self.peak_vector_tflops:g} TFLOP/s is an assumption")
        if self.overheads_are_assumptions:
            out.append(
                f"overheads are assumptions: launch {self.launch_overhead_us:g} us, per round of programs "
                f"{self.round_overhead_us:g} us, memory latency {self.mem_latency_us:g} us"
            )
        if self.l2_bandwidth_gbps is not None:
            out.append(f"L2 re-read bandwidth {self.l2_bandwidth_gbps:g} GB/s is an assumption")
        return out

    def to_dict(self) -> dict[str, Any]:
        return {f.name: getattr(self, f.name) for f in fields(self)}


def list_chips() -> list[str]:
    """Names of the bundled profiles."""
    return sorted(p.stem for p in CHIPS_DIR.glob("*.json"))


def resolve_chip(chip: str | ChipProfile) -> ChipProfile:
    """A :class:`ChipProfile` from a profile, a bundled name or a JSON path."""
    if isinstance(chip, ChipProfile):
        return chip
    if not isinstance(chip, str) or not chip:
        raise TypeError(f"chip must be a profile name, a JSON path or a ChipProfile, got {chip!r}")
    return load_chip(chip)


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
        profile = ChipProfile(**values, notes=notes)
    except TypeError as exc:
        raise ValueError(f"{path}: invalid chip profile ({exc})") from None
    if profile.kind not in ("ascend", "gpu"):
        raise ValueError(f"{path}: kind must be 'ascend' or 'gpu', got {profile.kind!r}")
    for name in ("hbm_bandwidth_gbps", "peak_dot_tflops", "peak_vector_tflops", "max_grid"):
        if not getattr(profile, name) or getattr(profile, name) <= 0:
            raise ValueError(f"{path}: {name} must be > 0")
    return profile
