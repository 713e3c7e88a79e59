"""Problem loading: a problem YAML path (or a KernelBench `.py` file, harness/kernelbench.py) in, a validated
`Problem` out.

Every defect is reported as one `ProblemError` line naming the file, the key and what was expected.
"""
from __future__ import annotations

import hashlib
import importlib.util
import math
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import yaml

DISTRIBUTIONS = {
    "normal": {"mean": 0.0, "std": 1.0},
    "uniform": {"low": 0.0, "high": 1.0},              # open interval: endpoints never drawn
    "sigmoid_normal": {"mean": 0.0, "std": 1.0},       # sigmoid(N(mean, std)): in (0, 1)
}
DTYPES = ("float32", "float64", "float16", "bfloat16")
TOP_KEYS = {"name", "description", "reference", "dtype", "init_inputs", "shapes", "check_shapes", "inputs", "verify"}
VERIFY_KEYS = {"seeds", "cases", "tolerance"}
TOLERANCE_KEYS = {"rtol", "atol_rms"}
MAX_ELEMENTS = 2**34


class ProblemError(ValueError):
    """A problem file that cannot be used; str() is the one line shown to the user."""


@dataclass(frozen=True)
class Shape:
    name: str
    dims: dict[str, int]


@dataclass(frozen=True)
class InputSpec:
    name: str
    shape: tuple[str, ...]
    dist: str
    params: dict[str, float]

    def sizes(self, shape: Shape) -> tuple[int, ...]:
        return tuple(shape.dims[d] for d in self.shape)


@dataclass(frozen=True)
class VerifyCase:
    name: str
    seeds: int
    overrides: dict[str, tuple[str, dict[str, float]]]   # input name -> (dist, params)


@dataclass(frozen=True)
class Problem:
    name: str
    path: Path
    reference_path: Path
    dtype: str
    init_inputs: tuple
    shapes: dict[str, Shape]
    inputs: tuple[InputSpec, ...]
    cases: tuple[VerifyCase, ...]
    rtol: float
    atol_rms: float
    sha256: str = field(default="")
    # verified for every candidate in every run, never timed: odd sizes a kernel tuned to `shapes` must also get right
    check_shapes: dict[str, Shape] = field(default_factory=dict)
    atol: float = 0.0               # absolute part of the tolerance, unscaled (KernelBench's allclose atol)
    input_source: str = "yaml"      # "yaml": drawn from `inputs`; "get_inputs": the file's own get_inputs(), seeded
    # forward's non-tensor arguments, (position, value): never in the arena, passed through as they are
    constants: tuple[tuple[int, Any], ...] = ()

    @property
    def reference_module(self) -> str:
        return self.reference_path.stem


def bad_key(path: Path, key: str, expected: str) -> ProblemError:
    """The one line every bad input gets: the file, the key and what was expected (kernelbench.py uses it too)."""
    return ProblemError(f"{path}: {key}: expected {expected}")


def _number(path: Path, key: str, value: Any, positive: bool = False) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        raise bad_key(path, key, f"a finite number, got {value!r}")
    if positive and value <= 0:
        raise bad_key(path, key, f"a positive number, got {value!r}")
    return float(value)


def _positive_int(path: Path, key: str, value: Any) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
        raise bad_key(path, key, f"a positive integer, got {value!r}")
    return value


def expect_mapping(path: Path, key: str, value: Any) -> dict:
    if not isinstance(value, dict):
        raise bad_key(path, key, f"a mapping, got {type(value).__name__}")
    return value


def refuse_unknown_keys(path: Path, key: str, value: dict, allowed: set[str]) -> None:
    extra = sorted(set(map(str, value)) - allowed)
    if extra:
        raise bad_key(path, f"{key}{extra[0]}" if key else extra[0], f"one of the known keys {sorted(allowed)} (unknown key)")


def _distribution(path: Path, key: str, spec: dict, extra_keys: set[str]) -> tuple[str, dict[str, float]]:
    dist = spec.get("dist")
    if dist not in DISTRIBUTIONS:
        raise bad_key(path, f"{key}.dist", f"one of {sorted(DISTRIBUTIONS)}, got {dist!r}")
    allowed = set(DISTRIBUTIONS[dist]) | {"dist"} | extra_keys
    refuse_unknown_keys(path, f"{key}.", spec, allowed)
    params = {p: _number(path, f"{key}.{p}", spec.get(p, default)) for p, default in DISTRIBUTIONS[dist].items()}
    if dist == "normal" and params["std"] <= 0 or dist == "sigmoid_normal" and params["std"] <= 0:
        raise bad_key(path, f"{key}.std", f"a positive number, got {params['std']}")
    if dist == "uniform" and not params["low"] < params["high"]:
        raise bad_key(path, f"{key}.low", f"less than high ({params['high']}), got {params['low']}")
    return dist, params


def _shapes(path: Path, key: str, raw: dict, inputs: list[InputSpec]) -> dict[str, Shape]:
    """Named shapes: every dimension the inputs use, sized by a positive int, each input at most MAX_ELEMENTS."""
    dim_names = {d for spec in inputs for d in spec.shape}
    shapes = {}
    for shape_name, dims in raw.items():
        shape_key = f"{key}.{shape_name}"
        if str(shape_name) in shapes:
            raise bad_key(path, shape_key, f"distinct names in {key} ({shape_name!r} is given twice)")
        dims = expect_mapping(path, shape_key, dims)
        missing = sorted(dim_names - set(dims))
        if missing:
            raise bad_key(path, f"{shape_key}.{missing[0]}", "a size for every dimension the inputs use (missing)")
        refuse_unknown_keys(path, f"{shape_key}.", dims, dim_names)
        sizes = {d: _positive_int(path, f"{shape_key}.{d}", v) for d, v in dims.items()}
        for spec in inputs:
            if math.prod(spec.sizes(Shape(shape_name, sizes))) > MAX_ELEMENTS:
                raise bad_key(path, shape_key, f"at most {MAX_ELEMENTS} elements per input ({spec.name} is larger)")
        shapes[str(shape_name)] = Shape(str(shape_name), sizes)
    return shapes


class UniqueKeyLoader(yaml.SafeLoader):
    """PyYAML keeps the last of two equal keys; a shape given twice would vanish without a word."""

    def construct_mapping(self, node, deep=False):
        seen = set()
        for key_node, _ in node.value:
            if key_node.tag == "tag:yaml.org,2002:merge":
                continue
            key = self.construct_object(key_node, deep=deep)
            try:
                duplicate = key in seen
            except TypeError:                   # unhashable: the base class reports it
                break
            if duplicate:
                raise yaml.constructor.ConstructorError(None, None, f"each key once per mapping, got {key!r} twice",
                                                        key_node.start_mark)
            seen.add(key)
        return super().construct_mapping(node, deep=deep)


def invalid_yaml(path: Path, exc: yaml.YAMLError) -> ProblemError:
    """One line for a file that is not YAML: the file, the line and what the parser expected."""
    mark = getattr(exc, "problem_mark", None)
    where = f"line {mark.line + 1}" if mark else "document"
    return ProblemError(f"{path}: {where}: expected valid YAML ({getattr(exc, 'problem', None) or exc})")


def override_tolerance(problem: Problem, rtol: float | None = None, atol: float | None = None) -> Problem:
    """The problem judged with another tolerance (`run --rtol/--atol`); the run's config records it."""
    return replace(problem, rtol=problem.rtol if rtol is None else float(rtol),
                   atol=problem.atol if atol is None else float(atol))


def load_problem(path: str | Path) -> Problem:
    path = Path(path)
    if path.suffix == ".py":   # KernelBench's format: Model, get_inputs() and get_init_inputs() in one file
        from harness.kernelbench import load_kernelbench
        return load_kernelbench(path)
    try:
        raw_text = path.read_text()
    except FileNotFoundError:
        raise ProblemError(f"{path}: file not found (expected a problem YAML file)") from None
    except OSError as exc:
        raise ProblemError(f"{path}: cannot read: {exc.strerror}") from None
    try:
        data = yaml.load(raw_text, Loader=UniqueKeyLoader)
    except yaml.YAMLError as exc:
        raise invalid_yaml(path, exc) from None
    data = expect_mapping(path, "document", data)
    refuse_unknown_keys(path, "", data, TOP_KEYS)
    for key in ("name", "reference", "shapes", "inputs", "verify"):
        if key not in data:
            raise bad_key(path, key, "this key (missing)")

    name = data["name"]
    if not isinstance(name, str) or not name.replace("_", "").isalnum():
        raise bad_key(path, "name", f"an identifier of letters, digits and '_', got {name!r}")
    reference = data["reference"]
    if not isinstance(reference, str) or not reference.endswith(".py"):
        raise bad_key(path, "reference", f"a path to a .py file, got {reference!r}")
    reference_path = (path.parent / reference).resolve()
    if not reference_path.is_file():
        raise bad_key(path, "reference", f"an existing file, {reference_path} not found")
    dtype = data.get("dtype", "float32")
    if dtype not in DTYPES:
        raise bad_key(path, "dtype", f"one of {list(DTYPES)}, got {dtype!r}")
    init_inputs = data.get("init_inputs", [])
    if not isinstance(init_inputs, list):
        raise bad_key(path, "init_inputs", f"a list, got {type(init_inputs).__name__}")

    inputs = []
    raw_inputs = data["inputs"]
    if not isinstance(raw_inputs, list) or not raw_inputs:
        raise bad_key(path, "inputs", "a non-empty list of {name, shape, dist}")
    for index, spec in enumerate(raw_inputs):
        key = f"inputs[{index}]"
        spec = expect_mapping(path, key, spec)
        input_name = spec.get("name")
        if not isinstance(input_name, str) or not input_name.isidentifier():
            raise bad_key(path, f"{key}.name", f"an identifier, got {input_name!r}")
        dims = spec.get("shape")
        if not isinstance(dims, list) or not dims or not all(isinstance(d, str) for d in dims):
            raise bad_key(path, f"{key}.shape", f"a list of dimension names, got {dims!r}")
        dist, params = _distribution(path, key, spec, {"name", "shape"})
        inputs.append(InputSpec(input_name, tuple(dims), dist, params))
    names = [spec.name for spec in inputs]
    if len(set(names)) != len(names):
        raise bad_key(path, "inputs", f"distinct names, got {names}")

    raw_shapes = expect_mapping(path, "shapes", data["shapes"])
    if not raw_shapes:
        raise bad_key(path, "shapes", "at least one named shape")
    shapes = _shapes(path, "shapes", raw_shapes, inputs)
    check_shapes = _shapes(path, "check_shapes", expect_mapping(path, "check_shapes", data.get("check_shapes", {})), inputs)
    clash = sorted(set(shapes) & set(check_shapes))
    if clash:
        raise bad_key(path, f"check_shapes.{clash[0]}", f"a name not in shapes (shapes.{clash[0]} exists)")

    verify = expect_mapping(path, "verify", data["verify"])
    refuse_unknown_keys(path, "verify.", verify, VERIFY_KEYS)
    cases = [VerifyCase("default", _positive_int(path, "verify.seeds", verify.get("seeds", 2)), {})]
    raw_cases = verify.get("cases", [])
    if not isinstance(raw_cases, list):
        raise bad_key(path, "verify.cases", "a list of {name, seeds, inputs}")
    for index, case in enumerate(raw_cases):
        key = f"verify.cases[{index}]"
        case = expect_mapping(path, key, case)
        refuse_unknown_keys(path, f"{key}.", case, {"name", "seeds", "inputs"})
        case_name = case.get("name")
        if not isinstance(case_name, str) or not case_name:
            raise bad_key(path, f"{key}.name", f"a name, got {case_name!r}")
        overrides = {}
        for input_name, spec in expect_mapping(path, f"{key}.inputs", case.get("inputs", {})).items():
            if input_name not in names:
                raise bad_key(path, f"{key}.inputs.{input_name}", f"one of the inputs {names}")
            overrides[input_name] = _distribution(path, f"{key}.inputs.{input_name}",
                                                  expect_mapping(path, f"{key}.inputs.{input_name}", spec), set())
        cases.append(VerifyCase(case_name, _positive_int(path, f"{key}.seeds", case.get("seeds", 1)), overrides))
    tolerance = expect_mapping(path, "verify.tolerance", verify.get("tolerance", {}))
    refuse_unknown_keys(path, "verify.tolerance.", tolerance, TOLERANCE_KEYS)
    for key in ("rtol", "atol_rms"):
        if key not in tolerance:
            raise bad_key(path, f"verify.tolerance.{key}", "this key (missing)")
    rtol = _number(path, "verify.tolerance.rtol", tolerance["rtol"], positive=True)
    atol_rms = _number(path, "verify.tolerance.atol_rms", tolerance["atol_rms"], positive=True)

    # the whole text is hashed, so a change to shapes, check_shapes or anything else is a new problem
    digest = hashlib.sha256(raw_text.encode() + reference_path.read_bytes()).hexdigest()
    return Problem(name, path, reference_path, dtype, tuple(init_inputs), shapes, tuple(inputs),
                   tuple(cases), rtol, atol_rms, digest, check_shapes)


def import_reference(problem: Problem):
    """Import the reference module; it must define `Model`."""
    spec = importlib.util.spec_from_file_location(f"reference_{problem.name}", problem.reference_path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    if not isinstance(getattr(module, "Model", None), type):
        raise ProblemError(f"{problem.path}: reference: expected {problem.reference_path.name} to define class Model")
    return module


def select_shapes(problem: Problem, names: list[str] | None) -> list[Shape]:
    if not names:
        return list(problem.shapes.values())
    unknown = [n for n in names if n not in problem.shapes]
    if unknown:
        raise ProblemError(f"{problem.path}: shapes: expected one of {sorted(problem.shapes)}, got {unknown[0]!r}")
    return [problem.shapes[n] for n in names]
