"""How busy the host's CPUs and the GPU were during a bench run, inside and outside given spans.

:class:`LoadSampler` samples, every ``period_s`` seconds from a process of its own: the share of
the host's CPU time that was busy since the last sample (``/proc/stat``), the processes ready to
run (``procs_running``) and, where NVML loads, the GPU's utilisation (the share of the last
sample period in which a kernel ran) and its used memory. :func:`load_summary` averages the
samples over a window, split into those inside a list of spans (the timed calls' leases, say)
and those outside. Linux only for the CPU part; no torch, no package import.
"""

from __future__ import annotations

import ctypes
import json
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from typing import Any


def _proc_stat() -> tuple[tuple[int, int] | None, int | None]:
    """From one read of ``/proc/stat``: (busy, total) jiffies of all CPUs since boot, and the
    processes ready to run; None for what cannot be read (off Linux)."""
    try:
        with open("/proc/stat") as f:
            lines = f.read().splitlines()
    except OSError:
        return None, None
    times, running = None, None
    for line in lines:
        fields = line.split()
        if fields and fields[0] == "cpu":
            values = [int(v) for v in fields[1:]]
            idle = values[3] + (values[4] if len(values) > 4 else 0)  # idle + iowait
            times = (sum(values) - idle, sum(values))
        elif fields and fields[0] == "procs_running":
            running = int(fields[1])
    return times, running


_TICK_S = 1.0 / (os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100)


def _cpu_by_process() -> dict[int, tuple[str, float]]:
    """Every process's name and CPU seconds so far (user + system), from ``/proc/<pid>/stat``."""
    out = {}
    try:
        pids = [int(p) for p in os.listdir("/proc") if p.isdigit()]
    except OSError:
        return out
    for pid in pids:
        try:
            with open(f"/proc/{pid}/stat") as f:
                text = f.read()
        except OSError:
            continue  # gone since the listing
        name = text[text.index("(") + 1 : text.rindex(")")]
        fields = text[text.rindex(")") + 2 :].split()
        out[pid] = (name, (int(fields[11]) + int(fields[12])) * _TICK_S)
    return out


class _Utilization(ctypes.Structure):
    _fields_ = [("gpu", ctypes.c_uint), ("memory", ctypes.c_uint)]


class _Memory(ctypes.Structure):
    _fields_ = [("total", ctypes.c_ulonglong), ("free", ctypes.c_ulonglong), ("used", ctypes.c_ulonglong)]


class _ProcessSample(ctypes.Structure):
    _fields_ = [
        ("pid", ctypes.c_uint),
        ("timeStamp", ctypes.c_ulonglong),
        ("smUtil", ctypes.c_uint),
        ("memUtil", ctypes.c_uint),
        ("encUtil", ctypes.c_uint),
        ("decUtil", ctypes.c_uint),
    ]


def _name_of(pid: int) -> str:
    try:
        with open(f"/proc/{pid}/comm") as f:
            return f.read().strip()
    except OSError:
        return "(exited)"


class _Gpu:
    """GPU ``index``'s utilisation and used memory through NVML (absent: every reading is None)."""

    def __init__(self, index: int = 0) -> None:
        self.lib: Any = None
        self.handle = ctypes.c_void_p()
        try:
            lib = ctypes.CDLL("libnvidia-ml.so.1")
        except OSError:
            return
        if lib.nvmlInit_v2() != 0 or lib.nvmlDeviceGetHandleByIndex_v2(ctypes.c_uint(index), ctypes.byref(self.handle)):
            return
        self.lib = lib

    def by_process(self, since_us: int, known: dict[int, str] | None = None) -> tuple[dict[str, float], int]:
        """Each process name's mean SM utilisation (percent) over NVML's samples newer than
        ``since_us`` (its clock), and the newest sample's time; ``({}, since_us)`` when none.
        ``known``: process names by pid already read (others are read from ``/proc``)."""
        if self.lib is None:
            return {}, since_us
        count = ctypes.c_uint(0)
        self.lib.nvmlDeviceGetProcessUtilization(self.handle, None, ctypes.byref(count), ctypes.c_ulonglong(since_us))
        if count.value == 0:
            return {}, since_us
        samples = (_ProcessSample * count.value)()
        status = self.lib.nvmlDeviceGetProcessUtilization(
            self.handle, samples, ctypes.byref(count), ctypes.c_ulonglong(since_us)
        )
        if status != 0:
            return {}, since_us
        taken = [samples[i] for i in range(count.value) if samples[i].timeStamp > since_us]
        if not taken:
            return {}, since_us
        stamps = {s.timeStamp for s in taken}
        names: dict[str, float] = {}
        for s in taken:
            name = (known or {}).get(s.pid) or _name_of(s.pid)
            names[name] = names.get(name, 0.0) + s.smUtil
        return {name: total / len(stamps) for name, total in names.items()}, max(stamps)

    def read(self) -> tuple[int | None, float | None]:
        if self.lib is None:
            return None, None
        util, memory = _Utilization(), _Memory()
        busy = util.gpu if self.lib.nvmlDeviceGetUtilizationRates(self.handle, ctypes.byref(util)) == 0 else None
        used = memory.used / 2**30 if self.lib.nvmlDeviceGetMemoryInfo(self.handle, ctypes.byref(memory)) == 0 else None
        return busy, used


class LoadSampler:
    """Samples the host's and GPU 0's load from a process of its own while open (a context manager).

    ``samples``: dicts with ``t`` (``time.perf_counter()`` at the sample's end: one clock for
    every process of the host), ``cpu`` (busy share of all CPUs over the period), ``running``
    (processes ready to run), ``gpu`` (NVML utilisation in percent), ``gpu_mem_gib`` and, with
    ``by_name``, ``cpu_s_by_name`` (CPU seconds each process name used in the period: the
    evaluator names its processes ``akg-zygote``, ``akg-candidate``, ``akg-reference``,
    ``akg-precompile``) and, where NVML reports it, ``gpu_s_by_name`` (the GPU seconds of each
    process name: its mean SM utilisation over NVML's samples in the period times the period);
    a reading that is not available is None. A process, not a thread: a
    thread reading ``/proc`` file by file waited for the GIL at every file while the caller's
    threads were busy, and took one sample where it should have taken six.
    """

    def __init__(self, period_s: float = 0.25, gpu_index: int = 0, by_name: bool = True) -> None:
        if period_s <= 0:
            raise ValueError(f"period_s must be positive, got {period_s}")
        self.period_s = period_s
        #: also sum each period's CPU and GPU seconds by process name (``cpu_s_by_name``, ``gpu_s_by_name``)
        self.by_name = by_name
        self.gpu_index = gpu_index
        self.samples: list[dict[str, Any]] = []
        self._proc: subprocess.Popen[str] | None = None
        self._reader: threading.Thread | None = None

    def __enter__(self) -> LoadSampler:
        argv = [sys.executable, __file__, str(self.period_s), str(self.gpu_index), "1" if self.by_name else "0"]
        self._proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stdin=subprocess.DEVNULL, text=True)
        assert self._proc.stdout is not None
        self._proc.stdout.readline()  # its first line says it is sampling: the window starts now
        self._reader = threading.Thread(target=self._read, name="load-sampler", daemon=True)
        self._reader.start()
        return self

    def _read(self) -> None:
        assert self._proc is not None and self._proc.stdout is not None
        for line in self._proc.stdout:
            try:
                self.samples.append(json.loads(line))
            except ValueError:
                continue  # a last line cut short when the sampler was stopped

    def __exit__(self, *exc: object) -> None:
        if self._proc is None or self._reader is None:
            return
        self._proc.terminate()
        self._proc.wait()
        self._reader.join()


def sample_forever(period_s: float, gpu_index: int, by_name: bool, write: Callable[[str], None]) -> None:
    """Write a sample (a JSON line, see :class:`LoadSampler`) every ``period_s`` seconds."""
    gpu = _Gpu(gpu_index)
    stamp = 0
    last, _ = _proc_stat()
    seen = _cpu_by_process() if by_name else {}
    next_at = time.perf_counter() + period_s
    write(json.dumps({"sampling": True}) + "\n")
    while True:
        time.sleep(max(0.0, next_at - time.perf_counter()))
        next_at += period_s
        now, running = _proc_stat()
        cpu = None
        if last is not None and now is not None and now[1] > last[1]:
            cpu = (now[0] - last[0]) / (now[1] - last[1])
        last = now
        busy, used = gpu.read()
        sample: dict[str, Any] = {
            "t": time.perf_counter(), "cpu": cpu, "running": running, "gpu": busy, "gpu_mem_gib": used,
        }  # fmt: skip
        if by_name:
            current = _cpu_by_process()
            names: dict[str, float] = {}
            for pid, (name, seconds) in current.items():
                before = seen.get(pid)
                # born since the last sample: all of its time is new (one renamed keeps its pid)
                spent = seconds - before[1] if before is not None else seconds
                if spent > 0:
                    names[name] = round(names.get(name, 0.0) + spent, 3)
            seen = current
            sample["cpu_s_by_name"] = names
            if gpu.lib is not None:
                shares, stamp = gpu.by_process(stamp, {pid: name for pid, (name, _) in current.items()})
                sample["gpu_s_by_name"] = {name: round(pct / 100 * period_s, 4) for name, pct in shares.items()}
        write(json.dumps(sample) + "\n")


def _mean(values: list[float]) -> float | None:
    return round(sum(values) / len(values), 3) if values else None


def load_summary(
    samples: list[dict[str, Any]], begin: float, end: float, spans: list[tuple[float, float]]
) -> dict[str, Any]:
    """Mean CPU busy share, processes ready to run and GPU utilisation (percent) of the samples
    taken in ``[begin, end]``: all of them, those inside one of ``spans`` (a sample counts as
    inside when its time falls in a span) and the rest; with how many samples each mean has and
    the CPU and GPU seconds of the eight busiest process names."""
    window = [s for s in samples if begin <= s["t"] <= end]
    inside = [s for s in window if any(a <= s["t"] <= b for a, b in spans)]
    outside = [s for s in window if not any(a <= s["t"] <= b for a, b in spans)]

    def by_name(part: list[dict[str, Any]], key: str) -> dict[str, float]:
        names: dict[str, float] = {}
        for s in part:
            for name, seconds in (s.get(key) or {}).items():
                names[name] = names.get(name, 0.0) + seconds
        top = sorted(names.items(), key=lambda kv: -kv[1])[:8]
        return {name: round(seconds, 1) for name, seconds in top}

    def means(part: list[dict[str, Any]]) -> dict[str, Any]:
        return {
            "samples": len(part),
            "cpu_s_by_name": by_name(part, "cpu_s_by_name"),
            "gpu_s_by_name": by_name(part, "gpu_s_by_name"),
            "cpu": _mean([s["cpu"] for s in part if s["cpu"] is not None]),
            "running": _mean([s["running"] for s in part if s["running"] is not None]),
            "gpu": _mean([s["gpu"] for s in part if s["gpu"] is not None]),
            "gpu_mem_gib": _mean([s["gpu_mem_gib"] for s in part if s["gpu_mem_gib"] is not None]),
        }

    return {"all": means(window), "in_spans": means(inside), "outside": means(outside)}


def _main(argv: list[str]) -> None:
    signal.signal(signal.SIGTERM, lambda *_: os._exit(0))

    def write(line: str) -> None:
        sys.stdout.write(line)
        sys.stdout.flush()

    sample_forever(float(argv[0]), int(argv[1]), argv[2] == "1", write)


if __name__ == "__main__":
    _main(sys.argv[1:])
