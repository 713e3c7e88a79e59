"""The shipped catalogue (candidates/): each folder's README lists exactly its files, and each pair of the two
gated-delta problems' tensor-core files shares one CUDA source (templated on the gate kind) but for one kernel."""
from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

from tests.conftest import REPO

CANDIDATES = REPO / "candidates"
# The two problems' tensor-core files, in pairs (portable; Hopper-only): one CUDA source each, except the
# warp-specialised kernel, whose split of work between its two kinds of warps differs per problem
# (candidates/scalar_gated_delta/NOTES.md); in the Hopper pair also the channel-only G/Vt step of the wgmma kernel,
# whose division only the channel file changed (in the scalar file that branch is compiled out), and the scalar
# file's gd_wsg_kernel (D = 64) and gd_wsh_kernel (D = 128, on fp16 pieces loaded by tensor-map TMA, with the headers
# they need, and two wgmma helpers only gd_wsh_kernel calls), which have no channel counterpart.
# Each pair: (scalar file, channel file, whether the G/Vt step may differ, whether the scalar file adds those kernels).
SHARED_CUDA = [("scalar_gated_delta/v20_ws.py", "channel_gated_delta/v21_ws_bal.py", False, False),
               ("scalar_gated_delta/v79b_gblate.py", "channel_gated_delta/v25_split_issue.py", True, True)]
PER_PROBLEM = re.compile(
    r"// v2\d: the chunkwise tensor-core kernel with warp specialisation.*?(?=template <bool CHAN>\nvoid launch_ws)", re.S)
CHANNEL_GV = re.compile(r"\n        // In place: gate -> G \(cumulative\), v -> v / G.*?\n        }\n", re.S)
SCALAR_WSG = re.compile(r"// -+\n// v27( -> v\d+)?: gd_wg_kernel's arithmetic at D = .*?(?=// -+\n// v7 parallel)", re.S)
SCALAR_HEADERS = re.compile(r"#include <cuda_fp16\.h>\n(?:#include <cuda\.h>\n)?")
# wgmma helpers that only the scalar file's gd_wsh_kernel calls (v67 onwards), beside the shared ones
SCALAR_WG_HELPERS = re.compile(
    r"\n// A descriptor for p \+ off floats.*?uint64_t wg_desc_at\(.*?\}\n|"
    r"__device__ __forceinline__ void wg_wait1\(\) \{.*?\}\n", re.S)
TABLE_FILE = re.compile(r"^\| \**`([^`]+\.py)`\**")


def string_constant(path: Path, name: str) -> str:
    for node in ast.parse(path.read_text()).body:
        if (isinstance(node, ast.Assign) and [getattr(t, "id", None) for t in node.targets] == [name]
                and isinstance(node.value, ast.Constant) and isinstance(node.value.value, str)):
            return node.value.value
    raise AssertionError(f"{path}: no {name} = \"...\" string at module level")


def shared_part(path: Path, gv_differs: bool, scalar_only_kernel: bool) -> str:
    source = string_constant(path, "CUDA_SRC")
    assert len(PER_PROBLEM.findall(source)) == 1, f"{path}: expected one warp-specialised kernel section"
    source = PER_PROBLEM.sub("", source)
    if scalar_only_kernel:
        assert len(SCALAR_WSG.findall(source)) == 1, f"{path}: expected one gd_wsg_kernel section"
        source = SCALAR_HEADERS.sub("", SCALAR_WSG.sub("", source), count=1)
        source = SCALAR_WG_HELPERS.sub("", source)
    if gv_differs:
        head, kernel, tail = source.partition("gd_wg_kernel(")
        assert kernel and len(CHANNEL_GV.findall(tail)) == 1, f"{path}: expected one channel G/Vt step in gd_wg_kernel"
        source = head + kernel + CHANNEL_GV.sub("\n", tail)
    return source


@pytest.mark.parametrize("pair", SHARED_CUDA, ids=lambda pair: "+".join(Path(name).stem for name in pair[:2]))
def test_both_problems_ship_the_same_cuda_kernels_but_one(pair):
    scalar_name, channel_name, gv_differs, scalar_only_kernel = pair
    scalar = shared_part(CANDIDATES / scalar_name, gv_differs, scalar_only_kernel)
    channel = shared_part(CANDIDATES / channel_name, gv_differs, False)
    assert scalar == channel, f"{pair}: their CUDA_SRC differ outside the warp-specialised kernel"


@pytest.mark.parametrize("folder", sorted(p.name for p in CANDIDATES.iterdir() if (p / "README.md").exists()))
def test_each_catalogue_readme_lists_exactly_its_files(folder):
    listed = {m.group(1) for line in (CANDIDATES / folder / "README.md").read_text().splitlines()
              if (m := TABLE_FILE.match(line))}
    present = {p.name for p in (CANDIDATES / folder).glob("*.py")}
    assert listed == present, f"candidates/{folder}: README lists {sorted(listed)}, folder holds {sorted(present)}"
