"""Run configuration: a YAML file in (configs/default.yaml unless --config), a `Config` out.

A user file may set any subset of the keys in the defaults; unknown keys and wrong types are
refused with one line naming the file and key.
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from harness.problem import ProblemError, invalid_yaml

# configs/default.yaml in the repository; installed (pip install .), the copy packaged as harness/configs/.
IN_REPOSITORY = Path(__file__).resolve().parent.parent / "configs" / "default.yaml"
DEFAULT_CONFIG = IN_REPOSITORY if IN_REPOSITORY.exists() else Path(__file__).resolve().parent / "configs" / "default.yaml"
TIMING_METHODS = ("events", "graph", "host")


@dataclass(frozen=True)
class Config:
    path: Path
    data: dict

    def get(self, dotted: str) -> Any:
        value: Any = self.data
        for part in dotted.split("."):
            value = value[part]
        return value

    @property
    def timing(self) -> dict:
        return dict(self.data["timing"])


L2_FLUSH_MODES = ("read", "write", "off")


def _merge(path: Path, base: dict, override: dict, prefix: str = "") -> dict:
    merged = dict(base)
    for key, value in override.items():
        dotted = f"{prefix}{key}"
        if key not in base:
            raise ProblemError(f"{path}: {dotted}: expected one of the known keys {sorted(base)} (unknown key)")
        default = base[key]
        if isinstance(default, dict):
            if not isinstance(value, dict):
                raise ProblemError(f"{path}: {dotted}: expected a mapping, got {type(value).__name__}")
            merged[key] = _merge(path, default, value, dotted + ".")
        elif isinstance(default, bool):
            if not isinstance(value, bool):
                raise ProblemError(f"{path}: {dotted}: expected true or false, got {value!r}")
            merged[key] = value
        elif isinstance(default, (int, float)):
            if isinstance(value, bool) or not isinstance(value, (int, float)) or value < 0:
                raise ProblemError(f"{path}: {dotted}: expected a non-negative number, got {value!r}")
            merged[key] = value
        elif isinstance(default, list):
            if not isinstance(value, list):
                raise ProblemError(f"{path}: {dotted}: expected a list, got {value!r}")
            merged[key] = value
        else:
            if not isinstance(value, str):
                raise ProblemError(f"{path}: {dotted}: expected a string, got {value!r}")
            merged[key] = value
    return merged


def _read(path: Path) -> dict:
    try:
        data = yaml.safe_load(path.read_text())
    except FileNotFoundError:
        raise ProblemError(f"{path}: file not found (expected a config YAML file)") from None
    except yaml.YAMLError as exc:
        raise invalid_yaml(path, exc) from None
    if data is None:
        return {}
    if not isinstance(data, dict):
        raise ProblemError(f"{path}: document: expected a mapping of config sections")
    return data


def load_config(path: str | Path | None = None) -> Config:
    defaults = _read(DEFAULT_CONFIG)
    if path is None:
        data, source = defaults, DEFAULT_CONFIG
    else:
        source = Path(path)
        data = _merge(source, defaults, _read(source))
    if data["build"]["overlap_evaluation"] not in ("auto", "always", "never"):
        raise ProblemError(f"{source}: build.overlap_evaluation: expected auto, always or never, "
                           f"got {data['build']['overlap_evaluation']!r}")
    if data["evaluate"].get("prestart", "auto") not in ("auto", "always", "never"):
        raise ProblemError(f"{source}: evaluate.prestart: expected auto, always or never, "
                           f"got {data['evaluate']['prestart']!r}")
    if data["evaluate"].get("lane_cores", "auto") not in ("auto", "never"):
        raise ProblemError(f"{source}: evaluate.lane_cores: expected auto or never, "
                           f"got {data['evaluate']['lane_cores']!r}")
    for key in ("gold_graphs", "arena_ahead"):
        if data["judge"].get(key, "auto") not in ("auto", "never"):
            raise ProblemError(f"{source}: judge.{key}: expected auto or never, got {data['judge'][key]!r}")
    if data["judge"].get("receipts", "auto") not in ("auto", "always"):
        raise ProblemError(f"{source}: judge.receipts: expected auto or always, got {data['judge']['receipts']!r}")
    if data["timing"]["method"] not in TIMING_METHODS:
        raise ProblemError(f"{source}: timing.method: expected one of {list(TIMING_METHODS)}, got {data['timing']['method']!r}")
    if data["timing"]["l2_flush"] not in L2_FLUSH_MODES:
        raise ProblemError(f"{source}: timing.l2_flush: expected one of {list(L2_FLUSH_MODES)}, "
                           f"got {data['timing']['l2_flush']!r}")
    if data["check"]["static"] not in ("enforce", "warn"):
        raise ProblemError(f"{source}: check.static: expected enforce or warn, got {data['check']['static']!r}")
    if data["baselines"]["eager"] is not True:
        raise ProblemError(f"{source}: baselines.eager: expected true (the eager reference always runs: every "
                           f"speedup is over it), got {data['baselines']['eager']!r}")
    return Config(source, data)
