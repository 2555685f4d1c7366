"""Run each sandbox-guard scenario in a forked child and print a JSON verdict per scenario.

Used by test_guard.py (in a subprocess, so the audit hooks never touch the test process).
A scenario's code runs as the candidate (compiled with the candidate's file name); harness
modules it needs are injected as globals, as if it had smuggled them in.
"""

from __future__ import annotations

import _posixsubprocess
import builtins
import collections
import dataclasses
import functools
import gc
import importlib
import json
import os
import socket
import subprocess
import sys
import tempfile
import threading
import types

from ascend_kernel_gym.evaluation.guard import SandboxGuard

SCENARIOS = {
    "write_outside": "open('/tmp/akg_guard_probe_{pid}', 'w').write('x')",
    "append_outside": "open('/tmp/akg_guard_probe_{pid}', 'a')",
    "write_inside": "open(SANDBOX + '/ok.txt', 'w').write('x')",
    "read_outside": "open('/etc/hostname').read() if os.path.exists('/etc/hostname') else None",
    "socket": "socket.socket()",
    "subprocess": "subprocess.run(['true'])",
    "os_system": "os.system('true')",
    "fork": "os.fork()",
    "fork_exec": "POSIXSUBPROCESS.fork_exec()",  # starts a program without an audit event
    "kill_parent": "os.kill(os.getppid(), 0)",
    "rename_outside": "os.rename(SANDBOX + '/a', '/tmp/akg_guard_moved_{pid}')",
    "mkdir_inside": "os.mkdir(SANDBOX + '/sub')",
    "thread": "threading.Thread(target=print).start()",
    "import_allowed": "import math",
    "import_forbidden": "import json",
    "ctypes": "import ctypes",
    "harness_thread": None,  # the harness itself (not the candidate) starts a thread: allowed
    "symlink_inside": "os.symlink('a', SANDBOX + '/b')",
    "symlink_to_outside": "os.symlink('/etc/hostname', SANDBOX + '/out')",  # the zygote must never follow it
    "symlink_relative_out": "os.symlink('../../../etc/hostname', SANDBOX + '/out')",
    # functools reads the attribute by a name given as data: no candidate frame at the read itself
    "frame_through_update_wrapper": (
        "class Sink:\n"
        "    def __setattr__(self, name, value): Sink.got = value\n"
        "def gen():\n    yield 1\n"
        "FUNCTOOLS.update_wrapper(Sink(), gen(), assigned=('gi_' + 'frame',), updated=())"
    ),
    # the bookkeeping helpers still may: @dataclass reads __code__ (inspect.signature), namedtuple a frame
    "dataclass_and_namedtuple": (
        "@DATACLASSES.dataclass\nclass C:\n    x: int = 1\nC()\nCOLLECTIONS.namedtuple('P', 'a b')(1, 2)"
    ),
    # a library handed gc.get_objects (torch's tree_map did it) reads the heap for the candidate
    "heap_through_library": "LIBRARY.call(GC.get_objects)",
    # an import the candidate has importlib make for it is its own import (of a module not loaded yet)
    "import_through_importlib": "IMPORTLIB.import_module('colorsys')",
    # the replaced functions' closures hold nothing that switches the guard off
    "guard_off_through_closures": (
        "for f in (BUILTINS.__import__, THREADING._start_new_thread, POSIXSUBPROCESS.fork_exec):\n"
        "    for cell in f.__closure__ or ():\n"
        "        value = cell.cell_contents\n"
        "        for name in ('active', '_busy', 'candidate_file'):\n"
        "            try:\n"
        "                setattr(value, name, name == '_busy')\n"
        "            except AttributeError:\n"
        "                pass  # the configuration is a named tuple\n"
        "socket.socket()"
    ),
}
#: On device backends Triton's own code starts compilers (ptxas, cc) through subprocess, which
#: spawns with os.posix_spawn; the same call made by the candidate stays refused.
DEVICE_SCENARIOS = {
    "device_library_compiler": "LIBRARY.build()",
    "device_candidate_subprocess": "subprocess.run(['true'])",
}
LIBRARY_SOURCE = (
    "import os\nimport subprocess\n\n"
    "def build():\n"
    "    subprocess.run(['true'], check=True)\n"
    # what subprocess does on Python >= 3.12 when it can: the os.posix_spawn audit event
    "    os.waitpid(os.posix_spawnp('true', ['true'], dict(os.environ)), 0)\n"
    "\n"
    "def call(fn):\n"
    "    return fn()\n"
)


def _fake_library() -> tuple[str, object]:
    """A stand-in for Triton's package: a module outside the stdlib that starts a compiler."""
    if "fake_compiler" not in sys.modules:
        library_dir = tempfile.mkdtemp(prefix="akg-guard-lib-")
        with open(os.path.join(library_dir, "fake_compiler.py"), "w") as handle:
            handle.write(LIBRARY_SOURCE)
        sys.path.insert(0, library_dir)
        import fake_compiler  # noqa: F401

        sys.path.remove(library_dir)
    module = sys.modules["fake_compiler"]
    return os.path.dirname(module.__file__), module


def run(name: str, code: str | None, backend: str = "interpreter") -> str:
    sandbox = tempfile.mkdtemp(prefix="akg-guard-")
    library_dir, fake_compiler = _fake_library()
    open(os.path.join(sandbox, "a"), "w").close()
    candidate = os.path.join(sandbox, "kernel.py")
    read_fd, write_fd = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(read_fd)

        def refuse(message: str) -> None:
            os.write(write_fd, ("refused: " + message).encode())
            os._exit(3)

        guard = SandboxGuard(sandbox, candidate, backend, refuse, library_dirs=(library_dir,))
        guard.install()
        if code is None:
            worker = threading.Thread(target=lambda: None)
            worker.start()
            worker.join()
        else:
            namespace = {
                "os": os,
                "socket": socket,
                "subprocess": subprocess,
                "threading": threading,
                "SANDBOX": sandbox,
                "LIBRARY": fake_compiler,
                "POSIXSUBPROCESS": _posixsubprocess,
                "BUILTINS": builtins,
                "IMPORTLIB": importlib,
                "GC": gc,
                "THREADING": threading,
                "FUNCTOOLS": functools,
                "DATACLASSES": dataclasses,
                "COLLECTIONS": collections,
                "__name__": "akg_candidate",
            }
            sys.modules["akg_candidate"] = types.ModuleType("akg_candidate")  # dataclasses looks its module up
            exec(compile(code.format(pid=os.getpid()), candidate, "exec"), namespace)
        os.write(write_fd, b"allowed")
        os._exit(0)
    os.close(write_fd)
    _, status = os.waitpid(pid, 0)
    message = os.read(read_fd, 4096).decode()
    os.close(read_fd)
    return message or f"no message (status {status})"


if __name__ == "__main__":
    verdicts = {name: run(name, code) for name, code in SCENARIOS.items()}
    verdicts.update({name: run(name, code, backend="cuda") for name, code in DEVICE_SCENARIOS.items()})
    print(json.dumps(verdicts))
    sys.exit(0)
