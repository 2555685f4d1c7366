"""What candidate code may and may not use: the single source of the sandbox policy.

The static stage (:mod:`.static`) enforces these lists on the AST; the runtime guard
(:mod:`.guard`) and the launch / operator recorder (:mod:`.recorder`) enforce the runtime part.
Plain data only: importing this module is free.
"""

from __future__ import annotations

#: why seeding is refused, and what to do instead (references often seed in ``__init__``)
SEEDING_REFUSED = (
    "seeding the global RNG is not allowed; drop the call: ModelNew receives the reference's parameters and "
    "buffers after it is built, and the harness seeds every trial itself"
)

#: Top-level modules a candidate may import. Everything else is refused with a message that
#: lists this set (an allow-list is harder to slip past than a deny-list).
ALLOWED_IMPORT_ROOTS: frozenset[str] = frozenset(
    {
        "__future__",
        "torch",
        "torch_npu",  # the npu prompt asks for it; its graph capture is refused below
        "triton",
        "math",
        "typing",
        "typing_extensions",
        "functools",
        "itertools",
        "operator",
        "collections",
        "dataclasses",
        "enum",
        "abc",
        "numbers",
        "warnings",
    }
)

#: Modules that are named in messages as dangerous (process, network, file, introspection).
#: Reaching one of them through an attribute path (``torch.serialization.os``) is refused too.
FORBIDDEN_MODULES: frozenset[str] = frozenset(
    {
        "os",
        "sys",
        "subprocess",
        "socket",
        "ctypes",
        "cffi",
        "threading",
        "_thread",
        "multiprocessing",
        "concurrent",
        "asyncio",
        "importlib",
        "builtins",
        "gc",
        "inspect",
        "signal",
        "shutil",
        "pathlib",
        "io",
        "tempfile",
        "pickle",
        "marshal",
        "shelve",
        "time",
        "timeit",
        "random",
        "code",
        "codeop",
        "runpy",
        "pty",
        "fcntl",
        "resource",
        "mmap",
        "urllib",
        "http",
        "requests",
        "ssl",
        "select",
        "selectors",
        "atexit",
        "faulthandler",
        "traceback",
        "linecache",
        "sysconfig",
        "glob",
        "weakref",
        "numpy",
        "pdb",
        "types",
        "contextlib",
        "copyreg",
        "dill",
        "cloudpickle",
        "ascend_kernel_gym",
        "pkgutil",
        "np",
        "posix",
        "nt",
        "_io",
        "_imp",
        "_posixsubprocess",
        "_ctypes",
        "_socket",
        "_signal",
        "_weakref",
        "_frozen_importlib",
        "_frozen_importlib_external",
        "zipimport",
        "logging",
    }
)

#: Attribute names refused on *any* object, resolvable or not: names of dangerous modules (an
#: alias the resolver cannot follow, ``[torch][0].sys``, still spells ``.sys``) and interpreter
#: internals. ``getattr(x, "<name>")`` with such a literal is refused too. Left out: module names that
#: are everyday words for attributes (``self.np``, the number of programs; ``cfg.time``); those are
#: refused only where the name is reached through a module (a resolved path such as
#: ``torch.nn.functional.np``, checked by the static stage and again against the live modules).
#: No class of torch or triton holds NumPy under ``np``; a module that does is only reached by a path.
ATTRIBUTE_WORDS: frozenset[str] = frozenset({"time", "random", "types", "code", "io", "select", "signal", "np"})
FORBIDDEN_ATTR_NAMES: frozenset[str] = frozenset(
    {
        *(m for m in FORBIDDEN_MODULES if m not in ATTRIBUTE_WORDS),
        "_getframe",
        "_current_frames",
        "settrace",
        "setprofile",
        "get_type_hints",
        "get_annotations",
        "get_device_module",
        "evaluate_forward_ref",
        "ForwardRef",
        "str_to_ty",
        "attrgetter",
        "methodcaller",
        "singledispatch",
        "singledispatchmethod",
        "from_file",
        "load_library",
        "resolve_name",
        "import_module",
        "default_generator",
        "initial_seed",
        "get_rng_state",
        "set_rng_state",
        "CUDAGraph",
        "NPUGraph",
        "make_graphed_callables",
    }
)

#: Dotted paths (prefixes) that are refused even though their root is an allowed import.
#: ``functools.update_wrapper(sink, obj, assigned=(name,))`` reads any attribute of ``obj`` by a
#: name given as data (a computed getattr run from the standard library, where the guard sees no
#: candidate frame): refused by name, and ``functools.wraps`` only as a plain decorator.
#: a kernel's pre-run hooks run where Triton prepares a launch (also the harness's unrecorded re-runs)
PRE_RUN_HOOK_REFUSED = "kernel pre-run hooks run your code where the operator recorder cannot follow"
#: library functions that ``eval`` a string the candidate hands them (an annotation, a type name)
EVAL_REFUSED = "it evaluates a string as Python code, which the checker cannot see"
UPDATE_WRAPPER_REFUSED = "it copies attributes named as data (dynamic attribute access); use @functools.wraps(fn)"
WRAPS_PATH = "functools.wraps"
WRAPS_RULE = (
    "`functools.wraps` is allowed only as a decorator with the wrapped function alone, `@functools.wraps(fn)`: "
    "its `assigned=` / `updated=` copy attributes named as data (dynamic attribute access)"
)

FORBIDDEN_PATHS: dict[str, str] = {
    "torch.compile": "torch.compile hands the work to Inductor instead of your Triton kernel",
    "torch.compiler": "torch.compiler hands the work to Inductor instead of your Triton kernel",
    "torch._dynamo": "TorchDynamo compiles PyTorch code instead of your Triton kernel",
    "torch._inductor": "Inductor generates kernels instead of you",
    "torch.jit": "TorchScript is not a Triton kernel",
    "torch.fx": "graph rewriting is not allowed",
    "torch.export": "graph export is not allowed",
    "torch.cuda.graph": "CUDA graph capture is not allowed (it hides launches from the timer)",
    "torch.cuda.graphs": "CUDA graph capture is not allowed (it hides launches from the timer)",
    "torch.cuda.CUDAGraph": "CUDA graph capture is not allowed (it hides launches from the timer)",
    "torch.cuda.make_graphed_callables": "CUDA graph capture is not allowed",
    "torch.npu.graph": "NPU graph capture is not allowed",
    "torch.npu.NPUGraph": "NPU graph capture is not allowed",
    "torch_npu.npu.graph": "NPU graph capture is not allowed",
    "torch_npu.npu.NPUGraph": "NPU graph capture is not allowed",
    "torch_npu.npu.graphs": "NPU graph capture is not allowed",
    "torch_npu.npu.make_graphed_callables": "NPU graph capture is not allowed",
    "torch.utils": "torch.utils (native extensions, data loaders, dlpack, dispatch modes) is not allowed",
    "torch.from_numpy": "NumPy interop is not allowed",
    "torch.frombuffer": "tensors over raw Python buffers are not allowed",
    "torch.asarray": "torch.asarray shares raw Python buffers; allocate with torch.empty / torch.empty_like",
    "torch.from_dlpack": "DLPack interop is not allowed",
    "torch.library": "registering custom operators is not allowed",
    "torch.ops": "calling operators through torch.ops is not allowed",
    "torch.hub": "downloading models is not allowed",
    "torch.load": "loading pickled files is not allowed",
    "torch.save": "writing files is not allowed",
    "torch.serialization": "serialization is not allowed",
    "torch.multiprocessing": "starting processes is not allowed",
    "torch.distributed": "distributed communication is not allowed",
    "torch.testing": "the correctness checker is not yours to call or change",
    "torch.manual_seed": SEEDING_REFUSED,
    "torch.seed": SEEDING_REFUSED,
    "torch.initial_seed": "reading the RNG seed is not allowed",
    "torch.random": "touching the global RNG is not allowed",
    "torch.get_rng_state": "touching the global RNG is not allowed",
    "torch.set_rng_state": "touching the global RNG is not allowed",
    "torch.cuda.manual_seed": SEEDING_REFUSED,
    "torch.cuda.manual_seed_all": SEEDING_REFUSED,
    "torch.cuda.set_rng_state": "touching the global RNG is not allowed",
    "torch.cuda.get_rng_state": "touching the global RNG is not allowed",
    "torch.set_default_dtype": "changing global PyTorch defaults changes the reference too",
    "torch.set_default_device": "changing global PyTorch defaults changes the reference too",
    "torch.set_default_tensor_type": "changing global PyTorch defaults changes the reference too",
    "torch.set_float32_matmul_precision": "changing global PyTorch defaults changes the reference too",
    "torch.set_flush_denormal": "changing global PyTorch defaults changes the reference too",
    "torch.use_deterministic_algorithms": "changing global PyTorch defaults changes the reference too",
    "torch.set_num_threads": "changing global PyTorch settings is not allowed",
    "torch.backends": "changing backend flags changes the reference too",
    "torch.overrides": "overriding PyTorch functions is not allowed",
    "torch.nn.modules": "global module hooks (torch.nn.modules.module.register_module_*) are not allowed",
    "torch.cuda.set_per_process_memory_fraction": "changing the memory cap is not allowed",
    "torch.nn.attention": "switching PyTorch's attention backends changes the reference too",
    "torch.set_autocast_enabled": "changing global PyTorch settings changes the reference too",
    "torch.set_autocast_dtype": "changing global PyTorch settings changes the reference too",
    "torch.set_autocast_cpu_enabled": "changing global PyTorch settings changes the reference too",
    "torch.set_autocast_cpu_dtype": "changing global PyTorch settings changes the reference too",
    "torch.set_autocast_gpu_dtype": "changing global PyTorch settings changes the reference too",
    "torch.set_autocast_cache_enabled": "changing global PyTorch settings changes the reference too",
    "torch.set_deterministic_debug_mode": "changing global PyTorch settings changes the reference too",
    "torch.set_num_interop_threads": "changing global PyTorch settings is not allowed",
    "torch.set_warn_always": "changing global PyTorch settings is not allowed",
    "torch.autograd.set_multithreading_enabled": "changing global PyTorch settings is not allowed",
    "torch.cuda.set_sync_debug_mode": "changing global PyTorch settings changes the reference too",
    "torch.cuda.tunable": "tuning PyTorch's own kernels changes the reference too",
    "torch.profiler": "profiling is the harness's job",
    "torch.package": "torch.package reads and writes archives",
    "torch.onnx": "exporting models writes files",
    "torch.classes": "loading custom classes is not allowed",
    "torch.monitor": "torch.monitor is not allowed",
    "torch.from_file": "mapping files into tensors is not allowed",
    "torch.futures": "asynchronous work is not allowed",
    "typing.get_type_hints": "evaluating annotations runs code the checker cannot see",
    "typing_extensions.get_type_hints": "evaluating annotations runs code the checker cannot see",
    "torch.get_device_module": "it hands out a module as a value",
    "typing.ForwardRef": EVAL_REFUSED,
    "typing_extensions.ForwardRef": EVAL_REFUSED,
    "typing.evaluate_forward_ref": EVAL_REFUSED,
    "typing_extensions.evaluate_forward_ref": EVAL_REFUSED,
    "typing_extensions.get_annotations": EVAL_REFUSED,
    "triton.language.str_to_ty": EVAL_REFUSED,
    "operator.attrgetter": "dynamic attribute access is not allowed",  # also where another module re-exports it
    "operator.methodcaller": "dynamic attribute access is not allowed",
    "functools.update_wrapper": UPDATE_WRAPPER_REFUSED,
    "functools.singledispatch": "singledispatch evaluates annotations",
    "functools.singledispatchmethod": "singledispatch evaluates annotations",
    "torch.autograd.profiler": "profiling is the harness's job",
    "triton.runtime.interpreter": "triton.runtime internals are not allowed",
    "triton.runtime.jit": "triton.runtime internals are not allowed",
    "triton.runtime.autotuner": "triton.runtime internals are not allowed",
    "triton.runtime.build": "building native code is not allowed",
    "triton.runtime.cache": "triton.runtime internals are not allowed",
    "triton.runtime.errors": "triton.runtime internals are not allowed",
    "triton.compiler": "calling the Triton compiler directly is not allowed",
    "triton.compile": "calling the Triton compiler directly is not allowed",  # triton.compiler's, re-exported
    "triton.runtime.RemoteCacheBackend": "triton.runtime internals are not allowed",  # triton.runtime.cache's
    "triton.runtime.RedisRemoteCacheBackend": "triton.runtime internals are not allowed",
    "triton.testing": "the benchmarking helpers (and their timers) are not yours to call or change",
    "triton.backends": "triton backend internals are not allowed",
    "triton.tools": "triton tools are not allowed",
    "triton.knobs": "changing Triton settings is not allowed",
    "triton.profiler": "profiling is the harness's job",
    "triton.instrumentation": "Triton instrumentation is not allowed",
}


def forbidden_path_reason(path: str) -> str | None:
    """Why a dotted path is refused (``FORBIDDEN_PATHS``, less ``ALLOWED_PATHS``), or None."""
    if any(path == allowed or path.startswith(allowed + ".") for allowed in ALLOWED_PATHS):
        return None
    for prefix, reason in FORBIDDEN_PATHS.items():
        if path == prefix or path.startswith(prefix + "."):
            return reason
    return None


#: Exceptions inside refused prefixes: host-side tensor descriptors (TMA) are ordinary kernel inputs.
ALLOWED_PATHS: frozenset[str] = frozenset({"triton.tools.tensor_descriptor"})

#: Allowed operators that carry data. None of them may produce or write the memory of an output
#: (``x.transpose(1, 2).contiguous()`` or ``out.copy_(...)`` after a decoy launch, or
#: ``torch.tensor(python_list)``, is PyTorch / Python doing the work, not the kernel).
DATA_TORCH_OPS: frozenset[str] = frozenset(
    {
        "clone",
        "copy_",
        "_to_copy",
        "to",
        "_copy_from",
        "_copy_from_and_resize",
        "cat",
        "stack",
        "pad",
        "constant_pad_nd",
        "lift_fresh",
        "lift_fresh_copy",
    }
)
#: Data-carrying operators that place their sources' elements in a new arrangement.
REARRANGING_TORCH_OPS: frozenset[str] = frozenset({"cat", "stack", "pad", "constant_pad_nd"})
#: Allowed operators that initialise memory: on an output only over its whole storage.
FILL_TORCH_OPS: frozenset[str] = frozenset({"fill_", "zero_"})
#: Operators that return uninitialised memory. During the checked calls of ``forward`` the
#: harness fills what they return (NaN for floating types), so an output element the kernel
#: never writes cannot pass by holding a stale, correct-looking value.
UNINITIALISED_TORCH_OPS: frozenset[str] = frozenset(
    {"empty", "empty_like", "empty_strided", "new_empty", "new_empty_strided", "empty_permuted"}
)

#: Names of builtins a candidate may not use at all (not even reference).
FORBIDDEN_BUILTINS: dict[str, str] = {
    "eval": "eval runs code the checker cannot see",
    "exec": "exec runs code the checker cannot see",
    "compile": "compile builds code the checker cannot see",
    "open": "file access is not allowed",
    "__import__": "dynamic imports are not allowed",
    "globals": "reading the global namespace is not allowed",
    "locals": "reading the local namespace is not allowed",
    "vars": "reading namespaces is not allowed",
    "breakpoint": "the debugger is not allowed",
    "input": "reading stdin is not allowed",
    "exit": "exiting the process is not allowed",
    "quit": "exiting the process is not allowed",
    "help": "help() is not allowed",
    "memoryview": "raw memory access is not allowed",
    "delattr": "deleting attributes dynamically is not allowed",
    "copyright": "not allowed",
    "credits": "not allowed",
    "license": "not allowed",
}

#: Builtins whose names the candidate may not bind (parameter, variable, def, import as): the
#: resolver decides "this is the builtin" by name, without scopes.
UNBINDABLE_BUILTINS: frozenset[str] = frozenset(
    {"eval", "exec", "compile", "open", "__import__", "globals", "locals", "vars", "memoryview", "delattr"}
    | {"getattr", "setattr", "hasattr", "type", "super", "object"}
)

#: ``getattr`` / ``setattr`` / ``hasattr`` are allowed only as direct calls with a literal
#: attribute name; passing them around as values (``functools.reduce(getattr, ...)``) is refused.
ATTR_BUILTINS: frozenset[str] = frozenset({"getattr", "setattr", "hasattr"})

#: Global names under which Triton's interpreter (``triton.runtime.interpreter``) copies its own
#: globals into the module of every kernel it rewrites, where a name the module does not bind
#: reaches them: its native module, builder, semantic, NumPy. A candidate may not use them as
#: global names at all (a binding that never runs would leave the injected value); the harmless
#: ones it shares with ordinary code (``math``, ``triton``, ``tl``, ``dataclass``, ``partial``,
#: ``TensorDescriptor``, the ``typing`` names) are not listed.
INTERPRETER_GLOBAL_NAMES: frozenset[str] = frozenset(
    (
        "ASTTransformer BlockPointerHandle ExtraFunctions FunctionRewriter GridExecutor InterpretedFunction "
        "InterpreterBuilder InterpreterError InterpreterOptions KernelInterface ReduceOps "
        "ReduceScanOpInterface ScanOps TensorDescHandle TensorHandle TritonSemantic ast inspect "
        "interpreter_builder interpreter_semantic np np_erf_fp32 np_erf_fp64 np_umulhi_u64 textwrap time "
        "_InterpreterComparison _LangPatchScope _MISSING _convert_float _dot_scaled_scale_to_f32 _e2m1_to_f32 "
        "_erf _get_np_dtype _get_signed_np_dtype _implicit_cvt _interpreter _ir _mxfp_value_handle_to_float32 "
        "_patch_attr _patch_builtin _patch_lang _patch_lang_core _patch_lang_tensor _patch_reduce_scan "
        "_prepare_dot_scaled_operand _rewrap_tensor _round_f32_to_tf32 _tuple_create _umulhi_64 _unpack_e2m1 "
        "_unwrap_tensor _validate_np_data_size"
    ).split()
)

#: Dunder *names* (not attributes) a candidate may use; ``__builtins__`` and the rest are refused.
SAFE_DUNDER_NAMES: frozenset[str] = frozenset(
    {"__name__", "__doc__", "__file__", "__all__", "__version__", "__author__", "__license__"}
)
#: Dunder names a candidate may assign (module metadata); ``__name__`` never (``__main__`` blocks
#: are skipped by the checker because they never run).
ASSIGNABLE_DUNDER_NAMES: frozenset[str] = frozenset({"__all__", "__version__", "__author__", "__license__"})
#: Dunder names a class body may assign (``__slots__ = ("a", "b")``, PyTorch's ``__constants__``):
#: plain class metadata, nothing reached through them.
CLASS_BODY_DUNDER_NAMES: frozenset[str] = frozenset({"__slots__", "__constants__"})

#: Dunder attribute names that may be read (everything else ``__x__`` is refused).
SAFE_DUNDER_ATTRS: frozenset[str] = frozenset(
    {
        "__init__",
        "__name__",
        "__qualname__",
        "__doc__",
        "__class__",
        "__call__",
        "__len__",
        "__getitem__",
        "__setitem__",
        "__iter__",
        "__next__",
        "__repr__",
        "__str__",
        "__eq__",
        "__hash__",
        "__enter__",
        "__exit__",
        "__post_init__",
        "__contains__",
        "__bool__",
        "__version__",
    }
)

#: Dunder methods a candidate class may not define.
FORBIDDEN_DUNDER_DEFS: frozenset[str] = frozenset(
    {
        "__torch_function__",
        "__torch_dispatch__",
        "__array__",
        "__array_function__",
        "__array_ufunc__",
        "__array_interface__",
        "__cuda_array_interface__",
        "__dlpack__",
        "__dlpack_device__",
        "__del__",
        "__getattribute__",
        "__init_subclass__",
        "__class_getitem__",
        "__set_name__",
        "__reduce__",
        "__reduce_ex__",
        "__instancecheck__",
        "__subclasscheck__",
        "__prepare__",
        "__mro_entries__",
    }
)

#: Classes a candidate's class may derive from, by the dotted path of the base (see
#: :func:`base_class_problem`): its own classes, plain Python and typing classes, ``nn.Module``
#: and the other ``torch.nn`` modules, ``torch.autograd.Function``. Everything else is refused:
#: a tensor or parameter class however spelled, a metaclass, and any base the checker cannot
#: name (``class X(*bases)``, a base from a call or a variable).
BASE_CLASS_ROOTS: frozenset[str] = frozenset(
    {
        "builtins",
        "typing",
        "typing_extensions",
        "enum",
        "abc",
        "collections",
        "numbers",
        "functools",
        "dataclasses",
        "itertools",
        "operator",
        "warnings",
    }
)
#: ``torch`` bases beyond ``torch.nn.*`` (its modules)
TORCH_BASE_CLASSES: frozenset[str] = frozenset({"torch.autograd.Function", "torch.autograd.function.Function"})
#: ``torch.nn`` names that are tensor classes, not modules
TENSOR_CLASS_NAMES: frozenset[str] = frozenset(
    {"Tensor", "Parameter", "Buffer", "UninitializedParameter", "UninitializedBuffer", "UninitializedTensorMixin"}
)
#: Metaclasses reachable from the allowed imports: calling one (or deriving from one) builds
#: classes the checker cannot see.
METACLASS_PATHS: frozenset[str] = frozenset(
    {"builtins.type", "abc.ABCMeta", "enum.EnumMeta", "enum.EnumType", "torch.autograd.function.FunctionMeta"}
)
#: Calls that build a class from run-time values: the bases they get may be anything.
CLASS_FACTORY_PATHS: dict[str, str] = {
    "dataclasses.make_dataclass": "it builds a class from run-time bases; write a @dataclass class statement",
}
#: Where PyTorch turns a tensor into an instance of another class, or lets a class take over its
#: operators: refused as attributes, ``getattr`` names and string constants alike.
TENSOR_SUBCLASS_HOOKS: dict[str, str] = {
    "__torch_function__": "tensor subclasses and operator overrides are forbidden",
    "__torch_dispatch__": "tensor subclasses and operator overrides are forbidden",
    "_make_subclass": "tensor subclasses are forbidden",
    "_make_wrapper_subclass": "tensor subclasses are forbidden",
    "as_subclass": "tensor subclasses are forbidden",
}


def base_class_problem(path: str | None) -> str | None:
    """Why a class may not derive from the class at dotted ``path`` (None: unknown), or None."""
    if path is None:
        return "the checker cannot tell which class it is"
    parts = path.split(".")
    if path in METACLASS_PATHS or parts[-1].endswith("Meta"):
        return "it is a metaclass; metaclasses are forbidden"
    if parts[0] == "torch":
        if parts[-1] in TENSOR_CLASS_NAMES or "parameter" in parts:
            return "tensor subclasses are forbidden"
        if path in TORCH_BASE_CLASSES or (len(parts) > 2 and parts[1] == "nn"):
            return None
        return "only torch.nn modules and torch.autograd.Function may be subclassed from torch"
    if parts[0] in BASE_CLASS_ROOTS:
        return None
    return f"classes from `{parts[0]}` may not be subclassed"


#: Non-dunder attribute names that give access to frames, code objects or raw memory.
FORBIDDEN_ATTRS: dict[str, str] = {
    "update_wrapper": UPDATE_WRAPPER_REFUSED,
    "add_pre_run_hook": PRE_RUN_HOOK_REFUSED,
    "pre_run_hooks": PRE_RUN_HOOK_REFUSED,
    "f_globals": "frame introspection is not allowed",
    "f_locals": "frame introspection is not allowed",
    "f_back": "frame introspection is not allowed",
    "f_builtins": "frame introspection is not allowed",
    "f_code": "frame introspection is not allowed",
    "gi_frame": "frame introspection is not allowed",
    "gi_code": "frame introspection is not allowed",
    "cr_frame": "frame introspection is not allowed",
    "ag_frame": "frame introspection is not allowed",
    "tb_frame": "frame introspection is not allowed",
    "tb_next": "frame introspection is not allowed",
    "co_code": "code-object access is not allowed",
    "func_globals": "frame introspection is not allowed",
    "numpy": "moving tensor data to NumPy is not allowed (NumPy compute bypasses the kernel checks)",
    "tolist": "moving tensor data to Python lists is not allowed (Python compute bypasses the kernel checks)",
    "map_": "Tensor.map_ runs Python per element (Python compute bypasses the kernel checks)",
    "map2_": "Tensor.map2_ runs Python per element (Python compute bypasses the kernel checks)",
    "apply_": "Tensor.apply_ runs Python per element (Python compute bypasses the kernel checks)",
    "untyped_storage": "raw storage access is not allowed",
    "storage": "raw storage access is not allowed",
    "_base": "raw storage access is not allowed",
    "register_forward_hook": "module hooks are not allowed",
    "register_forward_pre_hook": "module hooks are not allowed",
    "register_full_backward_hook": "module hooks are not allowed",
    "register_module_forward_hook": "global module hooks are not allowed",
    "register_module_forward_pre_hook": "global module hooks are not allowed",
    "register_module_full_backward_hook": "global module hooks are not allowed",
    "register_module_full_backward_pre_hook": "global module hooks are not allowed",
    "register_module_buffer_registration_hook": "global module hooks are not allowed",
    "register_module_parameter_registration_hook": "global module hooks are not allowed",
    "register_module_module_registration_hook": "global module hooks are not allowed",
    **{name: reason for name, reason in TENSOR_SUBCLASS_HOOKS.items() if not name.startswith("__")},
}

_AUTOTUNE_HOOK = (
    "Triton's autotuner runs it while it benchmarks configurations, where the operator recorder "
    "cannot follow; autotune over configs and key only"
)
#: Keyword arguments refused in any call (``triton.autotune(..., post_hook=f)``,
#: ``triton.Config(..., pre_hook=f)``); the same names as attributes are in ``FORBIDDEN_ATTRS``.
FORBIDDEN_KEYWORDS: dict[str, str] = {
    "pre_hook": _AUTOTUNE_HOOK,
    "post_hook": _AUTOTUNE_HOOK,
    "do_bench": _AUTOTUNE_HOOK,
}
FORBIDDEN_ATTRS.update(FORBIDDEN_KEYWORDS)

#: Attributes refused everywhere (named for kernels): on the interpreter a kernel's values are
#: Python objects whose ``.handle`` holds NumPy arrays; no device compiler accepts them.
FORBIDDEN_KERNEL_ATTRS: dict[str, str] = {
    "handle": "it reaches the interpreter's NumPy data; use triton.language operations",
}

#: namedtuple's public API, which starts with an underscore so as not to clash with field names
NAMEDTUPLE_API: frozenset[str] = frozenset({"_replace", "_asdict", "_fields", "_make", "_field_defaults"})

#: Recognised ways to mark a Triton kernel.
TRITON_JIT_PATHS: frozenset[str] = frozenset({"triton.jit", "triton.runtime.jit.jit"})
TRITON_WRAPPER_PATHS: frozenset[str] = frozenset({"triton.autotune", "triton.heuristics"})
#: Plain Python functions Triton runs at compile time on constexpr values (kernels may call them).
TRITON_CONSTEXPR_FUNCTION_PATHS: frozenset[str] = frozenset(
    {"triton.constexpr_function", "triton.language.constexpr_function", "triton.language.core.constexpr_function"}
)

#: PyTorch operators (aten overload packet names, no ``aten.`` prefix) that may run inside
#: ``ModelNew.forward``: allocation, views, metadata, copies and other data movement that
#: computes nothing. Anything else is PyTorch doing the work -> ``torch_fallback``.
#: Copies (``clone``, ``copy_``, ``_to_copy``, ``contiguous``) are allowed: they compute
#: nothing, and no task in the suites has an output equal to its input.
ALLOWED_TORCH_OPS: frozenset[str] = frozenset(
    {
        # allocation
        "empty",
        "empty_like",
        "empty_strided",
        "new_empty",
        "new_empty_strided",
        "zeros",
        "zeros_like",
        "new_zeros",
        "zero_",
        "ones",
        "ones_like",
        "new_ones",
        "full",
        "full_like",
        "new_full",
        "fill_",
        "scalar_tensor",
        "lift_fresh",
        "lift_fresh_copy",
        "resize_",
        "set_",
        "arange",  # index helpers are allocation-like; they carry no input data
        # views and reshapes
        "view",
        "_unsafe_view",
        "_reshape_alias",
        "reshape",
        "as_strided",
        "permute",
        "transpose",
        "t",
        "expand",
        "expand_as",
        "squeeze",
        "unsqueeze",
        # the in-place forms of views: they change a tensor's shape, never its data
        "squeeze_",
        "unsqueeze_",
        "transpose_",
        "t_",
        "as_strided_",
        "swapdims_",
        "swapaxes_",
        "detach_",
        "slice",
        "select",
        "narrow",
        "split",
        "split_with_sizes",
        "chunk",
        "unbind",
        "alias",
        "detach",
        "view_as",
        "unflatten",
        "flatten",
        "unfold",
        "movedim",
        "contiguous",
        "view_as_real",
        "view_as_complex",
        "_conj",
        "_neg_view",
        "real",
        "imag",
        "diagonal",
        # metadata and scalars
        "size",
        "stride",
        "sym_size",
        "sym_stride",
        "sym_numel",
        "sym_storage_offset",
        "numel",
        "dim",
        "is_contiguous",
        "is_same_size",
        "is_nonzero",
        "result_type",
        "_has_compatible_shallow_copy_type",
        "record_stream",
        # copies (no compute)
        *DATA_TORCH_OPS,
    }
)

#: Builtins a module may be passed to without escaping the checker (they only read or print it).
HARMLESS_BUILTINS = frozenset(
    f"builtins.{name}" for name in ("print", "str", "repr", "format", "type", "isinstance", "id", "hash", "bool")
)

#: Builtins that only read the class handed to them (``isinstance(x, type(y))``, ``print(type(x))``).
CLASS_READING_BUILTINS = HARMLESS_BUILTINS | {"builtins.issubclass"}
#: Calls whose result is a plain tuple class, allowed as a base (``class P(namedtuple("P", "a b"))``).
TUPLE_CLASS_FACTORIES: frozenset[str] = frozenset(
    {"collections.namedtuple", "typing.NamedTuple", "typing_extensions.NamedTuple"}
)

#: Torch function names whose use in ``forward`` is worth a static warning (the recorder decides).
COMPUTE_METHODS = frozenset(
    {
        "sum",
        "mean",
        "max",
        "min",
        "softmax",
        "log_softmax",
        "matmul",
        "mm",
        "bmm",
        "relu",
        "exp",
        "log",
        "sqrt",
        "tanh",
        "sigmoid",
        "pow",
        "norm",
        "var",
        "std",
        "cumsum",
        "argmax",
        "argmin",
        "abs",
        "clamp",
        "prod",
        "addmm",
        "conv2d",
        "einsum",
    }
)
#: Torch paths that allocate, describe or move data, never worth that warning
NON_COMPUTE_TORCH = frozenset(
    {
        "torch.empty",
        "torch.empty_like",
        "torch.empty_strided",
        "torch.zeros",
        "torch.zeros_like",
        "torch.ones",
        "torch.ones_like",
        "torch.full",
        "torch.full_like",
        "torch.arange",
        "torch.device",
        "torch.Size",
        "torch.Tensor",
        "torch.no_grad",
        "torch.inference_mode",
        "torch.float32",
        "torch.float16",
        "torch.bfloat16",
        "torch.float64",
        "torch.int32",
        "torch.int64",
        "torch.int8",
        "torch.bool",
        "torch.is_tensor",
        "torch.cat",
        "torch.stack",
        "torch.cuda.synchronize",
        "torch.cuda.current_stream",
        "torch.cuda.current_device",
        "torch.cuda.device",
        "torch.cuda.is_available",
        "torch.finfo",
        "torch.iinfo",
    }
)
