"""The runtime sandbox guard (evaluation/guard.py): each scenario of tests/support/guard_scenarios.py runs as
the candidate in a forked child of a separate process (the audit hooks never touch the test process)."""

from __future__ import annotations

import glob
import json
import os
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).parent
ROOT = HERE.parents[1]


def test_guard_policy() -> None:
    proc = subprocess.run(
        [sys.executable, str(HERE.parent / "support" / "guard_scenarios.py")],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=ROOT,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    verdicts = json.loads(proc.stdout.strip().splitlines()[-1])
    allowed = {"write_inside", "read_outside", "mkdir_inside", "import_allowed", "harness_thread"}
    allowed |= {"symlink_inside", "dataclass_and_namedtuple"}
    allowed.add("device_library_compiler")  # Triton's own compiler calls on cuda/npu
    for name, verdict in verdicts.items():
        if name in allowed:
            assert verdict == "allowed", f"{name}: {verdict}"
        else:
            assert verdict.startswith("refused"), f"{name} was not refused: {verdict}"
    assert "network" in verdicts["socket"]
    assert "subprocess" in verdicts["subprocess"]
    assert "fork_exec" in verdicts["fork_exec"]
    assert "subprocess" in verdicts["device_candidate_subprocess"]
    assert "thread" in verdicts["thread"]
    assert "json" in verdicts["import_forbidden"]
    assert "link to a file outside" in verdicts["symlink_to_outside"]
    assert "link to a file outside" in verdicts["symlink_relative_out"]
    assert "gi_frame" in verdicts["frame_through_update_wrapper"]
    assert "network" in verdicts["guard_off_through_closures"]
    assert "gc.get_objects" in verdicts["heap_through_library"]
    assert not glob.glob("/tmp/akg_guard_probe_*") and not glob.glob("/tmp/akg_guard_moved_*")
