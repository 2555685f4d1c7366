"""The dedicated Python environment that holds triton-ascend (``akg ascend setup``).

triton-ascend replaces the ``triton`` package, so it cannot live next to the ``triton`` the
evaluator runs kernels with: it gets a virtual environment of its own in the package's cache
directory (``$AKG_CACHE_DIR`` or ``~/.cache/ascend_kernel_gym``, then ``triton-ascend-<version>``;
``AKG_ASCEND_ENV`` names another place). Its wheels exist for CPython 3.10 and 3.11 only, and it
imports ``pybind11`` without declaring it, so both are installed. A manifest written last
(:data:`MANIFEST`) marks a finished environment; without it the directory is an interrupted set-up
and is made again.

Imports neither torch nor triton; the environment is used only through its own interpreter.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import shutil
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

TRITON_ASCEND_VERSION = "3.2.0"
#: what ``pip install`` gets: triton-ascend imports pybind11 without declaring it
REQUIREMENTS = (f"triton-ascend=={TRITON_ASCEND_VERSION}", "pybind11")
SUPPORTED_PYTHONS = ((3, 11), (3, 10))
#: environment variable naming the environment's directory (default: in the cache directory)
ENV_DIR_VAR = "AKG_ASCEND_ENV"
#: written last by :func:`setup_env`; its presence marks a finished environment
MANIFEST = "akg-ascend-env.json"
#: the adapter binary inside triton-ascend, relative to the ``triton`` package
ADAPTER = ("backends", "ascend", "triton-adapter-opt")
INSTALL_PYTHON_HINT = (
    "install CPython 3.11 or 3.10 with its venv module (Debian / Ubuntu: `sudo apt-get install python3.11 "
    "python3.11-venv`; or `uv python install 3.11`; or pyenv), then run `akg ascend setup` again "
    "(or `akg ascend setup --python /path/to/python3.11`)"
)

#: run by each candidate interpreter: its version and whether it has the ``venv`` module
_PYTHON_PROBE = "import json, sys, importlib.util as u; print(json.dumps({'version': list(sys.version_info[:2]), "
_PYTHON_PROBE += "'venv': u.find_spec('venv') is not None}))"
#: run by the environment's interpreter once triton-ascend is installed: the paths a sandbox must allow
_ENV_PROBE = """
import importlib.metadata, json, os, sys, sysconfig
import triton
from triton.backends.ascend import compiler  # noqa: F401 - the part the lowering needs
paths = sysconfig.get_paths()
triton_dir = os.path.dirname(triton.__file__)
print(json.dumps({
    "python_version": ".".join(map(str, sys.version_info[:3])),
    "triton_ascend": importlib.metadata.version("triton-ascend"),
    "triton_dir": triton_dir,
    "adapter": os.path.join(triton_dir, "backends", "ascend", "triton-adapter-opt"),
    "base_prefix": sys.base_prefix,
    "stdlib": [paths.get("stdlib", ""), paths.get("platstdlib", "")],
    "site": [paths.get("purelib", ""), paths.get("platlib", "")],
    "libdir": sysconfig.get_config_var("LIBDIR") or "",
}))
"""

Progress = Callable[[str], None]


def cache_root() -> Path:
    """The package's cache directory: ``$AKG_CACHE_DIR``, else ``~/.cache/ascend_kernel_gym``."""
    root = os.environ.get("AKG_CACHE_DIR")
    return Path(root).expanduser() if root else Path.home() / ".cache" / "ascend_kernel_gym"


def env_dir() -> Path:
    """Where the environment lives: ``$AKG_ASCEND_ENV``, else ``<cache>/triton-ascend-<version>``."""
    named = os.environ.get(ENV_DIR_VAR)
    return Path(named).expanduser() if named else cache_root() / f"triton-ascend-{TRITON_ASCEND_VERSION}"


@dataclass(frozen=True)
class LowerEnv:
    """A finished triton-ascend environment, as its manifest describes it.

    Attributes:
        path: the environment's directory.
        python: its interpreter (``bin/python``).
        triton_ascend: the installed triton-ascend version.
        adapter: the ``triton-adapter-opt`` binary.
        read_paths: what a process of this environment reads (the environment, the base
            interpreter's standard library and shared library directory).
        exec_paths: what it executes (the interpreter, the adapter).
        manifest: the whole manifest.
    """

    path: Path
    python: Path
    triton_ascend: str
    adapter: Path
    read_paths: tuple[str, ...]
    exec_paths: tuple[str, ...]
    manifest: dict[str, Any] = field(default_factory=dict)


def _python_of(path: Path) -> Path:
    return path / "bin" / "python"


def load_env(path: Path | None = None) -> LowerEnv | None:
    """The finished environment at ``path`` (default :func:`env_dir`), or ``None`` (missing, unfinished
    or broken: its interpreter or adapter is gone). Runs nothing."""
    path = Path(path) if path is not None else env_dir()
    try:
        manifest = json.loads((path / MANIFEST).read_text())
    except (OSError, ValueError):
        return None
    python = _python_of(path)
    adapter = Path(str(manifest.get("adapter", "")))
    if not (python.exists() and os.access(adapter, os.X_OK)) or manifest.get("triton_ascend") != TRITON_ASCEND_VERSION:
        return None
    real_python = os.path.realpath(python)
    base = str(manifest.get("base_prefix") or "")
    reads = [str(path), *manifest.get("stdlib", []), *manifest.get("site", []), str(manifest.get("libdir") or "")]
    if base and os.path.realpath(base) not in ("/", "/usr", "/usr/local"):
        reads.append(base)  # a pyenv / uv interpreter: its prefix holds the standard library
    reads.append(real_python)
    exec_paths = (str(python), real_python, str(adapter))
    clean = tuple(dict.fromkeys(p for p in reads if p))
    return LowerEnv(path, python, str(manifest["triton_ascend"]), adapter, clean, exec_paths, manifest)


def env_status() -> dict[str, Any]:
    """What ``akg doctor`` shows: whether the environment is ready, where, its size, and how to get it."""
    path = env_dir()
    env = load_env(path)
    if env is not None:
        return {
            "ready": True,
            "path": str(path),
            "python": str(env.manifest.get("python_version", "")),
            "triton_ascend": env.triton_ascend,
            "size_mb": env.manifest.get("size_mb"),
            "install_seconds": env.manifest.get("install_seconds"),
            "hint": "",
        }
    why = "not set up" if not path.exists() else "unfinished or broken (run the set-up again)"
    return {
        "ready": False,
        "path": str(path),
        "why": why,
        "hint": "`akg ascend setup` (needs CPython 3.10 or 3.11 and PyPI access, about 200 MB)",
    }


# --- finding an interpreter ---------------------------------------------------------------------
def _probe_python(executable: str) -> dict[str, Any] | None:
    try:
        out = subprocess.run(
            [executable, "-I", "-c", _PYTHON_PROBE], capture_output=True, text=True, timeout=30, check=True
        ).stdout
        info = json.loads(out.strip().splitlines()[-1])
    except (OSError, subprocess.SubprocessError, ValueError, IndexError):
        return None
    return info if tuple(info.get("version", ())) in SUPPORTED_PYTHONS and info.get("venv") else None


def _candidates() -> Iterator[str]:
    yield sys.executable
    for major, minor in SUPPORTED_PYTHONS:
        found = shutil.which(f"python{major}.{minor}")
        if found:
            yield found
    uv = shutil.which("uv")
    if uv:
        for major, minor in SUPPORTED_PYTHONS:
            with contextlib.suppress(OSError, subprocess.SubprocessError):
                out = subprocess.run(
                    [uv, "python", "find", f"{major}.{minor}"], capture_output=True, text=True, timeout=30
                ).stdout.strip()
                if out:
                    yield out
    pyenv_root = Path(os.environ.get("PYENV_ROOT", Path.home() / ".pyenv"))
    for major, minor in SUPPORTED_PYTHONS:
        for version_dir in sorted(pyenv_root.glob(f"versions/{major}.{minor}.*"), reverse=True):
            yield str(version_dir / "bin" / "python")


def find_python(explicit: str | None = None) -> tuple[str, dict[str, Any]]:
    """A CPython 3.10 / 3.11 interpreter: ``explicit`` when given, else this one, ``python3.11`` /
    ``python3.10`` on ``PATH``, ``uv python find``, pyenv's versions.

    Raises:
        RuntimeError: none found (the message says exactly what to install).
    """
    if explicit:
        info = _probe_python(explicit)
        if info is None:
            raise RuntimeError(f"{explicit} is not a working CPython 3.10 or 3.11; {INSTALL_PYTHON_HINT}")
        return explicit, info
    seen: set[str] = set()
    for candidate in _candidates():
        real = os.path.realpath(candidate)
        if real in seen or not os.path.exists(real):
            continue
        seen.add(real)
        info = _probe_python(candidate)
        if info is not None:
            return candidate, info
    raise RuntimeError(
        f"no CPython 3.10 or 3.11 found (triton-ascend {TRITON_ASCEND_VERSION} ships wheels for those two only); "
        + INSTALL_PYTHON_HINT
    )


# --- making the environment ---------------------------------------------------------------------
@contextlib.contextmanager
def _locked(path: Path) -> Iterator[None]:
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path.with_name(path.name + ".lock"), "w") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def _stream(command: list[str], progress: Progress, prefix: str) -> None:
    """Run ``command``, passing each line of its output to ``progress``; raise with the tail on failure."""
    tail: list[str] = []
    proc = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, bufsize=1)
    assert proc.stdout is not None
    for line in proc.stdout:
        line = line.rstrip()
        if line:
            tail = [*tail[-19:], line]
            progress(f"{prefix}{line}")
    if proc.wait() != 0:
        raise RuntimeError(f"`{' '.join(command[:4])} ...` failed (exit {proc.returncode}):\n" + "\n".join(tail))


def _make_venv(executable: str, path: Path) -> list[str]:
    """Make the virtual environment; returns the pip command that installs into it.

    An interpreter whose ``ensurepip`` is missing (Debian's python3.x without python3.x-venv) gets
    an environment without pip, filled by this process's pip (``pip --python``, pip >= 22.3).
    """
    made = subprocess.run([executable, "-m", "venv", str(path)], capture_output=True, text=True)
    if made.returncode == 0:
        return [str(_python_of(path)), "-m", "pip"]
    shutil.rmtree(path, ignore_errors=True)
    bare = subprocess.run([executable, "-m", "venv", "--without-pip", str(path)], capture_output=True, text=True)
    if bare.returncode != 0:
        raise RuntimeError(
            f"{executable} -m venv failed: {(made.stderr or bare.stderr).strip()[-800:]}; {INSTALL_PYTHON_HINT}"
        )
    return [sys.executable, "-m", "pip", "--python", str(_python_of(path))]


def _size_bytes(path: Path) -> int:
    total = 0
    for root, _dirs, files in os.walk(path):
        for name in files:
            with contextlib.suppress(OSError):
                total += os.lstat(os.path.join(root, name)).st_size
    return total


def setup_env(
    progress: Progress = print, python: str | None = None, force: bool = False, path: Path | None = None
) -> LowerEnv:
    """Create the environment (or reuse a finished one) and return it.

    Steps: pick an interpreter (:func:`find_python`), make a virtual environment, ``pip install``
    :data:`REQUIREMENTS` (pip's own lines are passed to ``progress``), check that triton-ascend
    imports and its adapter is executable, write the manifest. Safe to run again (a finished
    environment is reused) and from two processes at once (a file lock).

    Args:
        progress: called with one line of text per step and per line of pip's output.
        python: the interpreter to build from (default: found by :func:`find_python`).
        force: remove a finished environment and make it again.
        path: where (default :func:`env_dir`).

    Raises:
        RuntimeError: no usable interpreter, or a step failed (the message has the step's output).
    """
    path = Path(path) if path is not None else env_dir()
    with _locked(path):
        existing = load_env(path)
        if existing is not None and not force:
            progress(f"triton-ascend {existing.triton_ascend} environment already set up at {path} (reused)")
            return existing
        started = time.perf_counter()
        executable, info = find_python(python)
        version = ".".join(map(str, info["version"]))
        progress(f"[1/4] Python {version}: {executable}")
        if path.exists():
            progress(f"      removing the {'old' if existing else 'unfinished'} environment at {path}")
            shutil.rmtree(path)
        progress(f"[2/4] creating a virtual environment at {path}")
        pip_command = _make_venv(executable, path)
        progress(f"[3/4] pip install {' '.join(REQUIREMENTS)} (about 55 MB to download)")
        install_started = time.perf_counter()
        _stream(
            [
                *pip_command,
                "install",
                "--disable-pip-version-check",
                "--no-input",
                "--progress-bar",
                "off",
                *REQUIREMENTS,
            ],
            progress,
            "      pip: ",
        )
        install_seconds = time.perf_counter() - install_started
        progress("[4/4] checking that triton-ascend imports and its adapter runs")
        try:
            out = subprocess.run(
                [str(_python_of(path)), "-I", "-c", _ENV_PROBE], capture_output=True, text=True, timeout=300, check=True
            ).stdout
            probe = json.loads(out.strip().splitlines()[-1])
        except (subprocess.SubprocessError, ValueError, IndexError) as exc:
            detail = getattr(exc, "stderr", "") or str(exc)
            raise RuntimeError(f"triton-ascend does not import in the new environment: {str(detail)[-1500:]}") from None
        if not os.access(probe["adapter"], os.X_OK):
            raise RuntimeError(f"triton-ascend's adapter is missing or not executable: {probe['adapter']}")
        size = _size_bytes(path)
        manifest = {
            **probe,
            "requirements": list(REQUIREMENTS),
            "created_from": executable,
            "created": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
            "install_seconds": round(install_seconds, 1),
            "setup_seconds": round(time.perf_counter() - started, 1),
            "size_mb": round(size / 1e6, 1),
        }
        tmp = path / (MANIFEST + ".tmp")
        tmp.write_text(json.dumps(manifest, indent=2))
        tmp.replace(path / MANIFEST)
        env = load_env(path)
        if env is None:  # pragma: no cover - the manifest was just checked
            raise RuntimeError(f"the environment at {path} is not usable after set-up")
        progress(
            f"done: triton-ascend {env.triton_ascend} ready in {manifest['setup_seconds']} s "
            f"({manifest['size_mb']} MB at {path})"
        )
        return env
