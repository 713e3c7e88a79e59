"""Worker: one candidate (or baseline) in a process of its own; a job on stdin, JSON lines out.

`python -m harness.worker` reads one job (JSON) from stdin and appends one JSON object per
finished step to the job's `results_path`, flushed at once, so a crash keeps what was finished.
Modes:
- build: import the candidate, which compiles its extension through load_inline;
- evaluate: import (cached build), construct, then verify and time each shape.
A CUDA error poisons the whole process, so after one the worker reports the remaining shapes
and exits; the runner starts the next candidate in a fresh process.
"""
from __future__ import annotations

import importlib.util
import json
import os
import signal
import statistics
import sys
import time
import traceback
from typing import Callable

STAGE_STATUS = {"build": "compile_error", "load": "load_error"}


class Emitter:
    def __init__(self, path: str):
        self.handle = open(path, "a", encoding="utf-8")

    def __call__(self, record: dict) -> None:
        self.handle.write(json.dumps(record) + "\n")
        self.handle.flush()
        os.fsync(self.handle.fileno())


def first_line(exc: BaseException, limit: int = 240) -> str:
    text = f"{type(exc).__name__}: {exc}".strip()
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    return (lines[0] if lines else type(exc).__name__)[:limit]


def is_build_failure(exc: BaseException) -> bool:
    return "Error building extension" in str(exc) or type(exc).__name__ == "CalledProcessError"


def import_candidate(path: str, sha256: str):
    spec = importlib.util.spec_from_file_location(f"candidate_{sha256[:16]}", path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


def keep_compiler_output() -> None:
    """Make load_inline print the compiler's commands and output, so the build log keeps them."""
    import functools

    import torch.utils.cpp_extension as cpp_extension

    original = cpp_extension.load_inline

    @functools.wraps(original)
    def verbose_load_inline(*args, **kwargs):
        kwargs["verbose"] = True
        return original(*args, **kwargs)

    cpp_extension.load_inline = verbose_load_inline


def run_build(job: dict, emit: Emitter) -> None:
    keep_compiler_output()
    started = time.perf_counter()
    try:
        import_candidate(job["candidate"]["path"], job["candidate"]["sha256"])
    except BaseException as exc:  # a candidate may raise anything, SystemExit included
        traceback.print_exc()
        status = "compile_error" if is_build_failure(exc) else "load_error"
        from harness.build import first_error_line

        reason = (first_error_line(str(exc)) if status == "compile_error" else "") or first_line(exc)
        emit({"stage": "build", "status": status, "reason": reason, "compile_s": time.perf_counter() - started})
        return
    seconds = time.perf_counter() - started
    print(f"built and loaded in {seconds:.1f} s")
    emit({"stage": "build", "status": "ok", "reason": "", "compile_s": seconds})


def cuda_context_lost(exc: BaseException) -> bool:
    text = str(exc).lower()
    return any(s in text for s in ("cuda error", "illegal memory access", "device-side assert", "unspecified launch failure",
                                   "cudaerror", "acceleratorerror", "misaligned address", "illegal instruction"))


class Evaluation:
    """Verify and time one callable on each shape of a problem."""

    def __init__(self, job: dict, emit: Emitter):
        import torch

        from harness.problem import import_reference, load_problem

        self.torch = torch
        self.job = job
        self.emit = emit
        self.device = torch.device(job["device"])
        self.problem = load_problem(job["problem_path"])
        self.settings = job["timing"]
        reference_module = import_reference(self.problem)
        init = list(self.problem.init_inputs)
        self.reference = reference_module.Model(*init).to(self.device).eval()
        self.gold_model = reference_module.Model(*init).to(self.device).double().eval()
        self.secret_seed = int(job["secret_seed"])

    def synchronize(self) -> None:
        if self.device.type == "cuda":
            self.torch.cuda.synchronize(self.device)

    # --- verification -------------------------------------------------------------------------------
    def verify(self, fn: Callable, shape) -> dict:
        from harness.verify import (IntegrityError, WrongAnswer, check_output, compare, gold_output,
                                    inputs_unchanged, is_near_constant, make_inputs, poison_free_memory,
                                    thread_count, trials_for)

        torch = self.torch
        worst_abs, worst_rel, worst_case, golds, count = 0.0, 0.0, "", [], 0
        threads_after_first = None
        inputs, previous = None, None
        for trial, case in trials_for(self.problem, self.secret_seed, shape):
            fresh = make_inputs(self.problem, shape, case, trial.seed, self.device)
            if inputs is None:
                inputs = fresh
            else:   # same buffers, new contents: a cache keyed by address or shape returns a stale answer
                for live, new in zip(inputs, fresh):
                    live.copy_(new)
            del fresh
            pristine = [x.clone() for x in inputs]
            for attempt in range(2):   # the same inputs twice: determinism
                poison_free_memory(inputs)
                before = thread_count()
                with torch.no_grad():
                    out = fn(*inputs)
                self.synchronize()
                after = thread_count()
                if threads_after_first is not None and after > max(before, threads_after_first):
                    raise IntegrityError("D104", f"{after - before} more threads after the call than before")
                threads_after_first = after if threads_after_first is None else threads_after_first
                changed = inputs_unchanged(inputs, pristine)
                if changed is not None:
                    raise IntegrityError("D101", f"input {self.problem.inputs[changed].name} was modified by the call")
                if attempt == 0:
                    gold = gold_output(self.gold_model, pristine)
                    out = check_output(out, gold.to(inputs[0].dtype), inputs)
                    max_abs, rel, ok, reason = compare(out, gold, self.problem)
                    if not ok:
                        if previous is not None and torch.equal(out, previous):
                            raise IntegrityError("D103", "returned the previous inputs' answer for new inputs "
                                                         "in the same buffers (result cached by address or shape)")
                        raise WrongAnswer(f"{case.name}: {reason}")
                    first = out.clone()
                    count += 1
                    worst_abs = max(worst_abs, max_abs)   # over all trials, as the leaderboard's column says
                    if rel >= worst_rel:
                        worst_rel, worst_case = rel, case.name
                else:
                    out = check_output(out, first, inputs)
                    _, _, same, reason = compare(out, first.double(), self.problem)
                    if not same:
                        raise IntegrityError("D105", f"second call on the same inputs differs: {reason}")
            if case.name == "default" and self.job.get("check_reference"):
                golds.append(gold)   # kept only where the problem itself is checked: large shapes are GBs
            previous = first
            del out, gold, pristine
        result = {"trials": count, "max_abs_err": worst_abs, "max_rel_err": worst_rel, "worst_case": worst_case}
        if self.job.get("check_reference") and is_near_constant(golds):
            result["near_constant"] = True
        return result

    # --- timing -------------------------------------------------------------------------------------
    def timing_sets(self, shape) -> list[list]:
        from harness.verify import derive_seed, make_inputs

        return [make_inputs(self.problem, shape, None, derive_seed(self.secret_seed, "timing", shape.name, i), self.device)
                for i in range(max(1, int(self.settings["input_sets"])))]

    def check_timing_outputs(self, sets: list, outputs: dict, check_id: str) -> None:
        from harness.verify import IntegrityError, check_output, compare, gold_output

        for index, out in outputs.items():
            gold = gold_output(self.gold_model, sets[index])
            try:
                out = check_output(out, gold.to(sets[index][0].dtype), sets[index])
            except Exception as exc:
                raise IntegrityError(check_id, f"timing output {index}: {exc}") from None
            _, _, ok, reason = compare(out, gold, self.problem)
            if not ok:
                raise IntegrityError(check_id, f"output produced while timing is wrong on fresh inputs: {reason}")

    def time(self, fn: Callable, shape, method: str) -> dict:
        from harness import timing
        from harness.verify import IntegrityError

        torch = self.torch
        sets = self.timing_sets(shape)
        live = [x.clone() for x in sets[0]]   # the buffers every call gets: addresses never change
        outputs: dict[int, object] = {}
        loaded = [0]

        def prepare(i: int) -> None:
            """Load set i's contents into the live buffers, outside the timed region."""
            loaded[0] = i % len(sets)
            for buffer, source in zip(live, sets[loaded[0]]):
                buffer.copy_(source)

        def call(i: int):
            out = fn(*live)
            outputs[loaded[0]] = out
            return out

        settings = self.settings
        with torch.no_grad():
            if self.device.type != "cuda":
                result = timing.time_cpu(call, settings, prepare)
                self.check_timing_outputs(sets, outputs, "D103")
                return {"timing": result.to_json(), "time_us": result.median_us}
            timing.warm_up(call, settings, self.synchronize, prepare)
            clock_start = timing.sm_clock_mhz(self.job.get("gpu"))
            waits: list[float] = []
            floors: list[float] = []
            scratch = torch.zeros(1, device=self.device)
            host = timing.time_host(call, int(settings["host_iters"]), self.synchronize, settings["budget_s"] / 2,
                                    prepare, waits, (lambda: scratch.add_(1.0), floors))
            host_median = statistics.median(host)
            wait_median = statistics.median(waits)
            excess_median = timing.host_excess(host, floors)
            events = None
            if method == "graph":
                calls = int(settings["graph_calls"])
                if host_median > 1000:   # a long eager call: one per graph keeps capture small
                    calls = 1
                prepare(0)
                graph, graph_outputs, flushes = timing.capture_timed_graph(call, calls, self.device,
                                                                           settings["l2_flush"])
                for index in range(len(sets)):   # every replay must compute on what the buffers hold now
                    prepare(index)
                    for out in graph_outputs:
                        out.fill_(float("nan"))
                    graph.replay()
                    self.synchronize()
                    self.check_timing_outputs(sets, {index: graph_outputs[-1]}, "D107")
                samples = timing.time_cuda_graph(graph, calls, settings, flushes)
                replays = timing.time_host(lambda i: graph.replay(), int(settings["host_iters"]), self.synchronize,
                                           settings["budget_s"] / 2)
                flush_replays = [0.0] if flushes is None else timing.time_host(
                    lambda i: flushes.replay(), len(replays), self.synchronize)
                # what a user of the graph pays per call, the flushes left out
                host_median = max(0.0, statistics.median(replays) - statistics.median(flush_replays)) / calls
                del graph, graph_outputs, flushes
            elif method == "host":
                samples = host + timing.time_host(call, max(0, int(settings["min_iters"]) - len(host)), self.synchronize,
                                                  prepare=prepare)
            else:
                outputs.clear()
                events = timing.time_cuda_events(call, settings, prepare)
                samples = events.device_us(settings["subtract_event_overhead"])
                self.check_timing_outputs(sets, outputs, "D103")
            result = timing.summarize(method, samples, host_median, events, settings["subtract_event_overhead"])
            clock_end = timing.sm_clock_mhz(self.job.get("gpu"))
            clocks = {"sm_clock_start_mhz": clock_start[0], "sm_clock_end_mhz": clock_end[0],
                      "sm_clock_max_mhz": clock_end[1]}
            low = [c for c in (clock_start[0], clock_end[0]) if c and clock_end[1] and c < 0.75 * clock_end[1]]
            if low:
                clocks["clock_flag"] = f"SM clock {min(low)} MHz under 75% of its {clock_end[1]} MHz maximum"
            # D106 (candidates; the baselines are the reference itself): work hidden on another stream or thread
            # is either still queued when the call returns, or costs host time beyond launching. A CPU busy with
            # other work slows a trivial launch timed right after each call as much, so it is taken out.
            if method != "host" and not self.job.get("baseline"):
                if timing.far_above(wait_median, result.median_us):
                    raise IntegrityError("D106", f"the synchronize after each call waited {wait_median:.1f} us for "
                                                 f"work queued by it, against device time {result.median_us:.1f} us: "
                                                 "work hidden from the timer")
                if timing.far_above(excess_median, result.median_us):
                    raise IntegrityError("D106", f"host time {excess_median:.1f} us per call beyond a trivial launch, "
                                                 f"against device time {result.median_us:.1f} us: work hidden from "
                                                 "the timer")
            return {"timing": result.to_json() | clocks | {"host_wait_median_us": round(wait_median, 3),
                                                            "host_excess_median_us": round(excess_median, 3)},
                    "time_us": result.median_us}

    # --- one shape ----------------------------------------------------------------------------------
    def run_shape(self, fn: Callable, shape, method: str) -> dict:
        from harness.verify import IntegrityError, WrongAnswer

        record = {"stage": "verify", "shape": shape.name, "status": "ok", "reason": ""}
        try:
            record.update(self.verify(fn, shape))
            record["stage"] = "time"
            record.update(self.time(fn, shape, method))
            record["stage"] = "done"
        except IntegrityError as exc:
            record.update(status="integrity", reason=str(exc), check=exc.check)
        except WrongAnswer as exc:
            record.update(status="wrong", reason=str(exc))
        except Exception as exc:
            from harness.timing import CaptureError

            if isinstance(exc, CaptureError):
                record.update(status="runtime_error", reason=str(exc))
            else:
                traceback.print_exc()
                record.update(status="runtime_error", reason=first_line(exc), context_lost=cuda_context_lost(exc))
        return record


class CompileTimeout(Exception):
    pass


def _alarm(signum, frame):
    raise CompileTimeout()


def baseline_callable(evaluation: Evaluation, baseline: str, shape, job: dict) -> tuple[Callable | None, str]:
    """The reference as a callable for a baseline, or None and the reason it is skipped."""
    torch = evaluation.torch
    if baseline == "eager":
        return evaluation.reference, ""
    if evaluation.device.type != "cuda":
        return None, "CUDA-only baseline on a CPU run"
    if baseline == "graph":
        return evaluation.reference, ""
    if baseline == "compile":
        allowed = job.get("compile_shapes") or []
        if shape.name not in allowed:
            return None, (f"torch.compile baseline runs only at shapes {allowed} (baselines.compile_shapes): "
                          "it unrolls the reference's Python loop over T")
        compiled = torch.compile(evaluation.reference)
        from harness.verify import make_inputs
        limit = int(job.get("compile_time_limit_s", 300))
        signal.signal(signal.SIGALRM, _alarm)
        signal.alarm(limit)
        try:
            with torch.no_grad():
                compiled(*make_inputs(evaluation.problem, shape, None, 0, evaluation.device))
            evaluation.synchronize()
        except CompileTimeout:
            return None, f"torch.compile took over {limit} s at this shape"
        finally:
            signal.alarm(0)
        return compiled, ""
    raise ValueError(baseline)


def run_evaluate(job: dict, emit: Emitter) -> None:
    shapes_wanted = job["shapes"]
    started = time.perf_counter()
    try:
        evaluation = Evaluation(job, emit)
    except Exception as exc:
        traceback.print_exc()
        for name in shapes_wanted:
            emit({"stage": "setup", "shape": name, "status": "runtime_error", "reason": f"harness setup: {first_line(exc)}"})
        return
    shapes = [evaluation.problem.shapes[name] for name in shapes_wanted]
    baseline = job.get("baseline")
    method = job["timing"]["method"]
    if job.get("warm_only"):   # fill torch.compile's on-disk caches; the timed worker comes later
        for shape in shapes:
            shape_started = time.perf_counter()
            fn, reason = baseline_callable(evaluation, baseline, shape, job)
            emit({"stage": "warm", "shape": shape.name, "status": "ok" if fn is not None else "skipped",
                  "reason": reason, "compile_s": time.perf_counter() - shape_started})
        return
    model = None
    if not baseline:
        try:
            module = import_candidate(job["candidate"]["path"], job["candidate"]["sha256"])
            model_class = getattr(module, "ModelNew", None)
            if model_class is None:
                raise AttributeError("module defines no ModelNew")
            model = model_class(*evaluation.problem.init_inputs).to(evaluation.device)
            if hasattr(model, "eval"):
                model.eval()
        except BaseException as exc:
            traceback.print_exc()
            status = "compile_error" if is_build_failure(exc) else "load_error"
            for shape in shapes:
                emit({"stage": "load", "shape": shape.name, "status": status, "reason": first_line(exc)})
            return
    load_s = time.perf_counter() - started
    for index, shape in enumerate(shapes):
        if baseline:
            if baseline == "graph":
                method = "graph"
            try:
                fn, skip_reason = baseline_callable(evaluation, baseline, shape, job)
            except Exception as exc:
                traceback.print_exc()
                fn, skip_reason = None, f"baseline failed: {first_line(exc)}"
            if fn is None:
                emit({"stage": "setup", "shape": shape.name, "status": "skipped", "reason": skip_reason})
                continue
        else:
            fn = model
        record = evaluation.run_shape(fn, shape, method)
        record["load_s"] = load_s
        emit(record)
        if record.pop("context_lost", False):
            for rest in shapes[index + 1:]:
                emit({"stage": "setup", "shape": rest.name, "status": "runtime_error",
                      "reason": f"not run: the CUDA context was lost at shape {shape.name}"})
            return


def die_with_runner(runner_pid: int | None) -> None:
    """Ask Linux to kill this worker when the runner dies, so a killed run leaves no orphan behind."""
    if not runner_pid or not sys.platform.startswith("linux"):
        return
    import ctypes

    try:
        ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGKILL)   # PR_SET_PDEATHSIG
    except (OSError, AttributeError):
        return
    if os.getppid() != runner_pid:   # the runner died before the request took effect
        os._exit(1)


def main() -> int:
    job = json.loads(sys.stdin.read())
    die_with_runner(job.get("runner_pid"))
    emit = Emitter(job["results_path"])
    if job["device"] == "cuda" and job.get("gpu") is not None:
        import torch
        torch.cuda.set_device(0)   # CUDA_VISIBLE_DEVICES already pins one GPU
    if job["mode"] == "build":
        run_build(job, emit)
    else:
        run_evaluate(job, emit)
    emit.handle.close()
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(0)   # skip interpreter teardown: a broken extension can crash in destructors


if __name__ == "__main__":
    sys.exit(main())
