"""Records: one JSON line per (candidate, shape) result, appended and flushed; the truth every table is derived from.

Format history (`schema_version`):
  1: first version.
  2: signature (HMAC-SHA256 by the runner, harness/signing.py) and confinement (what confined the
     candidate's sandbox: harness/confine.py's `Confinement.to_json`). Version 1 records still load;
     read with a key, they are ignored as unsigned.
"""
from __future__ import annotations

import fcntl
import json
import logging
import os
import tempfile
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field, fields, replace
from datetime import datetime, timezone
from pathlib import Path
from typing import Iterator

from harness.signing import sign, verify

SCHEMA_VERSION = 2
STATUSES = ("ok", "rejected", "compile_error", "load_error", "wrong", "integrity", "runtime_error",
            "timeout", "crashed", "skipped")
log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Record:
    run_id: str
    problem: str
    problem_sha256: str
    candidate: str
    candidate_sha256: str
    kind: str                         # "candidate" or "baseline"
    shape: str
    status: str
    reason: str
    stage: str                        # how far it got: check, build, load, verify, time, done
    env_key: str
    config_sha256: str
    device: str
    check: str = ""                   # rule or dynamic check ID behind a rejected/integrity status
    findings: list = field(default_factory=list)
    compile_s: float | None = None
    build_cached: bool | None = None
    max_abs_err: float | None = None
    max_rel_err: float | None = None
    trials: int | None = None
    time_us: float | None = None      # median device time per call (CPU: monotonic clock)
    host_us: float | None = None      # median wall time per call, synchronized
    timing: dict = field(default_factory=dict)
    recorded_at: str = ""
    confinement: dict = field(default_factory=dict)
    signature: str = ""               # by the runner over every other field; "" when unsigned
    schema_version: int = SCHEMA_VERSION

    @property
    def resume_key(self) -> tuple:
        return (self.candidate, self.candidate_sha256, self.problem_sha256, self.env_key, self.config_sha256, self.shape)

    def to_json(self) -> dict:
        return asdict(self)

    @classmethod
    def from_json(cls, data: dict) -> "Record":
        known = {f.name for f in fields(cls)}
        return cls(**{k: v for k, v in data.items() if k in known})


def now_utc() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="seconds")


@contextmanager
def locked(path: Path) -> Iterator[None]:
    """An exclusive advisory lock on `path`.lock, so two runs never interleave writes."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path.with_name(path.name + ".lock"), "a") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def append_record(path: Path, record: Record, key: bytes | None = None) -> None:
    """Append one line; with a key, the line carries its signature."""
    if key is not None:
        record = replace(record, signature=sign(record.to_json(), key))
    line = json.dumps(record.to_json(), allow_nan=True) + "\n"
    with locked(path):
        with open(path, "a", encoding="utf-8") as handle:
            handle.write(line)
            handle.flush()
            os.fsync(handle.fileno())


def read_records(path: Path, key: bytes | None = None) -> list[Record]:
    """Every readable record; with a key, only those whose signature verifies."""
    if not path.exists():
        return []
    records, unsigned = [], 0
    for number, raw in enumerate(path.read_text(encoding="utf-8", errors="replace").splitlines(), 1):
        if not raw.strip():
            continue
        try:
            data = json.loads(raw)
            if data.get("schema_version", 0) > SCHEMA_VERSION:
                log.warning("%s:%d: record from a newer harness (schema %s), skipped", path, number, data.get("schema_version"))
                continue
            if key is not None and not verify(data, key):
                unsigned += 1
                continue
            records.append(Record.from_json(data))
        except (json.JSONDecodeError, TypeError, AttributeError) as exc:
            log.warning("%s:%d: unreadable record skipped (%s)", path, number, exc)
    if unsigned:
        # One line per file, not per record: a whole file of version 1 records is one fact.
        log.warning("%s: %d records with no valid signature ignored: written by an older harness, "
                    "another key, or edited", path, unsigned)
    return records


def write_atomic(path: Path, text: str, mode: int = 0o644) -> None:
    """Write to a temporary name beside `path`, then rename: a reader never sees half a file. mkstemp makes
    the temporary file 0600 and the rename keeps that, so the mode is set first (tables are for people)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, temp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(text)
            handle.flush()
            os.fsync(handle.fileno())
        os.chmod(temp, mode)
        os.replace(temp, path)
    except BaseException:
        if os.path.exists(temp):
            os.unlink(temp)
        raise
