"""Signing: records the runner signed verify; edited, unsigned or foreign ones do not."""
from __future__ import annotations

import json
import logging
import math
import os
import stat

import pytest

from harness.records import SCHEMA_VERSION, Record, append_record, read_records
from harness.signing import RecordKeyError, record_key, sign, verify


def make_record(**changes) -> Record:
    base = dict(run_id="r1", problem="p", problem_sha256="a" * 64, candidate="c.py", candidate_sha256="b" * 64,
                kind="candidate", shape="small", status="ok", reason="", stage="done", env_key="e",
                config_sha256="f", device="cpu", time_us=12.5, max_abs_err=float("nan"),
                timing={"samples_us": [1.0, 2.0], 3: "int key"}, findings=[("I101", "warn")],
                confinement={"user": "uid 61000", "notes": []})
    return Record(**(base | changes))


@pytest.fixture
def key(tmp_path) -> bytes:
    return record_key(tmp_path / "keys" / "record.key")


def test_round_trip_and_a_tampered_field_fails(key):
    data = make_record().to_json()
    data["signature"] = sign(data, key)
    assert verify(data, key)
    assert verify(json.loads(json.dumps(data, allow_nan=True)), key)    # as read back from a file
    for field, value in (("time_us", 12.4), ("status", "wrong"), ("confinement", {})):
        assert not verify(data | {field: value}, key), field
    assert not verify(data | {"extra": 1}, key)
    assert not verify(data, os.urandom(32))
    assert not verify({k: v for k, v in data.items() if k != "signature"}, key)
    assert not verify(data | {"signature": "é" * 64}, key)


def test_records_read_with_a_key_skip_unsigned_and_tampered_lines(tmp_path, key, caplog):
    path = tmp_path / "records.jsonl"
    append_record(path, make_record(candidate="signed.py"), key)
    append_record(path, make_record(candidate="unsigned.py"))                     # no key: no signature
    append_record(path, make_record(candidate="tampered.py"), key)
    append_record(path, make_record(candidate="foreign.py"), os.urandom(32))
    lines = path.read_text().splitlines()
    tampered = json.loads(lines[2])
    tampered["time_us"] = 0.1
    lines[2] = json.dumps(tampered)
    v1 = make_record(candidate="v1.py").to_json()
    del v1["signature"], v1["confinement"]
    v1["schema_version"] = 1
    lines.append(json.dumps(v1, allow_nan=True))
    path.write_text("\n".join(lines) + "\n")

    with caplog.at_level(logging.WARNING, logger="harness.records"):
        trusted = read_records(path, key)
    assert [r.candidate for r in trusted] == ["signed.py"]
    assert math.isnan(trusted[0].max_abs_err) and trusted[0].schema_version == SCHEMA_VERSION
    warnings = [r.getMessage() for r in caplog.records if "no valid signature" in r.getMessage()]
    assert len(warnings) == 1 and ": 4 records with no valid signature ignored" in warnings[0]

    everything = read_records(path)                 # without a key: as before, v1 records included
    assert [r.candidate for r in everything] == ["signed.py", "unsigned.py", "tampered.py", "foreign.py", "v1.py"]
    assert everything[-1].schema_version == 1 and everything[-1].signature == ""


def test_key_file_is_private_and_stable(tmp_path):
    path = tmp_path / "harness" / "record.key"
    first = record_key(path)
    assert len(first) == 32
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert stat.S_IMODE(path.parent.stat().st_mode) == 0o700
    assert record_key(path) == first
    assert [p.name for p in path.parent.iterdir()] == ["record.key"]      # no temporary file left behind


def test_a_bad_key_file_is_refused_clearly(tmp_path):
    path = tmp_path / "record.key"
    path.write_text("not a key\n")
    os.chmod(path, 0o600)
    with pytest.raises(RecordKeyError, match="not 64 hex digits"):
        record_key(path)
    path.write_text(os.urandom(32).hex())
    os.chmod(path, 0o644)
    with pytest.raises(RecordKeyError, match="others may read it"):
        record_key(path)
