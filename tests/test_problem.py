"""Problem YAML loading: good files load, every defect is one line naming file and key."""
from pathlib import Path

import pytest
import torch

from harness.problem import Problem, ProblemError, load_problem, select_shapes
from tests.conftest import REPO, harness_cli

GOOD = (REPO / "problems" / "scalar_gated_delta.yaml").read_text()


@pytest.mark.parametrize("name", ["scalar_gated_delta", "channel_gated_delta"])
def test_shipped_problems_load(name):
    problem = load_problem(REPO / "problems" / f"{name}.yaml")
    assert problem.name == name
    assert set(problem.shapes) == {"seed", "medium", "large"}
    assert problem.shapes["seed"].dims == {"B": 2, "T": 128, "H": 4, "D": 24}
    assert any(case.overrides for case in problem.cases), "a long-memory case must exist"
    assert set(problem.check_shapes) == {"t1_d5", "t257_d100", "t1000_d128", "t33_d24"}
    assert problem.check_shapes["t1_d5"].dims == {"B": 1, "T": 1, "H": 3, "D": 5}
    for shape in problem.check_shapes.values():
        assert shape.dims["D"] <= 128, "the shipped CUDA kernels take D in [1, 128]"
        # kept cheap: the float64 reference loops over T in Python at every check shape, every run
        assert shape.dims["B"] * shape.dims["H"] * shape.dims["D"] ** 2 <= 32768
    timed = {(s.dims["T"], s.dims["D"]) for s in problem.shapes.values()}
    assert any(s.dims["T"] % 2 and (s.dims["T"], s.dims["D"]) not in timed for s in problem.check_shapes.values())


def write(tmp_path: Path, text: str) -> Path:
    (tmp_path / "scalar_gated_delta.py").write_text((REPO / "problems" / "scalar_gated_delta.py").read_text())
    path = tmp_path / "p.yaml"
    path.write_text(text)
    return path


@pytest.mark.parametrize("mutate, key", [
    (lambda t: t + "surprise: 1\n", "surprise"),
    (lambda t: t.replace("name: scalar_gated_delta\n", ""), "name"),
    (lambda t: t.replace("reference: scalar_gated_delta.py", "reference: missing.py"), "reference"),
    (lambda t: t.replace("T: 128", "T: 0"), "shapes.seed.T"),
    (lambda t: t.replace("T: 128", "T: -5"), "shapes.seed.T"),
    (lambda t: t.replace("{B: 2, T: 128, H: 4, D: 24}", "{B: 2, T: 128, H: 4}"), "shapes.seed.D"),
    (lambda t: t.replace("dist: normal}", "dist: gaussian}", 1), "inputs[0].dist"),
    (lambda t: t.replace("low: 0.0, high: 1.0}", "low: 1.0, high: 0.0}"), "inputs[4].low"),
    (lambda t: t.replace("dtype: float32", "dtype: float33"), "dtype"),
    (lambda t: t.replace("rtol: 1.0e-4", "rtol: -1"), "verify.tolerance.rtol"),
    (lambda t: t.replace("gate: {dist: uniform", "gait: {dist: uniform"), "verify.cases[0].inputs.gait"),
    (lambda t: t.replace("shapes:", "shapes: [1, 2]\nunused:", 1), "unused"),
    (lambda t: t + "  - : [", "line"),
])
def test_defects_name_file_and_key(tmp_path, mutate, key):
    path = write(tmp_path, mutate(GOOD))
    with pytest.raises(ProblemError) as caught:
        load_problem(path)
    message = str(caught.value)
    assert str(path) in message and key in message and "expected" in message
    assert "\n" not in message


CHECK_SHAPES = GOOD[GOOD.index("check_shapes:"):GOOD.index("\ninputs:") + 1]
T33_LINE = GOOD[:GOOD.index("t33_d24:")].count("\n") + 1


def test_check_shapes_are_optional(tmp_path):
    problem = load_problem(write(tmp_path, GOOD.replace(CHECK_SHAPES, "")))
    assert problem.check_shapes == {} and set(problem.shapes) == {"seed", "medium", "large"}


def test_problem_built_without_check_shapes_has_none():
    shipped = load_problem(REPO / "problems" / "scalar_gated_delta.yaml")
    built = Problem(shipped.name, shipped.path, shipped.reference_path, shipped.dtype, shipped.init_inputs,
                    shipped.shapes, shipped.inputs, shipped.cases, shipped.rtol, shipped.atol_rms, shipped.sha256)
    assert built.check_shapes == {}


def test_sha256_follows_check_shapes(tmp_path):
    before = load_problem(write(tmp_path, GOOD)).sha256
    after = load_problem(write(tmp_path, GOOD.replace("T: 257,", "T: 259,"))).sha256
    assert before != after


@pytest.mark.parametrize("mutate, line", [
    (lambda t: t.replace("{B: 1, T: 1,    H: 3, D: 5}", "{B: 1, T: 1, H: 3}"),
     "check_shapes.t1_d5.D: expected a size for every dimension the inputs use (missing)"),
    (lambda t: t.replace("T: 257,", "T: 0,"),
     "check_shapes.t257_d100.T: expected a positive integer, got 0"),
    (lambda t: t.replace("t33_d24:", "seed:   "),
     "check_shapes.seed: expected a name not in shapes (shapes.seed exists)"),
    (lambda t: t.replace("t33_d24:", "t1_d5:  "),
     f"line {T33_LINE}: expected valid YAML (each key once per mapping, got 't1_d5' twice)"),
    (lambda t: t.replace("t33_d24:    {B: 7,", "t33_d24:    {E: 1, B: 7,"),
     "check_shapes.t33_d24.E: expected one of the known keys ['B', 'D', 'H', 'T'] (unknown key)"),
    (lambda t: t.replace("T: 1000,", "T: 1000000000,"),
     f"check_shapes.t1000_d128: expected at most {2**34} elements per input (q is larger)"),
    (lambda t: t.replace(CHECK_SHAPES, "check_shapes: [t1_d5]\n"),
     "check_shapes: expected a mapping, got list"),
])
def test_bad_check_shape_is_one_line(tmp_path, mutate, line):
    path = write(tmp_path, mutate(GOOD))
    with pytest.raises(ProblemError) as caught:
        load_problem(path)
    assert str(caught.value) == f"{path}: {line}"


def test_reference_without_model(tmp_path):
    path = write(tmp_path, GOOD)
    (tmp_path / "scalar_gated_delta.py").write_text("x = 1\n")
    from harness.problem import import_reference
    with pytest.raises(ProblemError, match="define class Model"):
        import_reference(load_problem(path))


def test_unknown_shape_is_refused():
    problem = load_problem(REPO / "problems" / "scalar_gated_delta.yaml")
    with pytest.raises(ProblemError, match="shapes: expected one of"):
        select_shapes(problem, ["huge"])


@pytest.mark.parametrize("args, needle", [
    (["run", "problems/nope.yaml"], "problems/nope.yaml: file not found"),
    (["run", "problems/scalar_gated_delta.yaml", "--shapes", "huge"],
     "--shapes: expected shape names among seed, medium, large, got unknown 'huge'"),
    (["run", "problems/scalar_gated_delta.yaml", "--shapes", ""], "--shapes: expected comma-separated shape names"),
    (["run", "problems/scalar_gated_delta.yaml", "--candidates", "no/such/dir"], "no/such/dir: --candidates"),
    (["run", "problems/scalar_gated_delta.yaml", "--bogus"], "unrecognized arguments: --bogus"),
    (["run", "problems/scalar_gated_delta.yaml", "--config", "missing.yaml"], "missing.yaml: file not found"),
    (["run", "problems/scalar_gated_delta.yaml", "--config", "tests/fixtures/no_eager.yaml"],
     "tests/fixtures/no_eager.yaml: baselines.eager: expected true"),
    (["run", "problems/scalar_gated_delta.yaml", "--config", "tests/fixtures/not_yaml.yaml"],
     "tests/fixtures/not_yaml.yaml: line 4: expected valid YAML"),
])
def test_cli_refuses_bad_input_in_one_line(tmp_path, args, needle):
    done = harness_cli(*args, "--results", str(tmp_path / "results"), timeout=120)
    assert done.returncode == 2, done.stderr
    assert needle in done.stderr
    assert "Traceback" not in done.stderr + done.stdout
    assert len(done.stderr.strip().splitlines()) == 1
    assert not (tmp_path / "results").exists(), "nothing may be written on bad input"


@pytest.mark.skipif(torch.cuda.is_available(), reason="needs a machine without a GPU")
def test_cli_refuses_device_cuda_without_a_gpu(tmp_path):
    # before, the run went on labelled "(cuda)" with --gpus all, or blamed --gpus with the default
    done = harness_cli("run", "problems/scalar_gated_delta.yaml", "--device", "cuda", "--gpus", "all",
                       "--results", str(tmp_path / "results"), timeout=120)
    assert done.returncode == 2 and done.stderr.strip() == "error: --device cuda: no CUDA device is visible"
    assert not (tmp_path / "results").exists()


@pytest.mark.parametrize("path", sorted((REPO / "problems").glob("*.yaml")), ids=lambda p: p.name)
def test_problem_files_point_only_inside_the_repository(path):
    """Their first comments named ../shared/seeds/..., outside the repository: a reader of a clone has no such file."""
    assert "../" not in path.read_text()
