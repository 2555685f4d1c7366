"""Run each sandbox-guard scenario in a forked child and print a JSON verdict per scenario.

Used by test_isolation.py (in a subprocess, so the audit hooks never touch the test process).
A scenario's code runs as the candidate (compiled with the candidate's file name); harness
modules it needs are injected as globals, as if it had smuggled them in.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import tempfile
import threading

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
    "kill_parent": "os.kill(os.getppid(), 0)",
    "rename_outside": "os.rename(SANDBOX + '/a', '/tmp/akg_guard_moved_{pid}')",
    "mkdir_inside": "os.mkdir(SANDBOX + '/sub')",
    "thread": "threading.Thread(target=print).start()",
    "import_allowed": "import math",
    "import_forbidden": "import json",
    "ctypes": "import ctypes",
    "harness_thread": None,  # the harness itself (not the candidate) starts a thread: allowed
}


def run(name: str, code: str | None) -> str:
    sandbox = tempfile.mkdtemp(prefix="akg-guard-")
    open(os.path.join(sandbox, "a"), "w").close()
    candidate = os.path.join(sandbox, "kernel.py")
    read_fd, write_fd = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(read_fd)

        def refuse(message: str) -> None:
            os.write(write_fd, ("refused: " + message).encode())
            os._exit(3)

        guard = SandboxGuard(sandbox, candidate, "interpreter", refuse, library_dirs=())
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
                "__name__": "akg_candidate",
            }
            exec(compile(code.format(pid=os.getpid()), candidate, "exec"), namespace)
        os.write(write_fd, b"allowed")
        os._exit(0)
    os.close(write_fd)
    _, status = os.waitpid(pid, 0)
    message = os.read(read_fd, 4096).decode()
    os.close(read_fd)
    return message or f"no message (status {status})"


if __name__ == "__main__":
    print(json.dumps({name: run(name, code) for name, code in SCENARIOS.items()}))
    sys.exit(0)
