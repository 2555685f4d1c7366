"""``akg doctor``'s OS sandbox section (tasks/cli.py): which evaluator sandbox layers work here."""

from __future__ import annotations

import json

from ascend_kernel_gym.cli import main as akg
from ascend_kernel_gym.evaluation import os_sandbox
from ascend_kernel_gym.evaluation.os_sandbox import LAYER_DISABLED, LAYERS, SandboxReport


def test_doctor_reports_every_sandbox_layer_as_the_probe_finds_it(capsys, monkeypatch) -> None:
    monkeypatch.delenv("AKG_OS_SANDBOX", raising=False)
    assert akg(["doctor", "--json"]) == 0
    report = json.loads(capsys.readouterr().out)["os_sandbox"]
    assert report["enabled"] is True and "AKG_OS_SANDBOX=0" in report["switch"]
    interpreter = report["backends"]["interpreter"]  # always probed; devices only where available
    assert list(interpreter["layers"]) == list(LAYERS)
    assert all(v.startswith(("active", "off: ")) for v in interpreter["layers"].values())
    probe = os_sandbox.probe_os_sandbox("interpreter")
    assert interpreter["layers"] == probe.layers and interpreter["summary"] == probe.summary()
    assert interpreter["missing"] == probe.missing()
    assert set(report["backends"]) <= {"interpreter", "cuda", "npu"}


def test_doctor_names_the_missing_layers_and_the_switch(capsys, monkeypatch) -> None:
    layers = {name: "active" for name in LAYERS}
    layers["landlock"] = "off: landlock_create_ruleset failed: ENOSYS (Function not implemented)"
    layers["pid_ns"] = LAYER_DISABLED
    monkeypatch.setattr(os_sandbox, "probe_os_sandbox", lambda backend: SandboxReport(layers=dict(layers)))
    monkeypatch.setenv("AKG_OS_SANDBOX", "0")
    assert akg(["doctor", "--json"]) == 0
    report = json.loads(capsys.readouterr().out)["os_sandbox"]
    assert report["enabled"] is False
    interpreter = report["backends"]["interpreter"]
    assert interpreter["missing"] == {"landlock": layers["landlock"]}  # pid_ns is off by design, not missing
    assert "landlock (landlock_create_ruleset failed" in interpreter["summary"].split("; off: ", 1)[1]
    assert akg(["doctor"]) == 0
    table = capsys.readouterr().out
    assert "evaluator OS sandbox: off" in table and "AKG_OS_SANDBOX=0" in table
    assert "landlock" in table and "ENOSYS" in table and "seccomp" in table


def test_doctor_says_where_each_backends_verdict_is_decided(capsys, monkeypatch) -> None:
    monkeypatch.delenv("AKG_JUDGE", raising=False)
    assert akg(["doctor", "--json"]) == 0
    judges = json.loads(capsys.readouterr().out)["judge"]
    assert judges["interpreter"]["mode"] == "zygote" and not judges["interpreter"]["forced"]
    assert judges.get("cuda", {"mode": "reference"})["mode"] == "reference"  # where cuda is available
    assert judges.get("npu", {"mode": "reference"})["mode"] == "reference"
    monkeypatch.setenv("AKG_JUDGE", "child")
    assert akg(["doctor"]) == 0
    text = capsys.readouterr().out
    assert "verdict on interpreter" in text and "forge its verdict" in text and "(AKG_JUDGE)" in text
    monkeypatch.setenv("AKG_JUDGE", "bogus")
    assert akg(["doctor", "--json"]) == 0
    assert "AKG_JUDGE must be one of" in json.loads(capsys.readouterr().out)["judge"]["error"]
