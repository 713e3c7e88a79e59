"""The shipped catalogue (candidates/): each folder's README lists exactly its files, and the two gated-delta
problems' kernel files share one CUDA source (their kernels are templated on the gate kind)."""
from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

from tests.conftest import REPO

CANDIDATES = REPO / "candidates"
SHARED_CUDA = ["v20_ws.py"]
TABLE_FILE = re.compile(r"^\| \**`([^`]+\.py)`\**")


def string_constant(path: Path, name: str) -> str:
    for node in ast.parse(path.read_text()).body:
        if (isinstance(node, ast.Assign) and [getattr(t, "id", None) for t in node.targets] == [name]
                and isinstance(node.value, ast.Constant) and isinstance(node.value.value, str)):
            return node.value.value
    raise AssertionError(f"{path}: no {name} = \"...\" string at module level")


@pytest.mark.parametrize("name", SHARED_CUDA)
def test_both_problems_ship_the_same_cuda_kernels(name):
    scalar = string_constant(CANDIDATES / "scalar_gated_delta" / name, "CUDA_SRC")
    channel = string_constant(CANDIDATES / "channel_gated_delta" / name, "CUDA_SRC")
    assert scalar == channel, f"{name}: the two problems' CUDA_SRC differ; change both or neither"


@pytest.mark.parametrize("folder", sorted(p.name for p in CANDIDATES.iterdir() if (p / "README.md").exists()))
def test_each_catalogue_readme_lists_exactly_its_files(folder):
    listed = {m.group(1) for line in (CANDIDATES / folder / "README.md").read_text().splitlines()
              if (m := TABLE_FILE.match(line))}
    present = {p.name for p in (CANDIDATES / folder).glob("*.py")}
    assert listed == present, f"candidates/{folder}: README lists {sorted(listed)}, folder holds {sorted(present)}"
