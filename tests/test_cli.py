"""The command line, in process: refusals name the flag at fault, `check --json` always prints JSON, and
`run --help` documents every option and the exit codes."""
from __future__ import annotations

import json
import re

import pytest

import harness.runner
from harness.cli import main
from tests.conftest import REPO

PROBLEM = str(REPO / "problems" / "scalar_gated_delta.yaml")


@pytest.fixture
def no_run(monkeypatch):
    """A refusal must come before any work: starting the run fails the test at once instead of running it."""
    def started(*args, **kwargs):
        raise AssertionError("the run started")
    monkeypatch.setattr(harness.runner, "run", started)


@pytest.mark.parametrize("shapes", ["", ",", " , "])
def test_run_refuses_empty_shapes(tmp_path, capfd, no_run, shapes):
    code = main(["run", PROBLEM, "--shapes", shapes, "--results", str(tmp_path / "results")])
    err = capfd.readouterr().err
    assert code == 2
    assert err == f"error: --shapes: expected comma-separated shape names among seed, medium, large, got {shapes!r}\n"
    assert not (tmp_path / "results").exists()


def test_run_blames_the_shapes_flag_for_an_unknown_shape(tmp_path, capfd, no_run):
    code = main(["run", PROBLEM, "--shapes", "seed,huge", "--results", str(tmp_path / "results")])
    err = capfd.readouterr().err
    assert code == 2
    assert err == "error: --shapes: expected shape names among seed, medium, large, got unknown 'huge'\n"


@pytest.mark.parametrize("args, blamed", [
    (["no/such/candidate.py"], "no/such/candidate.py: candidate"),
    ([str(REPO / "candidates" / "scalar_gated_delta"), "--problem", "no/such/problem.yaml"], "no/such/problem.yaml"),
])
def test_check_json_prints_json_when_it_cannot_check(capfd, args, blamed):
    code = main(["check", "--json", *args])
    out = capfd.readouterr().out
    report = json.loads(out)   # all of stdout is the one JSON document
    assert code == 2
    assert report["accepted"] is False and report["findings"] == [] and blamed in report["error"]


def test_run_help_documents_device_and_the_exit_codes(capfd):
    with pytest.raises(SystemExit) as exited:
        main(["run", "--help"])
    out = capfd.readouterr().out
    assert exited.value.code == 0
    device_help = out.split("\n  --device {auto,cuda,cpu}", 1)[1].split("\n  --gpus", 1)[0]
    assert "where candidates run" in device_help
    epilog = out.split("exit codes:", 1)[1]
    assert re.findall(r"^  (\d+) ", epilog, re.MULTILINE) == ["0", "2", "130"]


def test_a_copy_of_the_tree_inside_another_checkout_does_not_take_its_commit(tmp_path, monkeypatch):
    # `git archive` of the code unpacked inside some other repository: that repository's HEAD is not this code
    import subprocess

    from harness import env

    outer = tmp_path / "outer"
    (outer / "copy" / "harness").mkdir(parents=True)
    subprocess.run(["git", "init", "-q", str(outer)], check=True)
    subprocess.run(["git", "-C", str(outer), "-c", "user.email=a@b", "-c", "user.name=a", "commit", "-q",
                    "--allow-empty", "-m", "outer"], check=True)
    monkeypatch.delenv("HARNESS_COMMIT", raising=False)
    monkeypatch.setattr(env, "REPO_ROOT", outer / "copy")
    assert env.harness_commit() == "unknown"
    monkeypatch.setattr(env, "REPO_ROOT", outer)
    assert env.harness_commit() not in ("", "unknown")


def test_the_command_line_and_the_runner_leave_torch_to_the_workers():
    """Importing torch costs seconds of CPU a process: the runner process (the CLI, the runner, its backends, the
    tables) must not, so that a refusal answers at once and each run spends it only where torch runs (the
    environment probe, builds, judges, sandboxes)."""
    import subprocess
    import sys
    probe = ("import sys; import harness.cli, harness.runner, harness.backend, harness.leaderboard, harness.compare, "
             "harness.suite, harness.report_html; print('torch' in sys.modules)")
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, cwd=REPO, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "False", "the runner process imported torch"
