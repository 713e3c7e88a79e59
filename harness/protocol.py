"""Protocol: every message between the runner, the judge and the sandbox, as versioned frozen dataclasses.

runner -> judge   `EvaluateJob` (JSON on the judge's stdin; both sides trusted)
judge  -> runner  `ShapeOutcome` lines in a results file only the runner and the judge can write
judge  -> sandbox `Request` lines on a pipe
sandbox -> judge  `Reply` lines on a pipe: untrusted. `parse_reply` bounds their size, checks the
                  version, the operation and the type of every field before the judge reads a value;
                  whatever a reply says is a claim the judge checks.

Tensors never travel in messages: inputs and outputs live in a shared-memory arena (see judge.py).

Format history (`PROTOCOL_VERSION`):
  1: first version (judge and sandbox split).
  2: hello carries the arena's size, and the sandbox maps it and touches the GPU only then (a sandbox can start
     before its judge may use the GPU); its reply says whether the arena is page-locked. `ready` answers once
     the sandbox's imports are done.
  3: EvaluateJob.lane_cores: the cores the judge and its sandbox move to once the GPU is theirs.
  4: the sandbox op `map`: map the arena and fault its pages in before hello (host work a judge started early
     does while it waits for the GPU); hello keeps that mapping where its size is the same.
  5: timed inputs are staged sealed (seal.py): `call`, `warm`, `time` and `burst` may carry `unseal`, a list of
     [slot, [seed per input tensor]] the sandbox unseals first.
  6: on the CPU the keystream of `unseal` is numpy's Philox-4x64 of the seed, unsealed a chunk at a time
     (seal.py), no longer torch's Mersenne Twister; CUDA's is unchanged.
  7: `burst` may carry `receipt` (a seed), and its reply carries `receipts`: a digest of each output kept, weighted
     by weights drawn from that seed (receipt.py); empty where no receipt was asked.
"""
from __future__ import annotations

import json
import math
from dataclasses import asdict, dataclass, field, fields

PROTOCOL_VERSION = 7
MAX_REPLY_BYTES = 4 << 20   # a reply carries at most a few thousand samples


class ProtocolError(Exception):
    """A sandbox reply that breaks the protocol: malformed, oversized, out of order or of the wrong type."""


# --- runner <-> judge ------------------------------------------------------------------------------------

@dataclass(frozen=True)
class EvaluateJob:
    device: str                          # "cuda" or "cpu"
    problem_path: str
    shapes: tuple[str, ...]
    timing: dict
    judge: dict                          # config section `judge`
    secret_seed: int
    results_path: str
    log_path: str = ""
    candidate_id: str = ""
    candidate_path: str = ""             # empty for a baseline
    candidate_sha256: str = ""
    baseline: str = ""                   # eager, graph, compile; empty for a candidate
    check_reference: bool = False
    gpu: int | None = None
    compile_shapes: tuple[str, ...] = ()
    compile_time_limit_s: float = 600.0
    warm_only: bool = False
    sandbox_slot: int | None = None      # picks the sandbox's user; None: no separate user (trusted baselines)
    sandbox_env: dict = field(default_factory=dict)
    extension_dir: str = ""              # the candidate's build, copied into the sandbox's private folder
    runner_pid: int = 0
    lane_cores: tuple[int, ...] = ()     # where the runner reserves cores: the judge and its sandbox move there at
                                         # the gate (spawn.plan_cores); until then they share the other cores
    protocol: int = PROTOCOL_VERSION

    def to_json(self) -> dict:
        return asdict(self)

    @classmethod
    def from_json(cls, data: dict) -> "EvaluateJob":
        if data.get("protocol") != PROTOCOL_VERSION:
            raise ProtocolError(f"job of protocol {data.get('protocol')!r}, expected {PROTOCOL_VERSION}")
        known = {f.name for f in fields(cls)}
        values = {k: v for k, v in data.items() if k in known}
        values["shapes"] = tuple(values.get("shapes", ()))
        values["compile_shapes"] = tuple(values.get("compile_shapes", ()))
        values["lane_cores"] = tuple(int(core) for core in values.get("lane_cores", ()))
        return cls(**values)


@dataclass(frozen=True)
class ShapeOutcome:
    """One finished (candidate, shape) as the judge found it; the runner turns it into a signed record."""
    shape: str
    status: str
    stage: str
    reason: str = ""
    check: str = ""
    max_abs_err: float | None = None
    max_rel_err: float | None = None
    trials: int | None = None
    time_us: float | None = None
    host_us: float | None = None
    timing: dict = field(default_factory=dict)
    load_s: float | None = None
    compile_s: float | None = None
    confinement: dict = field(default_factory=dict)
    near_constant: bool = False
    context_lost: bool = False
    protocol: int = PROTOCOL_VERSION

    def to_json(self) -> dict:
        return asdict(self)

    @classmethod
    def from_json(cls, data: dict) -> "ShapeOutcome":
        known = {f.name for f in fields(cls)}
        return cls(**{k: v for k, v in data.items() if k in known})


# --- judge <-> sandbox -----------------------------------------------------------------------------------

# Each operation and the fields its reply must carry, with their types. A reply with a missing field, an
# extra one or one of another type is a protocol error: the candidate controls the sandbox's process.
REPLY_FIELDS: dict[str, dict[str, type | tuple]] = {
    "ready": {},
    "map": {"populated": bool},
    "hello": {"pid": int, "uid": int, "arena_pinned": str},
    "layout": {},
    "load": {"call_path": str, "load_s": float},
    "stage": {},
    "call": {"outputs": list, "threads_before": int, "threads_after": int, "inputs_changed": int},
    "warm": {},
    "time": {"samples_us": list, "empty_us": list, "spin_us": float, "discarded": int, "host_bound": bool,
             "kept": int},
    "burst": {"kept": int, "receipts": list},
    "fetch": {"outputs": list},
    "quit": {},
}
# what the sandbox says about one output it copied into the arena
OUTPUT_FIELDS: dict[str, type | tuple] = {"shape": list, "dtype": str, "plain": str, "copied": bool}


@dataclass(frozen=True)
class Request:
    op: str
    args: dict = field(default_factory=dict)
    protocol: int = PROTOCOL_VERSION

    def encode(self) -> bytes:
        return (json.dumps({"protocol": self.protocol, "op": self.op, "args": self.args}) + "\n").encode()

    @classmethod
    def decode(cls, line: bytes) -> "Request":
        data = json.loads(line)
        return cls(data["op"], data.get("args", {}), data.get("protocol", 0))


@dataclass(frozen=True)
class Reply:
    op: str
    ok: bool
    error: str = ""
    status: str = ""          # on failure: the row status the sandbox claims (load_error, runtime_error, ...)
    data: dict = field(default_factory=dict)
    protocol: int = PROTOCOL_VERSION

    def encode(self) -> bytes:
        return (json.dumps({"protocol": self.protocol, "op": self.op, "ok": self.ok, "error": self.error,
                            "status": self.status, "data": self.data}, allow_nan=True) + "\n").encode()


FAILURE_STATUSES = ("load_error", "compile_error", "runtime_error", "wrong")


def _typed(value: object, expected: type | tuple) -> bool:
    if expected is float:
        return isinstance(value, (int, float)) and not isinstance(value, bool)
    if expected is int:
        return isinstance(value, int) and not isinstance(value, bool)
    return isinstance(value, expected)


def _check_fields(where: str, data: object, spec: dict[str, type | tuple]) -> dict:
    if not isinstance(data, dict) or set(data) != set(spec):
        got = sorted(data) if isinstance(data, dict) else type(data).__name__
        raise ProtocolError(f"{where}: expected the fields {sorted(spec)}, got {got}")
    for name, expected in spec.items():
        if not _typed(data[name], expected):
            raise ProtocolError(f"{where}.{name}: expected {getattr(expected, '__name__', expected)}, "
                                f"got {type(data[name]).__name__}")
    return data


def finite_numbers(where: str, values: list, low: float = 0.0, high: float = 1e12) -> list[float]:
    """A list of finite numbers in [low, high]: what a claimed sample must be."""
    out = []
    for value in values:
        if not _typed(value, float) or not math.isfinite(value) or not low <= value <= high:
            raise ProtocolError(f"{where}: expected finite numbers in [{low}, {high}], got {value!r}")
        out.append(float(value))
    return out


def parse_reply(line: bytes, expected_op: str) -> Reply:
    """The one way the judge reads the sandbox: size, JSON, version, operation and field types checked."""
    if len(line) > MAX_REPLY_BYTES:
        raise ProtocolError(f"reply of {len(line)} bytes, expected at most {MAX_REPLY_BYTES}")
    try:
        data = json.loads(line)
    except (ValueError, UnicodeDecodeError) as exc:
        raise ProtocolError(f"reply is not JSON: {str(exc)[:80]}") from None
    data = _check_fields("reply", data, {"protocol": int, "op": str, "ok": bool, "error": str, "status": str,
                                         "data": dict})
    if data["protocol"] != PROTOCOL_VERSION:
        raise ProtocolError(f"reply of protocol {data['protocol']}, expected {PROTOCOL_VERSION}")
    if data["op"] != expected_op:
        raise ProtocolError(f"reply to {data['op']!r}, expected a reply to {expected_op!r}")
    if not data["ok"]:
        if data["status"] not in FAILURE_STATUSES:
            raise ProtocolError(f"failure status {data['status']!r}, expected one of {FAILURE_STATUSES}")
        return Reply(data["op"], False, data["error"][:2000], data["status"], {})
    payload = _check_fields(f"reply.{expected_op}", data["data"], REPLY_FIELDS[expected_op])
    for key in ("outputs",):
        for index, item in enumerate(payload.get(key, [])):
            _check_fields(f"reply.{expected_op}.{key}[{index}]", item, OUTPUT_FIELDS)
    for index, value in enumerate(payload.get("receipts", [])):   # NaN and infinities stand for themselves
        if not _typed(value, float):
            raise ProtocolError(f"reply.{expected_op}.receipts[{index}]: expected a number, "
                                f"got {type(value).__name__}")
    return Reply(data["op"], True, "", "", payload)
