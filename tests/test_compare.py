"""`harness compare`: two runs' records side by side, with the ratio's interval and a verdict."""
import json

import pytest

from harness import compare as comparing
from harness.records import Record, append_record
from tests.conftest import harness_cli


def timed(candidate, shape, samples, sha="c" * 64, run_id="r"):
    samples = sorted(samples)
    return Record(run_id=run_id, problem="p", problem_sha256="ps", candidate=candidate, candidate_sha256=sha,
                  kind="candidate", shape=shape, status="ok", reason="", stage="done", env_key="e",
                  config_sha256="cfg", device="cuda", time_us=samples[len(samples) // 2],
                  timing={"method": "events", "samples_us": samples})


NOISE = [0.98, 0.99, 1.0, 1.0, 1.01, 1.02, 0.99, 1.0, 1.01, 1.0]


def write(path, records):
    for record in records:
        append_record(path, record)
    return path


def test_faster_slower_and_same(tmp_path):
    before = write(tmp_path / "a.jsonl", [timed("v13", "seed", [4.4 * x for x in NOISE]),
                                          timed("v16", "seed", [4.4 * x for x in NOISE]),
                                          timed("v17", "seed", [4.4 * x for x in NOISE])])
    after = write(tmp_path / "b.jsonl", [timed("v13", "seed", [3.0 * x for x in NOISE]),
                                         timed("v16", "seed", [4.42 * x for x in NOISE]),
                                         timed("v17", "seed", [6.0 * x for x in NOISE], sha="d" * 64)])
    verdicts = {c.candidate: c for c in comparing.compare(before, after)}
    assert verdicts["v13"].verdict == "faster" and verdicts["v13"].ratio_high < 1
    assert verdicts["v16"].verdict == "same" and verdicts["v16"].ratio_low < 1 < verdicts["v16"].ratio_high
    assert verdicts["v17"].verdict == "slower" and not verdicts["v17"].same_source


def test_too_few_samples_give_no_verdict(tmp_path):
    # five samples have no 95% interval of the median: a 0.1% change must not read as faster
    before = write(tmp_path / "a.jsonl", [timed("v13", "large", [910.0, 905.0, 912.0, 930.0, 908.0])])
    after = write(tmp_path / "b.jsonl", [timed("v13", "large", [909.0, 904.0, 911.0, 931.0, 907.0])])
    (comparison,) = comparing.compare(before, after)
    assert comparison.ratio < 1 and comparison.ratio_low is None and comparison.verdict == "unknown"


def test_folders_of_either_depth_and_a_clear_error(tmp_path):
    write(tmp_path / "one" / "p" / "records.jsonl", [timed("v13", "seed", NOISE)])
    write(tmp_path / "two" / "records.jsonl", [timed("v13", "seed", NOISE)])
    assert len(comparing.compare(tmp_path / "one", tmp_path / "two")) == 1
    (tmp_path / "empty").mkdir()
    with pytest.raises(comparing.CompareError, match="records.jsonl"):
        comparing.compare(tmp_path / "empty", tmp_path / "two")


def test_the_command_prints_each_pair_and_json(tmp_path):
    write(tmp_path / "a" / "records.jsonl", [timed("v13", "seed", [4.4 * x for x in NOISE])])
    write(tmp_path / "b" / "records.jsonl", [timed("v13", "seed", [3.0 * x for x in NOISE])])
    done = harness_cli("compare", str(tmp_path / "a"), str(tmp_path / "b"), timeout=120)
    assert done.returncode == 0, done.stderr
    assert "v13" in done.stdout and "faster" in done.stdout
    done = harness_cli("compare", str(tmp_path / "a"), str(tmp_path / "b"), "--json", timeout=120)
    rows = json.loads(done.stdout)
    assert rows[0]["verdict"] == "faster" and rows[0]["ratio"] < 1
    done = harness_cli("compare", str(tmp_path / "a"), str(tmp_path / "missing"), timeout=120)
    assert done.returncode == 2 and "missing" in done.stderr + done.stdout
