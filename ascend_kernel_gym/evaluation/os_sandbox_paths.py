"""Default paths of the OS sandbox's policy per backend (used by :mod:`.os_sandbox`).

Found without importing anything: packages through their import specs, programs on ``PATH``.
"""

from __future__ import annotations

import functools
import glob
import importlib.util
import os
import shutil
import sys
import sysconfig
from collections.abc import Iterable

BACKENDS = ("interpreter", "cuda", "npu")
#: system paths every backend reads (dynamic loader, its cache, CPU topology for thread pools)
SYSTEM_READ = (
    "/usr/lib",
    "/usr/lib64",
    "/lib",
    "/lib64",
    "/usr/local/lib",
    "/etc/ld.so.cache",
    "/etc/ld.so.conf",
    "/etc/ld.so.conf.d",
    "/etc/localtime",
    "/sys/devices/system/cpu",
    "/sys/devices/system/node",
)
BASE_DEVICES = ("/dev/null", "/dev/zero", "/dev/full", "/dev/random", "/dev/urandom")
CUDA_DEVICES = ("/dev/nvidia*", "/dev/nvidia-caps")
NPU_DEVICES = ("/dev/davinci*", "/dev/devmm_svm", "/dev/hisi_hdc", "/dev/svm0")
#: what Triton's compiler needs to see on device backends (it builds a C launcher with ``cc``; ``file``
#: reads its magic database and the Python executable for platform.architecture())
DEVICE_READ = (
    "/sys",
    "/usr/include",
    "/usr/bin",
    "/usr/libexec",
    "/etc/alternatives",
    "/usr/local/cuda",
    "/usr/share/file",
    "/usr/share/misc",
    "/usr/lib/file",
    "/etc/magic",
)
PACKAGES = {
    "interpreter": ("torch", "triton", "numpy", "ascend_kernel_gym"),
    "cuda": ("torch", "triton", "numpy", "ascend_kernel_gym"),
    "npu": ("torch", "triton", "numpy", "ascend_kernel_gym", "torch_npu", "triton_ascend"),
}


def _package_dirs(names: Iterable[str]) -> list[str]:
    """Directories of installed packages, found without importing them (editable installs too)."""
    dirs = []
    for name in names:
        module = sys.modules.get(name)
        if module is not None and module.__spec__ is None:
            # a package module made by hand (the zygote's bootstrap makes a bare ``ascend_kernel_gym``)
            path = getattr(module, "__path__", None)
            origin = getattr(module, "__file__", None)
            dirs.extend(str(p) for p in path or ([os.path.dirname(origin)] if origin else []))
            continue
        try:
            spec = module.__spec__ if module is not None else importlib.util.find_spec(name)
        except (ImportError, ValueError):
            spec = None
        if spec is None:
            continue
        if spec.submodule_search_locations:
            dirs.extend(str(p) for p in spec.submodule_search_locations)
        elif spec.origin and os.path.isabs(spec.origin):
            dirs.append(os.path.dirname(spec.origin))
    return dirs


def _python_dirs(with_include: bool) -> list[str]:
    """The interpreter's library directories and the ``sys.path`` entries that are library places.

    Other ``sys.path`` entries (the working directory, a script's directory, a project root) are
    left out: they may be anything, a home directory included.
    """
    keys = ["stdlib", "platstdlib", "purelib", "platlib"] + (["include", "platinclude"] if with_include else [])
    dirs = [sysconfig.get_paths().get(key, "") for key in keys]
    library = [d for d in dirs if d]
    for entry in sys.path:
        if not entry or not os.path.isabs(entry):
            continue
        if (
            os.path.isfile(entry)
            or os.path.basename(entry) in ("site-packages", "dist-packages", "lib-dynload")
            or any(entry == d or entry.startswith(d.rstrip("/") + "/") for d in library)
        ):
            dirs.append(entry)
    if with_include:
        dirs.append(str(sysconfig.get_config_var("LIBDIR") or ""))
    return [d for d in dirs if d]


def _which_all(names: Iterable[str]) -> list[str]:
    """Each program found on PATH, with every link on the way to the real file."""
    found = []
    for name in names:
        path = shutil.which(name) if name else None
        if path is None:
            continue
        hops = 0
        while os.path.islink(path) and hops < 10:
            found.append(path)
            path = os.path.join(os.path.dirname(path), os.readlink(path))
            hops += 1
        found.append(os.path.realpath(path))
    return found


def _toolchain(backend: str, package_dirs: list[str]) -> list[str]:
    """Executables a device backend's compiler spawns: ptxas & co, ``cc`` for launchers, ``ldconfig``."""
    compilers = _which_all([os.environ.get("CC", ""), "cc", "gcc", "clang"])  # Triton's own search order
    # ``file``: platform.architecture() runs it, and Triton's launcher cache key depends on the answer.
    paths = compilers + _which_all(("as", "ld", "ld.bfd", "ld.gold", "ldconfig", "file"))
    paths += ["/sbin/ldconfig", "/usr/lib/gcc", "/usr/libexec/gcc"]
    for compiler in compilers:  # a compiler installed under its own prefix (/opt/gcc) runs its parts from there
        prefix = os.path.dirname(os.path.dirname(os.path.realpath(compiler)))
        if prefix not in ("/", "/usr", "/usr/local"):
            paths.append(prefix)
    paths += [os.path.realpath(p) for p in glob.glob("/lib64/ld-linux*.so*") + glob.glob("/lib/ld-linux*.so*")]
    if backend == "cuda":
        paths += [os.path.join(d, "backends", "nvidia", "bin") for d in package_dirs if d.endswith("triton")]
        cuda_home = os.environ.get("CUDA_HOME") or os.environ.get("CUDA_PATH") or "/usr/local/cuda"
        paths.append(os.path.join(cuda_home, "bin"))
        paths += [os.environ[k] for k in ("TRITON_PTXAS_PATH", "TRITON_CUOBJDUMP_PATH") if os.environ.get(k)]
    else:
        home = os.environ.get("ASCEND_HOME_PATH") or os.environ.get("ASCEND_TOOLKIT_HOME") or "/usr/local/Ascend"
        paths.append(home)
    return paths + _script_interpreters(paths)


def _script_interpreters(paths: Iterable[str]) -> list[str]:
    """The interpreters of the programs that are scripts (``/opt/gcc/bin/gcc`` may be ``#!/bin/sh``)."""
    found: list[str] = []
    for path in paths:
        try:
            with open(path, "rb") as handle:
                head = handle.read(256)
        except OSError:
            continue  # a directory, or missing
        if not head.startswith(b"#!"):
            continue
        words = head[2:].split(b"\n", 1)[0].decode(errors="replace").split()
        if not words:
            continue
        interpreter = words[0]
        if os.path.basename(interpreter) == "env" and len(words) > 1:
            found += _which_all([interpreter, words[1]])
        else:
            found += _which_all([interpreter])
    return found


def _loader_dirs() -> list[str]:
    """Directories the dynamic loader searches besides the system's: ``LD_LIBRARY_PATH`` and
    ``/etc/ld.so.conf.d`` (a GPU driver's ``libcuda`` often lives there, e.g. ``/usr/local/nvidia``)."""
    dirs = [d for d in os.environ.get("LD_LIBRARY_PATH", "").split(":") if os.path.isabs(d)]
    for conf in sorted(glob.glob("/etc/ld.so.conf.d/*.conf")):
        try:
            with open(conf) as handle:
                lines = handle.read().splitlines()
        except OSError:
            continue
        dirs += [line.strip() for line in lines if line.strip().startswith("/")]
    return dirs


@functools.lru_cache(maxsize=8)
def default_paths(backend: str) -> tuple[tuple[str, ...], tuple[str, ...], tuple[str, ...], tuple[str, ...]]:
    """(read paths, exec paths, device nodes, hidden paths) of ``backend``'s default policy."""
    device = backend != "interpreter"
    packages = _package_dirs(PACKAGES[backend])
    read = [*_python_dirs(device), *packages, *SYSTEM_READ, *_loader_dirs()]
    exec_paths: list[str] = []
    devices = list(BASE_DEVICES)
    if device:
        read += [*DEVICE_READ, sys.executable, os.path.realpath(sys.executable)]
        exec_paths = _toolchain(backend, packages)
        devices += CUDA_DEVICES if backend == "cuda" else NPU_DEVICES
    if backend == "cuda":
        read += [os.environ.get("CUDA_HOME", ""), os.environ.get("CUDA_PATH", ""), "/usr/local/nvidia"]
        read += ["/usr/share/nvidia", "/etc/nvidia"]  # the driver's application profiles (optional)
    if backend == "npu":
        home = os.environ.get("ASCEND_HOME_PATH") or os.environ.get("ASCEND_TOOLKIT_HOME") or ""
        read += [home, "/usr/local/Ascend", "/usr/local/dcmi", "/etc/ascend_install.info"]
    hidden = [
        path
        for d in packages
        if os.path.basename(d) == "ascend_kernel_gym"
        for path in glob.glob(os.path.join(d, "tasks", "suites", "*", "solutions"))
    ]
    clean = lambda items: tuple(dict.fromkeys(os.path.abspath(p) for p in items if p))
    return clean(read), clean(exec_paths), clean(devices), clean(hidden)
