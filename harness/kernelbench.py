"""KernelBench problem files: a `.py` path in, a validated `Problem` out; and the seeded draw of its inputs.

KernelBench keeps a problem in one module: the reference `class Model`, its constructor's arguments from
`get_init_inputs()` and forward's arguments from `get_inputs()`, which draws them from torch's global
generator. The harness calls `get_inputs()` with that generator forked and seeded by a seed of its own (the
judge's secret one, per trial), so every trial gets inputs the candidate has never seen and nobody else's
generator moves. A file has one shape, `default`: the sizes `get_inputs()` returns. Its tensors must share one
floating dtype (the arena carries one); its other items (ints, floats, ...) are forward's constants, passed to
the reference and the candidate as they are, and must not change between draws.

Tolerance, as `torch.allclose` reads it (|out - gold| <= atol + rtol * |gold|): KernelBench's for the dtype
(TOLERANCE_BY_DTYPE), overridden by `<stem>.tolerance.yaml` beside the file ({rtol, atol}), overridden in turn
by `run --rtol/--atol` (cli.py; they reach the judge in the config's judge section).
"""
from __future__ import annotations

import contextlib
import hashlib
import importlib.util
import inspect
import json
import random
from pathlib import Path
from typing import Any

import yaml

from harness.problem import (InputSpec, Problem, ProblemError, Shape, VerifyCase, UniqueKeyLoader, bad_key,
                             expect_mapping, refuse_unknown_keys, invalid_yaml)

SHAPE = "default"
TRIALS = 5                 # KernelBench's num_correct_trials
LOAD_SEED = 0              # the draw that learns the shapes at load time
INIT_SEED = 42             # KernelBench seeds the constructors alike, so random weights (nn.Linear...) agree
# KernelBench's get_tolerance_for_precision, used as both atol and rtol; float64 as strict as float32
TOLERANCE_BY_DTYPE = {"float32": 1e-4, "float64": 1e-4, "float16": 1e-2, "bfloat16": 1e-2}
TOLERANCE_KEYS = {"rtol", "atol"}
CONSTANT_TYPES = (bool, int, float, str, type(None))   # what travels to the sandbox as JSON unchanged

_modules: dict[tuple[str, str], Any] = {}   # (path, sha256) -> the file, imported once per process, not per draw


def tolerance_path(path: Path) -> Path:
    """The optional side file that overrides the dtype's tolerance: `matmul.py` -> `matmul.tolerance.yaml`."""
    return path.with_name(f"{path.stem}.tolerance.yaml")


def find_problems(folder: Path) -> list[Path]:
    """Every problem file in a folder (not below it): `*.py`, those starting with `_` left out."""
    return sorted(p for p in folder.glob("*.py") if not p.name.startswith("_"))


@contextlib.contextmanager
def seeded(seed: int, device_type: str = "cpu"):
    """torch's (and Python's) global generator seeded for the block, then put back as it was."""
    import torch

    devices = [torch.cuda.current_device()] if device_type == "cuda" and torch.cuda.is_available() else []
    state = random.getstate()
    try:
        with torch.random.fork_rng(devices=devices):
            torch.manual_seed(seed)
            random.seed(seed)
            yield
    finally:
        random.setstate(state)


def import_file(path: Path, name: str):
    """Import the problem file; anything it raises is one line naming the file."""
    spec = importlib.util.spec_from_file_location(f"kernelbench_{name}", path)
    module = importlib.util.module_from_spec(spec)
    try:
        spec.loader.exec_module(module)
    except BaseException as exc:   # a problem file may raise anything; SystemExit too
        raise ProblemError(f"{path}: import: expected a module that imports cleanly, got "
                           f"{type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}") from None
    return module


def _call(path: Path, module, function: str, seed: int, device_type: str = "cpu") -> list:
    with seeded(seed, device_type):
        try:
            items = getattr(module, function)()
        except Exception as exc:
            raise bad_key(path, f"{function}()", f"a call that returns, got {type(exc).__name__}: {exc}") from None
    if not isinstance(items, (list, tuple)):
        raise bad_key(path, f"{function}()", f"a list, got {type(items).__name__}")
    return list(items)


def _argument_names(model: type, count: int) -> list[str]:
    """forward's parameter names, for messages and the report; input0, input1, ... where it takes *args."""
    try:
        parameters = list(inspect.signature(model.forward).parameters.values())[1:]
    except (TypeError, ValueError):
        parameters = []
    names = [p.name for p in parameters if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)][:count]
    return names + [f"input{i}" for i in range(len(names), count)]


def describe_inputs(path: Path, items: list, names: list[str]) -> tuple[str, tuple[InputSpec, ...], dict[str, int],
                                                                       tuple[tuple[int, Any], ...]]:
    """The dtype, the tensors' specs, the sizes they use and the constants of one draw of get_inputs().
    A dimension is named by its size, so the report reads `[256, 512]`."""
    import torch

    from harness.verify import DTYPES

    specs, sizes, constants, dtypes = [], {}, [], set()
    for position, (item, name) in enumerate(zip(items, names)):
        key = f"get_inputs()[{position}]"
        if isinstance(item, torch.Tensor):
            dtype = str(item.dtype).replace("torch.", "")
            if dtype not in DTYPES:
                raise bad_key(path, key, f"a floating tensor ({', '.join(DTYPES)}), got {dtype} "
                                       "(the harness carries one floating dtype for every input)")
            dtypes.add(dtype)
            specs.append(InputSpec(name, tuple(str(s) for s in item.shape), "get_inputs", {}))
            sizes.update({str(s): int(s) for s in item.shape})
        elif type(item) in CONSTANT_TYPES:
            constants.append((position, item))
        else:
            raise bad_key(path, key, f"a tensor or a plain int, float, bool, str or None, got {type(item).__name__}")
    if not specs:
        raise bad_key(path, "get_inputs()", "at least one tensor")
    if len(dtypes) > 1:
        raise bad_key(path, "get_inputs()", f"tensors of one dtype, got {', '.join(sorted(dtypes))}")
    return dtypes.pop(), tuple(specs), sizes, tuple(constants)


def _init_inputs(path: Path, module) -> tuple:
    """get_init_inputs(), as the sandbox will see it: it travels as JSON, so tuples arrive as lists everywhere."""
    if not hasattr(module, "get_init_inputs"):
        return ()
    if not callable(module.get_init_inputs):
        raise bad_key(path, "get_init_inputs", "a function returning Model's constructor arguments")
    items = _call(path, module, "get_init_inputs", INIT_SEED)
    try:
        return tuple(json.loads(json.dumps(items, allow_nan=True)))
    except (TypeError, ValueError):
        kinds = sorted({type(item).__name__ for item in items if type(item) not in CONSTANT_TYPES + (list, tuple)})
        raise bad_key(path, "get_init_inputs()", f"ints, floats, strings or lists of them (they travel to the sandbox "
                                               f"as JSON), got {', '.join(kinds) or 'a nested value of another type'}"
                    ) from None


def _tolerance(path: Path, dtype: str) -> tuple[float, float, bytes]:
    """(rtol, atol, the side file's bytes): the dtype's default unless the side file says otherwise."""
    rtol = atol = TOLERANCE_BY_DTYPE[dtype]
    side = tolerance_path(path)
    if not side.exists():
        return rtol, atol, b""
    text = side.read_bytes()
    try:
        data = yaml.load(text, Loader=UniqueKeyLoader)
    except yaml.YAMLError as exc:
        raise invalid_yaml(side, exc) from None
    data = expect_mapping(side, "document", {} if data is None else data)
    refuse_unknown_keys(side, "", data, TOLERANCE_KEYS)
    values = {key: check_tolerance(side, key, data.get(key, default)) for key, default in (("rtol", rtol), ("atol", atol))}
    return values["rtol"], values["atol"], text


def check_tolerance(where: Path | str, key: str, value: Any) -> float:
    """A tolerance from a side file or the command line (`where` empty): a non-negative finite number."""
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 <= value < float("inf"):
        raise ProblemError(f"{where}: " * bool(str(where)) + f"{key}: expected a non-negative number, got {value!r}")
    return float(value)


def load_kernelbench(path: str | Path) -> Problem:
    path = Path(path)
    if not path.is_file():
        raise ProblemError(f"{path}: file not found (expected a KernelBench problem .py file)")
    name = path.stem
    if not name.replace("_", "").isalnum():
        raise bad_key(path, "name", f"a file name of letters, digits and '_' (it names results/<name>/), got {name!r}")
    source = path.read_bytes()
    module = import_file(path, name)
    if not isinstance(getattr(module, "Model", None), type):
        raise bad_key(path, "Model", "a class Model (the reference, an nn.Module) defined by the file")
    if not callable(getattr(module, "get_inputs", None)):
        raise bad_key(path, "get_inputs", "a function get_inputs() returning forward's arguments (KernelBench's format)")
    init_inputs = _init_inputs(path, module)
    items = _call(path, module, "get_inputs", LOAD_SEED)
    dtype, specs, sizes, constants = describe_inputs(path, items, _argument_names(module.Model, len(items)))
    rtol, atol, side_text = _tolerance(path, dtype)
    digest = hashlib.sha256(b"kernelbench\0" + source + b"\0" + side_text).hexdigest()
    _modules[(str(path.resolve()), digest)] = module
    return Problem(name, path, path.resolve(), dtype, init_inputs, {SHAPE: Shape(SHAPE, sizes)}, specs,
                   (VerifyCase("default", TRIALS, {}),), rtol, 0.0, digest, {}, atol=atol,
                   input_source="get_inputs", constants=constants)


def draw_inputs(problem: Problem, seed: int, device) -> list:
    """forward's arguments from get_inputs() under `seed`: tensors on `device`, constants as they are. A draw whose
    shapes, dtype or constants differ from the ones seen at load time is refused (the layout was planned for them)."""
    import torch

    key = (str(problem.reference_path), problem.sha256)
    if key not in _modules:
        _modules[key] = import_file(problem.reference_path, problem.name)
    items = _call(problem.path, _modules[key], "get_inputs", seed, torch.device(device).type)
    names = [spec.name for spec in problem.inputs]
    drawn = describe_inputs(problem.path, items, _argument_names(_modules[key].Model, len(items)))
    if (drawn[0], [s.shape for s in drawn[1]], drawn[3]) != (problem.dtype, [s.shape for s in problem.inputs],
                                                             problem.constants):
        raise bad_key(problem.path, "get_inputs()", f"the same dtype, shapes and non-tensor values at every seed "
                                                  f"(inputs {names}), got others at seed {seed}")
    return [x.to(device) if isinstance(x, torch.Tensor) else x for x in items]

