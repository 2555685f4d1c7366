"""The Ascend rule table: every rule the checks can report, its default severity, fix and KB entry.

Each :class:`Rule` names the knowledge-base entry that explains it (``kb_index/entries``) and the
facts of the triton-ascend documentation it rests on; docs/ascend.md has the same table. The
thresholds that several rules share are module constants.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = [
    "ERROR",
    "FEW_BYTES_PER_PROGRAM",
    "MAX_ARANGE",
    "MAX_ROUNDS",
    "MAX_TILE_ELEMENTS",
    "RULES",
    "WARNING",
    "Rule",
]


ERROR = "error"
WARNING = "warning"
#: Few bytes per program: below this a program's transfer is shorter than one round's startup.
FEW_BYTES_PER_PROGRAM = 32 * 1024
#: Rounds of programs over the parallel slots tolerated before ``grid_oversubscribed`` fires.
MAX_ROUNDS = 2
MAX_ARANGE = 1_048_576
MAX_TILE_ELEMENTS = 65_536


@dataclass(frozen=True)
class Rule:
    """One Ascend rule: what it detects, its default severity, the fix, and its KB entry."""

    id: str
    severity: str
    kb_id: str
    detects: str
    fix: str
    facts: str


def _rules(*rules: Rule) -> dict[str, Rule]:
    return {r.id: r for r in rules}


RULES: dict[str, Rule] = _rules(
    Rule(
        "max_grid",
        ERROR,
        "grid-uint16-max-coredim",
        "total number of programs (product of the grid) above the chip's limit of 65535",
        "launch about as many programs as cores and loop over blocks inside the kernel "
        "(for b in range(pid, n_blocks, tl.num_programs(0))), or raise BLOCK so that cdiv(N, BLOCK) <= 65535",
        "11, 76",
    ),
    Rule(
        "grid_oversubscribed",
        WARNING,
        "grid-persistent-physical-cores",
        f"more than {MAX_ROUNDS} rounds of programs over the parallel cores (vector cores, or cube cores for "
        f"kernels with tl.dot) while each program moves under {FEW_BYTES_PER_PROGRAM // 1024} KiB of its "
        "launch's tensor bytes: every extra round pays a startup cost",
        "use grid=(number of cores,) and a grid-stride loop over blocks inside the kernel",
        "8, 9, 13",
    ),
    Rule(
        "ub_overflow",
        ERROR,
        "ub-overflow-compile-error",
        "one loaded tile x the multibuffer factor (2 when multibuffer is on by default) is larger than the "
        "Unified Buffer: a certain 'ub overflow' compile error",
        "halve BLOCK until the tile fits, loop over sub-blocks (BLOCK_SUB of 1024-4096 elements), or pass "
        "multibuffer=False",
        "15, 17, 18, 19",
    ),
    Rule(
        "ub_pressure",
        WARNING,
        "ub-sizing-estimate",
        "estimated UB footprint of the live tiles (loaded tiles x multibuffer factor + other named vector "
        "tiles) above the Unified Buffer",
        "shrink the block sizes or split the row into sub-blocks processed in a loop",
        "15, 17, 19, 20",
    ),
    Rule(
        "l0_overflow",
        WARNING,
        "l0-buffer-limits",
        "tl.dot operand or accumulator tile larger than L0A / L0B (64 KB) or L0C (128 KB)",
        "use smaller BLOCK_M / BLOCK_N / BLOCK_K (e.g. 128 x 256 x 64 for fp16) so m*k*size(A), k*n*size(B) "
        "<= 64 KB and m*n*4 <= 128 KB",
        "16, 45",
    ),
    Rule(
        "int64_index",
        WARNING,
        "int64-scalar-fallback",
        "int64 arithmetic on tensors (e.g. offsets cast with .to(tl.int64) / tl.int64 then added or "
        "multiplied): the vector unit has no int64 add, so it falls back to the scalar unit",
        "keep offsets in int32 (tl.arange is int32) while sizes fit in 2^31; compute a per-program int64 "
        "base as a scalar only when needed",
        "30, 35",
    ),
    Rule(
        "num_warps_stages",
        WARNING,
        "autotune-no-warps-stages",
        "num_warps / num_stages in a launch or an autotune config: they are not tuning knobs on Ascend",
        "drop num_warps / num_stages; tune block sizes (and multibuffer) instead",
        "14",
    ),
    Rule(
        "dot_fp16_accumulator",
        ERROR,
        "dot-dtypes-and-accumulator",
        "tl.dot accumulating in fp16 / bf16 (acc tile or out_dtype): Ascend accumulates in fp32 or int32 only",
        "acc = tl.zeros((BM, BN), dtype=tl.float32); acc = tl.dot(a, b, acc); cast once when storing",
        "32, 43",
    ),
    Rule(
        "dot_block_not_multiple_of_16",
        WARNING,
        "cube-tiles-multiple-of-16",
        "tl.dot tile dimensions (M, N or K) that are not multiples of 16 (the cube unit is 16x16x16)",
        "use BLOCK_M / BLOCK_N / BLOCK_K multiples of 16 and mask the tails",
        "43",
    ),
    Rule(
        "dot_options",
        WARNING,
        "dot-input-precision",
        "tl.dot options triton-ascend does not support: max_num_imprecise_acc, input_precision other than "
        "'ieee' / 'hf32'",
        "drop max_num_imprecise_acc; use input_precision='ieee' (default) or 'hf32'",
        "32, 33",
    ),
    Rule(
        "dot_scaled",
        WARNING,
        "dot-scaled-limits",
        "tl.dot_scaled: no fp8 / fp4 operands on Ascend, int8 scales only",
        "use tl.dot on fp16 / bf16 operands",
        "34",
    ),
    Rule(
        "last_dim_alignment",
        WARNING,
        "align-last-dim-32-bytes",
        "a tensor argument whose last dimension is not a multiple of 32 bytes (vector kernels) or 512 bytes "
        "(kernels with tl.dot): the compiler pads it, which costs UB and time",
        "view the tensor as 1-D and index it flat, or pad the last dimension to an aligned size",
        "21, 22",
    ),
    Rule(
        "tensor_slicing",
        ERROR,
        "no-python-tensor-slicing",
        "Python indexing or slicing of a Triton tensor inside a kernel (t[0], t[i:j]); only [:, None]-style "
        "broadcasting is supported",
        "use masks and tl.where / tl.sum to pick elements, or triton-ascend's extract_slice / get_element",
        "73",
    ),
    Rule(
        "while_loop",
        WARNING,
        "no-return-break-while",
        "a while loop inside a kernel (poorly supported on Ascend; version-dependent)",
        "use for i in range(MAX_ITERS): with an if on the condition",
        "72",
    ),
    Rule(
        "break_continue",
        ERROR,
        "no-return-break-while",
        "break or continue inside a kernel (not supported by the compiler)",
        "loop over a fixed range and guard the body with an if / a mask",
        "72",
    ),
    Rule(
        "early_return",
        WARNING,
        "no-return-break-while",
        "a return statement inside a branch or loop of a kernel (early exit; version-dependent)",
        "guard the work with an if / masks instead of returning early",
        "72",
    ),
    Rule(
        "where_pointer",
        WARNING,
        "no-where-pointer-offsets",
        "tl.where used to compute pointers or pointer offsets (version-dependent on Ascend)",
        "choose the pointer with a static if / else on a scalar, or load both and select the values",
        "75",
    ),
    Rule(
        "dtype_call_cast",
        ERROR,
        "scalar-cast-and-constexpr",
        "a cast written as tl.float16(x) (calling a dtype)",
        "write x.to(tl.float16)",
        "74",
    ),
    Rule(
        "constexpr_in_body",
        WARNING,
        "scalar-cast-and-constexpr",
        "tl.constexpr(...) used inside a kernel body; tl.constexpr belongs in the signature",
        "make the value a `NAME: tl.constexpr` parameter and pass it at launch",
        "74",
    ),
    Rule(
        "arange_too_long",
        ERROR,
        "arange-rules-ascend",
        f"tl.arange with a negative start or a length above {MAX_ARANGE:,}",
        "use a smaller block and loop over blocks",
        "35",
    ),
    Rule(
        "tile_too_large",
        WARNING,
        "tile-and-grid-size-caps",
        f"a tile of {MAX_TILE_ELEMENTS:,} elements or more",
        "keep each tile under 65536 elements (start with 1024-4096) and loop",
        "76, 19",
    ),
    Rule(
        "unsupported_dtype",
        ERROR,
        "unsupported-unsigned-and-fp64",
        "fp64 or unsigned integer types in a kernel or its tensor arguments (most tl ops reject them on A2/A3)",
        "compute in fp32 (and int32); convert on the host if the task's data is fp64",
        "31",
    ),
    Rule(
        "atomic_unsupported",
        ERROR,
        "atomics-limits",
        "an atomic that Ascend does not support: atomic_add on int64 / fp64, atomic_max / min on int64, or "
        "sem other than 'acq_rel' / scope other than 'gpu'",
        "accumulate in int32 / fp32 and keep the default sem and scope",
        "36",
    ),
    Rule(
        "sort_dtype",
        ERROR,
        "sort-dtype-limits",
        "tl.sort on int32, int64, uint8, fp64 or bool data",
        "sort fp16 / fp32 keys (cast before sorting)",
        "37",
    ),
    Rule(
        "item_in_forward",
        WARNING,
        "kernel-anti-patterns",
        ".item() / .tolist() in the host code: each call synchronises the device",
        "keep values on the device and pass tensors to the kernel",
        "78",
    ),
    Rule(
        "device_print",
        WARNING,
        "device-print-env",
        "tl.device_print / print inside a kernel: needs TRITON_DEVICE_PRINT=1 on Ascend and a 16 KB buffer",
        "remove prints from kernels before measuring; debug on the interpreter",
        "40",
    ),
    Rule(
        "block_ptr_swapped_strides",
        WARNING,
        "block-ptr-order-for-transpose",
        "tl.make_block_ptr with strides whose first entry is 1 (a transpose written as swapped strides)",
        "keep the natural strides and express the transpose with order=(0, 1)",
        "26, 27",
    ),
    Rule(
        "indirect_access",
        WARNING,
        "gather-load-then-tl-gather",
        "a load or store whose offsets come from loaded data (a gather / scatter): becomes scalar GM accesses",
        "load the small source contiguously into UB and use tl.gather(src, idx, axis)",
        "23",
    ),
    Rule(
        "div_mod_offsets",
        WARNING,
        "div-mod-in-pointer-offsets",
        "tensor // or % in pointer offsets: only linearised when the block divides the axis evenly",
        "use a 2-D tile (rows[:, None] * stride + cols[None, :]) instead of div / mod on a flat index",
        "25",
    ),
    Rule(
        "fp16_reduction",
        WARNING,
        "fp32-accumulation-reductions",
        "tl.sum / tl.cumsum over fp16 or bf16 data without an fp32 upcast",
        "x.to(tl.float32) before the reduction",
        "78",
    ),
    Rule(
        "int_compare_in_where",
        WARNING,
        "int-compare-cast-fp32",
        "a condition of tl.where made by comparing integer tensors: int compares fall back to the scalar unit",
        "compare fp32 values (cast the integers with .to(tl.float32)) or fold the condition into a load mask",
        "30",
    ),
    Rule(
        "descriptor_mixing",
        WARNING,
        "tensor-descriptor-no-mixing",
        "tensor-descriptor APIs mixed with plain tl.load / tl.store in one kernel",
        "use one access style per kernel",
        "39",
    ),
    Rule(
        "scalar_div_rn",
        WARNING,
        "scalar-div-rn-lowering-crash",
        "tl.div_rn / precise division on scalar operands (crashes the front-end lowering on some versions)",
        "use a / b, or keep an operand a tensor",
        "66",
    ),
)
