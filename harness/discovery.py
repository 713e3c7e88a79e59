"""Candidate discovery: files and folders in, a sorted list of `Candidate`s out."""
from __future__ import annotations

import hashlib
from dataclasses import dataclass
from pathlib import Path

from harness.problem import ProblemError


@dataclass(frozen=True)
class Candidate:
    id: str          # shown in tables; unique within a run
    path: Path
    sha256: str

    @property
    def short_hash(self) -> str:
        return self.sha256[:12]


def _files(root: Path) -> list[Path]:
    if root.is_file():
        return [root]
    return sorted(p for p in root.glob("*.py") if not p.name.startswith("_"))


def discover(paths: list[str | Path], origin: str = "--candidates") -> list[Candidate]:
    files: list[Path] = []
    for raw in paths:
        path = Path(raw)
        if not path.exists():
            raise ProblemError(f"{path}: {origin}: expected an existing .py file or folder (not found)")
        if path.is_file() and path.suffix != ".py":
            raise ProblemError(f"{path}: {origin}: expected a .py file")
        files.extend(_files(path))
    unique = list(dict.fromkeys(p.resolve() for p in files))
    stems = [p.stem for p in unique]
    candidates = []
    for path in unique:
        ident = path.stem if stems.count(path.stem) == 1 else f"{path.parent.name}/{path.stem}"
        candidates.append(Candidate(ident, path, hashlib.sha256(path.read_bytes()).hexdigest()))
    return candidates
