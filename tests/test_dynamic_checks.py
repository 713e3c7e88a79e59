"""Dynamic checks (D101-D107) against cheats that the static rules accept.

Every fixture in tests/adversarial/dynamic/ starts with `# expect: STATUS` (`wrong`, or
`integrity:D10x`; `A or B` where either outcome is a catch) and a line saying what the cheat is.
Each must pass `harness check` (otherwise it belongs in tests/adversarial/static/), then end with its
expected status in a real run. The honest tests/fixtures/cpu_scalar.py runs alongside and must end ok.
"""
import json
import re
from pathlib import Path

import pytest

from tests.conftest import FIXTURES, harness_cli

pytestmark = pytest.mark.slow

DYNAMIC = Path(__file__).resolve().parent / "adversarial" / "dynamic"
CPU = sorted(DYNAMIC.glob("cpu_*.py"))
CUDA = sorted(DYNAMIC.glob("cuda_*.py"))
HONEST = FIXTURES / "cpu_scalar.py"
ZEROS = FIXTURES / "cpu_zeros.py"   # the all-zeros cheat; shared with test_end_to_end_cpu (one build)

# Cheats the dynamic checks cannot catch today: strict xfail, so a fix shows up as a failure to flip.
KNOWN_GAPS: dict[str, str] = {}


def expected(path: Path) -> set[str]:
    match = re.match(r"# expect: (.+)", path.read_text().splitlines()[0])
    assert match, f"{path.name}: first line must be `# expect: STATUS`"
    return {part.strip() for part in match.group(1).split(" or ")}


def outcome(row: dict) -> str:
    return f"integrity:{row['check']}" if row["status"] == "integrity" else row["status"]


def run_all(tmp_path_factory, build_cache, device: str, files: list[Path]) -> dict:
    config = tmp_path_factory.mktemp("dynconfig") / "test.yaml"
    config.write_text(f"build:\n  cache_dir: {build_cache}\ntiming:\n  budget_s: 0.2\n  warmup_ms: 5\n"
                      "  min_iters: 5\nbaselines:\n  graph: false\n  compile: false\n")
    results = tmp_path_factory.mktemp("dynresults")
    done = harness_cli("run", "problems/scalar_gated_delta.yaml", "--device", device, "--results", str(results),
                       "--config", str(config), "--candidates", *map(str, files))
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-4000:]
    document = json.loads((results / "scalar_gated_delta" / "leaderboard.json").read_text())
    return {row["candidate"]: row for row in document["rows"]}


@pytest.fixture(scope="module")
def cpu_rows(tmp_path_factory, build_cache):
    return run_all(tmp_path_factory, build_cache, "cpu", [*CPU, ZEROS, HONEST])


@pytest.fixture(scope="module")
def cuda_rows(tmp_path_factory, build_cache):
    return run_all(tmp_path_factory, build_cache, "cuda", CUDA)


@pytest.mark.parametrize("path", CPU + CUDA, ids=lambda p: p.stem)
def test_fixture_passes_static_rules(path):
    done = harness_cli("check", str(path), "--problem", "problems/scalar_gated_delta.yaml", "--json", timeout=120)
    report = json.loads(done.stdout)
    assert done.returncode == 0 and report["accepted"], f"rejected statically, so not a dynamic case: {report}"
    assert expected(path) <= {"wrong"} | {f"integrity:D10{i}" for i in range(1, 8)}


def test_corpus_is_complete():
    assert len(CPU) >= 10 and len(CUDA) >= 5
    assert set(KNOWN_GAPS) <= {p.stem for p in CPU + CUDA}


@pytest.mark.parametrize("path", [pytest.param(p, marks=pytest.mark.xfail(reason=KNOWN_GAPS[p.stem], strict=True))
                                  if p.stem in KNOWN_GAPS else p for p in CPU], ids=lambda p: p.stem)
def test_cpu_cheat_is_caught(cpu_rows, path):
    row = cpu_rows[path.stem]
    assert outcome(row) in expected(path), f"{path.stem}: {outcome(row)} ({row.get('reason')})"


def test_cpu_zeros_and_honest_candidate(cpu_rows):
    assert cpu_rows["cpu_zeros"]["status"] == "wrong"
    honest = cpu_rows["cpu_scalar"]
    assert honest["status"] == "ok", f"false positive on an honest candidate: {honest.get('reason')}"
    assert honest["shapes"]["seed"]["time_us"] > 0
    assert cpu_rows["ref:eager"]["status"] == "ok"


@pytest.mark.gpu
@pytest.mark.parametrize("path", CUDA, ids=lambda p: p.stem)
def test_cuda_cheat_is_caught(cuda_rows, path):
    row = cuda_rows[path.stem]
    assert outcome(row) in expected(path), f"{path.stem}: {outcome(row)} ({row.get('reason')})"
