"""Does CUDA IPC work between two sandboxed evaluation children (the trusted judge's transport)?

Forks an exporter and an importer from a process that has not touched CUDA, each entering the
cuda backend's OS sandbox (or not, with ``--no-sandbox``); the exporter fills tensors with known
values (a 256 MB float32 one, a strided bfloat16 view, a small tensor inside a larger caching
allocator block) and sends their :mod:`ascend_kernel_gym.evaluation.device_ipc` entries through a
pipe; the importer copies each one and checks every value, times the imports, and checks that a
view reaching past the allocation and a malformed handle are refused.

    python bench/gpu_ipc_probe.py --out $OUT/gpu_ipc_probe_h200.json
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import _bootstrap  # noqa: F401  (before the package: works without gymnasium)


def _values(kind: str):  # the expected contents, computed the same way on both sides
    import torch

    if kind == "big":
        return torch.arange(64 * 1024 * 1024, dtype=torch.float32, device="cuda") * 0.5
    if kind == "strided":
        return (torch.arange(512 * 1024, device="cuda", dtype=torch.float32) % 251).to(torch.bfloat16).view(512, 1024)
    return torch.arange(1000, dtype=torch.int32, device="cuda") * 3


def _enter(sandbox: bool, fds: tuple[int, ...]) -> dict:
    if not sandbox:
        return {}
    from ascend_kernel_gym.evaluation import os_sandbox

    scratch = tempfile.mkdtemp(prefix="akg-ipc-")
    return os_sandbox.enter_os_sandbox(os_sandbox.default_policy("cuda", scratch, keep_fds=fds)).to_dict()


def exporter(write_fd: int, done_fd: int, sandbox: bool) -> None:
    report = _enter(sandbox, (write_fd, done_fd, 1, 2))
    import torch

    from ascend_kernel_gym.evaluation.device_ipc import export_tensor

    big = _values("big")
    strided = _values("strided").t()  # a transposed view: strides (1, 1024)
    block = torch.zeros(1 << 20, dtype=torch.int32, device="cuda")
    small = block[4096 : 4096 + 1000]
    small.copy_(_values("small"))
    torch.cuda.synchronize()
    entries = {}
    for name, t in (("big", big), ("strided", strided), ("small", small)):
        entries[name] = {"ipc": export_tensor(t), "dtype": str(t.dtype), "shape": list(t.shape)}
    os.write(write_fd, json.dumps({"entries": entries, "sandbox": report.get("layers", {})}).encode() + b"\n")
    os.read(done_fd, 1)  # keep the memory alive until the importer is done
    os._exit(0)


def importer(read_fd: int, result_fd: int, sandbox: bool) -> None:
    out: dict = {}
    try:
        out["sandbox"] = _enter(sandbox, (read_fd, result_fd, 1, 2)).get("layers", {})
        import torch

        from ascend_kernel_gym.evaluation.device_ipc import IpcError, import_tensor

        data = b""
        while not data.endswith(b"\n"):
            data += os.read(read_fd, 1 << 16)
        sent = json.loads(data)
        dtypes = {"torch.float32": torch.float32, "torch.bfloat16": torch.bfloat16, "torch.int32": torch.int32}
        dev = torch.device("cuda")
        torch.zeros(1, device=dev)
        for name, entry in sent["entries"].items():
            t0 = time.perf_counter()
            got = import_tensor(entry["ipc"], dtypes[entry["dtype"]], entry["shape"], dev)
            took = time.perf_counter() - t0
            expected = _values(name).t() if name == "strided" else _values(name)
            out[name] = {
                "equal": bool(torch.equal(got, expected)),
                "ms": round(took * 1e3, 3),
                "bytes": got.numel() * got.element_size(),
            }
        bad = dict(sent["entries"]["small"]["ipc"])
        bad["offset"] = bad["offset"] + (1 << 30)
        try:
            import_tensor(bad, torch.int32, [1000], dev)
            out["outside_refused"] = False
        except IpcError as exc:
            out["outside_refused"] = str(exc)
        bad = dict(sent["entries"]["small"]["ipc"])
        bad["handle"] = "00" * 64
        try:
            import_tensor(bad, torch.int32, [1000], dev)
            out["garbage_refused"] = False
        except IpcError as exc:
            out["garbage_refused"] = str(exc)
    except BaseException as exc:
        out["error"] = f"{type(exc).__name__}: {exc}"
    os.write(result_fd, json.dumps(out).encode())
    os._exit(0)


def probe(sandbox: bool) -> dict:
    r1, w1 = os.pipe()
    r2, w2 = os.pipe()
    r3, w3 = os.pipe()
    a = os.fork()
    if a == 0:
        for fd in (r1, w2, r3, w3):
            os.close(fd)
        exporter(w1, r2, sandbox)
    b = os.fork()
    if b == 0:
        for fd in (w1, r2, w2, r3):
            os.close(fd)
        importer(r1, w3, sandbox)
    for fd in (w1, r1, r2, w3):
        os.close(fd)
    data = b""
    while chunk := os.read(r3, 1 << 16):
        data += chunk
    os.write(w2, b"x")
    os.waitpid(a, 0)
    os.waitpid(b, 0)
    return json.loads(data or b'{"error": "no answer"}')


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, required=True)
    args = parser.parse_args()
    results = {"sandboxed": probe(True)}
    args.out.write_text(json.dumps(results, indent=1))
    results["plain"] = probe(False)
    args.out.write_text(json.dumps(results, indent=1))
    print(json.dumps(results, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
