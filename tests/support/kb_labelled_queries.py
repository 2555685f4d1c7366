"""A labelled retrieval set: queries -> the knowledge-base entries that really answer them.

Each item is ``(query, expected_ids)``. ``expected_ids`` lists every entry that answers the
query (often one); retrieval succeeds on an item when one of them is in the top 3. Queries are
of three kinds: real error strings (from shared/reference/ascend-facts.md, from Triton's CPU
interpreter as observed while writing the entries, and from this project's evaluator),
task descriptions of the bundled suite, and questions a kernel engineer would ask.
"""

from __future__ import annotations

ERROR_QUERIES: list[tuple[str, tuple[str, ...]]] = [
    (
        "MLIRCompilationError: [ConvertLinalgRToBinary] encounters error: Failed to run BishengHIR pipeline: "
        "ub overflow, requires 3145728 bits while 1572864 bits available! (possible reason: multi-buffer)",
        ("ub-overflow-compile-error",),
    ),
    ("RuntimeError: coreDim=98304 can't be greater than UINT16_MAX", ("grid-uint16-max-coredim",)),
    (
        "bishengir-compile: Unknown command line argument '--target=Ascend310P1'. "
        "Cannot find option named 'Ascend310P1'",
        ("install-310p-unsupported",),
    ),
    (
        "MLIRCompilationError: [ConvertTritonIRToLinalgIR] PassManager::run failed",
        ("compile-error-stage-tags", "scalar-div-rn-lowering-crash"),
    ),
    ("error: Casting pointers with unmatched bitwidth", ("pointer-cast-bitwidth",)),
    ("LLVM ERROR: unsupported datatype for arith::ExtFOp to hfusion", ("extf-hfusion-pow-rsqrt",)),
    ("error: Unsupported op for finding the root alloc", ("hivm-root-alloc-failure",)),
    ("Unsupported user for root alloc op", ("hivm-root-alloc-failure",)),
    ("Failed to run buildFinalHIVMPipelines pipeline (Ascend950PR)", ("a5-final-hivm-pipeline",)),
    ("[FAIL] Output mismatch", ("eval-value-mismatch", "multikernelbench-triton-ascend")),
    ("Segmentation fault (core dumped)", ("eval-crash-out-of-bounds",)),
    ("corrupted size vs. prev_size", ("eval-crash-out-of-bounds",)),
    ("Timeout fault", ("eval-timeout",)),
    ('InterpreterError: ValueError("arange\'s range must be a power of 2")', ("arange-rules-ascend",)),
    ("InterpreterError: TypeError(\"'dtype' object is not callable\")", ("scalar-cast-and-constexpr",)),
    ("AssertionError: Torch not compiled with CUDA enabled", ("port-gpu-code-to-npu", "eval-device-mismatch")),
    ("atomic_add does not support int64 on this target", ("atomics-limits",)),
    ("tl.sort: int32 input is not supported", ("sort-dtype-limits",)),
    ("uint16 is not supported by tl.exp on Ascend910B", ("unsupported-unsigned-and-fp64",)),
    ("tl.dot: max_num_imprecise_acc is not supported", ("dot-dtypes-and-accumulator",)),
    ("TypeError: dot_scaled does not support fp8 operands", ("dot-scaled-limits",)),
    ("unexpected keyword argument 'num_warps' for Ascend launcher", ("autotune-no-warps-stages",)),
]

QUESTION_QUERIES: list[tuple[str, tuple[str, ...]]] = [
    ("How many programs should I launch in the grid on an NPU?", ("grid-persistent-physical-cores",)),
    ("How do I get the number of vector cores of the device?", ("query-ai-core-counts",)),
    (
        "How should I time a short kernel on Ascend?",
        ("do-bench-npu", "kernelbench-npu-timing", "torch-npu-profiler", "autotune-env-vars"),
    ),
    ("The Triton cache is stale, how do I force a recompile?", ("force-recompile-cache",)),
    ("How can I see how much UB my kernel uses?", ("print-ub-bits-compile-only", "ub-sizing-estimate")),
    ("How do I debug my kernel logic on the CPU?", ("interpreter-golden-reference",)),
    ("Does tuning num_warps help on Ascend?", ("autotune-no-warps-stages",)),
    ("Profiler: MTE2 time is high and the vector ratio is low", ("profile-scalar-ratio-and-mte2",)),
    ("Can I use break inside a loop in a Triton kernel?", ("no-return-break-while",)),
    ("How do I take element t[0] of a tile inside the kernel?", ("no-python-tensor-slicing",)),
    ("My kernel computes offsets in int64 and it is very slow", ("int64-scalar-fallback",)),
    ("How big is the unified buffer on the 950?", ("ub-capacity-per-chip", "chip-950-a5-specs")),
    ("Can triton-ascend be installed next to the normal triton package?", ("install-triton-ascend-conflicts",)),
    ("What does multibuffer do to the available UB?", ("multibuffer-halves-ub",)),
    ("tl.dot fp32 inputs: can I use a faster reduced precision mode?", ("dot-input-precision",)),
    ("kernel prints from tl.device_print show nothing", ("device-print-env",)),
]

TASK_QUERIES: list[tuple[str, tuple[str, ...]]] = [
    (
        "Embedding lookup: gather rows of an nn.Embedding(num_embeddings, dim) float32 table with int64 indices.",
        ("gather-load-then-tl-gather",),
    ),
    (
        "Inclusive prefix sum (cumsum) of a float32 matrix (M, N) along its last dimension.",
        ("associative-scan-and-keep-dims",),
    ),
    (
        "Square matrix multiplication C = A @ B of two float16 matrices (N, N).",
        ("matmul-default-tiling", "cube-tiles-multiple-of-16", "dot-dtypes-and-accumulator", "l0-buffer-limits"),
    ),
    (
        "RMSNorm (LLaMA style) over the last dimension of a bfloat16 matrix (M, D): computed in float32.",
        ("rowwise-reduction-pattern", "fp32-accumulation-reductions"),
    ),
    ("Softmax over the last dimension of a float32 matrix (M, N).", ("rowwise-reduction-pattern",)),
    ("Elementwise ReLU over a 2-D float32 tensor.", ("elementwise-kernel-pattern",)),
    (
        "Argmax of a float32 tensor (B, N, D) over its middle dimension: int64 output (B, D).",
        ("argmax-index-output",),
    ),
    (
        "Batched transpose into a new contiguous tensor: x (B, M, N) in bfloat16 -> (B, N, M).",
        ("transpose-kernel-pattern",),
    ),
    (
        "Scaled dot-product attention with causal mask over (B, H, S, D) float16 tensors.",
        ("fused-attention-pattern",),
    ),
]

LABELLED_QUERIES: list[tuple[str, tuple[str, ...]]] = ERROR_QUERIES + QUESTION_QUERIES + TASK_QUERIES

#: Evaluator results as the KB wrapper sees them: (task id, error type, error message, expected ids).
#: The wrapper renders the feedback with the evaluator's own renderer and queries with it.
FEEDBACK_CASES: list[tuple[str, str, str, tuple[str, ...]]] = [
    (
        "core/L1/softmax",
        "compile_error",
        "MLIRCompilationError: [ConvertLinalgRToBinary] encounters error: Failed to run BishengHIR pipeline: "
        "ub overflow, requires 2359296 bits while 1572864 bits available! (possible reason: multi-buffer)",
        ("ub-overflow-compile-error",),
    ),
    (
        "core/L1/relu",
        "compile_error",
        "RuntimeError: coreDim=131072 can't be greater than UINT16_MAX",
        ("grid-uint16-max-coredim",),
    ),
    ("core/L1/relu", "compile_error", "ValueError: arange's range must be a power of 2", ("arange-rules-ascend",)),
    ("core/L1/gelu", "compile_error", "TypeError: 'dtype' object is not callable", ("scalar-cast-and-constexpr",)),
    (
        "core/L1/matmul_square",
        "compile_error",
        "error: Casting pointers with unmatched bitwidth",
        ("pointer-cast-bitwidth",),
    ),
    (
        "core/L1/rmsnorm",
        "compile_error",
        "LLVM ERROR: unsupported datatype for arith::ExtFOp to hfusion",
        ("extf-hfusion-pow-rsqrt",),
    ),
    ("core/L1/matmul_square", "torch_fallback", "torch.matmul ran inside ModelNew.forward", ("eval-torch-fallback",)),
    (
        "core/L1/relu",
        "no_kernel_launched",
        "no launch of your @triton.jit kernels was recorded",
        ("eval-no-kernel-launched",),
    ),
    (
        "core/L1/softmax",
        "value_mismatch",
        "max abs error 0.73 (atol 1e-05, rtol 1e-05) in 4096 of 16000 elements",
        ("eval-value-mismatch",),
    ),
    ("core/L1/relu", "timeout", "the evaluation exceeded its 60 s limit", ("eval-timeout",)),
    ("core/L1/relu", "crash", "the child process died with signal 11 (SIGSEGV)", ("eval-crash-out-of-bounds",)),
    ("core/L1/log_softmax", "nan_or_inf", "output has 12 NaN values", ("eval-nan-or-inf",)),
    ("core/L1/sum_dim", "shape_mismatch", "expected shape (16, 1, 64), got (16, 64)", ("eval-shape-mismatch",)),
    ("core/L1/relu", "no_code", "", ("eval-no-code-block",)),
    ("core/L1/relu", "input_mutated", "input 0 was modified in place", ("eval-input-mutated",)),
]
