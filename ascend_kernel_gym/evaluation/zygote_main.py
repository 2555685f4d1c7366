"""The zygote process: its entry point and its loop over the calling process's messages.

:mod:`.pool` starts ``python -c BOOTSTRAP <root> <version>`` with a cleaned environment; the
process reads its config, warms up (:meth:`.zygote.Zygote.warm`), says it is ready and then
answers one job message after another with a result dict (:mod:`.wire` messages over its stdin /
stdout; ``None`` shuts it down). After each reply it lets go of the device's lease
(:meth:`.zygote.Zygote.end_job`) while the caller reads the reply.
"""

from __future__ import annotations

import os
import shutil
import signal
import sys

from ascend_kernel_gym.evaluation.child_stream import name_process
from ascend_kernel_gym.evaluation.wire import read_message, write_message
from ascend_kernel_gym.evaluation.zygote import Zygote


def main() -> None:
    """Zygote entry point (started by :mod:`.pool` with a clean environment)."""
    proto_in = os.dup(0)
    proto_out = os.dup(1)
    devnull = os.open(os.devnull, os.O_RDWR)
    os.dup2(devnull, 0)
    os.dup2(2, 1)  # stray prints from libraries go to stderr, not into the protocol
    os.close(devnull)
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the calling process decides when we stop
    name_process("akg-zygote")
    config = read_message(proto_in)
    if not isinstance(config, dict):
        return
    zygote = Zygote(config)
    zygote.proto_in = proto_in
    zygote.proto_out = proto_out
    try:
        info = zygote.warm()
        zygote.start_spare()
        write_message(proto_out, {"ready": True, "prefork": zygote.prefork, "root": zygote.root, **info})
        while True:
            message = read_message(proto_in)
            if message is None:
                break
            reply = zygote.run_job(message["job"], float(message["timeout"]), int(message.get("memory_mb", 0)))
            write_message(proto_out, reply)
            zygote.end_job()  # the caller reads the reply meanwhile
    finally:
        zygote.shutdown()
        shutil.rmtree(zygote.root, ignore_errors=True)


BOOTSTRAP = """
import os, sys, types
root = sys.argv[1]
sys.path.insert(0, root)
if "ascend_kernel_gym" not in sys.modules:
    # A bare package module: the evaluator needs neither gymnasium nor the environment registration.
    pkg = types.ModuleType("ascend_kernel_gym")
    pkg.__path__ = [os.path.join(root, "ascend_kernel_gym")]
    pkg.__version__ = sys.argv[2]
    sys.modules["ascend_kernel_gym"] = pkg
from ascend_kernel_gym.evaluation.zygote_main import main
main()
"""

if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
