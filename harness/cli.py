"""Command line: `python -m harness run|check|rules`. The only module that prints or exits."""
from __future__ import annotations

import argparse
import dataclasses
import faulthandler
import json
import logging
import signal
import sys
from pathlib import Path

from rich import box
from rich.console import Console
from rich.table import Table
from rich.text import Text

from harness.config import Config, load_config
from harness.discovery import discover
from harness.env import EnvProbeError, probe_env
from harness.leaderboard import best_baselines, format_time, summary_cells
from harness.kernelbench import check_tolerance
from harness.problem import Problem, ProblemError, load_problem, override_tolerance
from harness.progress import make_reporter
from harness.rules import RULES, check_source, is_accepted, parse_candidate

EXIT_OK, EXIT_FAILED, EXIT_USAGE = 0, 1, 2


class UsageError(Exception):
    pass


class Parser(argparse.ArgumentParser):
    def error(self, message: str) -> None:   # one line and exit 2, never a usage dump
        raise UsageError(f"{self.prog}: {message}")


def parse_gpus(text: str) -> list[int] | str:
    if text == "all":
        return "all"
    try:
        gpus = [int(part) for part in text.split(",") if part.strip()]
    except ValueError:
        raise UsageError(f"--gpus: expected 'all' or a list like 0,1, got {text!r}") from None
    if not gpus or any(g < 0 for g in gpus):
        raise UsageError(f"--gpus: expected 'all' or a list like 0,1, got {text!r}")
    return gpus


def parse_shapes(text: str | None, problem: Problem) -> list[str] | None:
    """The flag's names, refused here (blaming the flag, not the problem file) before any work."""
    if text is None:
        return None
    names = [part.strip() for part in text.split(",") if part.strip()]
    known = ", ".join(problem.shapes)
    if not names:
        raise UsageError(f"--shapes: expected comma-separated shape names among {known}, got {text!r}")
    unknown = [name for name in names if name not in problem.shapes]
    if unknown:
        raise UsageError(f"--shapes: expected shape names among {known}, got unknown {unknown[0]!r}")
    return names


def tolerance_flags(args) -> dict[str, float]:
    """--rtol/--atol as given, each a non-negative finite number."""
    flags = {}
    for key in ("rtol", "atol"):
        value = getattr(args, key)
        if value is not None:
            try:
                flags[key] = check_tolerance("", f"--{key}", value)
            except ProblemError as exc:
                raise UsageError(str(exc)) from None
    return flags


def judged_with(problem: Problem, config: Config, flags: dict[str, float]) -> tuple[Problem, Config]:
    """The tolerance flags applied. They reach the judge in the config's judge section, so the config the records
    refer to (configs.jsonl) says which tolerance judged them, and another tolerance re-evaluates."""
    if not flags:
        return problem, config
    if problem.input_source != "get_inputs":
        raise UsageError(f"--{next(iter(flags))}: expected a KernelBench problem file (.py); the YAML problem "
                         f"{problem.path} sets verify.tolerance")
    data = config.data | {"judge": config.data["judge"] | {"tolerance": flags}}
    return override_tolerance(problem, **flags), dataclasses.replace(config, data=data)


def run_device(args):
    """The GPUs to use and the probed environment, checked against each other."""
    gpus = parse_gpus(args.gpus)
    env = probe_env(args.device)
    if args.device == "cuda" and env.device != "cuda":
        raise UsageError("--device cuda: no CUDA device is visible")
    if gpus == "all":
        gpus = list(range(max(1, env.gpu_count)))
    elif env.device == "cuda" and max(gpus) >= env.gpu_count:
        raise UsageError(f"--gpus: expected GPU indices below {env.gpu_count}, got {args.gpus}")
    return gpus, env


def command_run(args, console: Console) -> int:
    if Path(args.problem).is_dir():
        return command_run_folder(args, console)
    problem = load_problem(args.problem)
    config = load_config(args.config)
    problem, config = judged_with(problem, config, tolerance_flags(args))
    folder = Path("candidates") / problem.name
    candidates = discover(args.candidates) if args.candidates else discover([folder], origin="candidates folder") \
        if folder.exists() else []
    shapes_requested = parse_shapes(args.shapes, problem)
    gpus, env = run_device(args)
    return evaluate_problem(args, console, problem, config, env, gpus, candidates, shapes_requested, Path(args.results))


def evaluate_problem(args, console: Console, problem: Problem, config: Config, env, gpus: list[int], candidates: list,
                     shapes_requested: list[str] | None, results: Path) -> int:
    from harness.runner import RunOptions, default_shapes, run

    shapes = default_shapes(problem, config, env.device, shapes_requested)
    console.print(f"[bold]{problem.name}[/]: {len(candidates)} candidates, shapes {', '.join(shapes)}, "
                  f"device {env.device_name} ({env.device}), timing "
                  f"{config.get('timing.method') if env.device == 'cuda' else 'cpu (wall time per call)'}")
    options = RunOptions(problem, config, env, candidates, shapes, results, gpus=list(gpus), fresh=args.fresh,
                         build_only=args.build_only, backend=args.backend, ray_address=args.ray_address)
    try:
        with make_reporter(console) as reporter:
            summary = run(options, reporter)
    except KeyboardInterrupt:
        console.print(f"[yellow]interrupted[/]: finished records are kept in {results / problem.name / 'records.jsonl'}; "
                      "run the same command again to resume")
        return 130
    if args.build_only:
        console.print(f"built in {summary.wall_s:.1f} s; nothing evaluated (--build-only)")
        return EXIT_OK
    print_table(console, problem.name, summary)
    console.print(f"wrote {summary.output_dir}/leaderboard.md (.csv, .json) and records.jsonl; "
                  f"{summary.evaluated} new records, {summary.reused} reused, in {summary.wall_s:.1f} s")
    return EXIT_OK


def command_run_folder(args, console: Console) -> int:
    """Each KernelBench problem file in the folder (not below it) against the candidates in candidates/<stem>/
    (or --candidates ROOT: ROOT/<stem>/), its results in <results>/<folder>/<stem>/; then the suite's summary,
    <results>/<folder>/summary.md and .json (suite.py). Every file is loaded before any work starts."""
    from harness import signing
    from harness.kernelbench import find_problems
    from harness.suite import summarize, write_summary

    folder = Path(args.problem)
    paths = find_problems(folder)
    if not paths:
        raise UsageError(f"{folder}: expected a folder holding KernelBench problem files (*.py), found none")
    if args.candidates and (len(args.candidates) != 1 or not Path(args.candidates[0]).is_dir()):
        raise UsageError(f"--candidates: with a folder of problems, expected one folder holding a folder of candidates "
                         f"per problem (ROOT/<problem>/), got {' '.join(args.candidates)}")
    root = Path(args.candidates[0]) if args.candidates else Path("candidates")
    flags = tolerance_flags(args)
    judged = [judged_with(load_problem(path), load_config(args.config), flags) for path in paths]
    problems, config = [problem for problem, _ in judged], judged[0][1]
    shapes_requested = {problem.name: parse_shapes(args.shapes, problem) for problem in problems}
    gpus, env = run_device(args)
    suite = folder.resolve().name
    results = Path(args.results) / suite
    for problem in problems:
        own = root / problem.name
        candidates = discover([own], origin="candidates folder") if own.is_dir() else []
        code = evaluate_problem(args, console, problem, config, env, gpus, candidates, shapes_requested[problem.name],
                                results)
        if code != EXIT_OK:
            return code
    if args.build_only:
        return EXIT_OK
    summary = summarize(results, [problem.name for problem in problems], suite, signing.record_key())
    write_summary(results, summary)
    print_suite(console, summary)
    console.print(f"wrote {results}/summary.md (.json)")
    return EXIT_OK


def print_suite(console: Console, summary) -> None:
    """The suite's summary: each problem's best correct candidate and its speedup, then fast_p and the geomean."""
    table = Table(title=f"{summary.suite}: {len(summary.problems)} problems", box=box.SIMPLE_HEAD, show_edge=False)
    for column in ("problem", "status", "correct", "eager", "best", "time", "speedup"):
        table.add_column(column, no_wrap=True)
    for p in summary.problems:
        table.add_row(Text(p.problem), p.status, f"{p.correct}/{p.candidates}", format_time(p.eager_us),
                      Text(p.best_candidate or "—"), format_time(p.best_us),
                      "—" if p.speedup is None else f"{p.speedup:.2f}×")
    console.print(table)
    fast = ", ".join(f"fast_{p} {value:.2f}" for p, value in summary.fast_p.items())
    geomean = "—" if summary.geomean_speedup is None else f"{summary.geomean_speedup:.2f}×"
    console.print(f"{fast}; geomean speedup over eager {geomean} ({summary.correct_problems} of "
                  f"{len(summary.problems)} problems with a correct candidate)")


SUMMARY_WIDTH = 120   # the console summary fits this many columns; the files keep every column


def print_table(console: Console, name: str, summary) -> None:
    """The run's summary: rank, candidate, status, each shape's time with its 95% interval, the geomean
    speedups over eager and over the best baseline, the reason cut to fit. leaderboard.md has the rest."""
    width = min(console.width, SUMMARY_WIDTH)
    header, body = summary_cells(summary.rows, summary.shapes, width)
    fitted = [max([len(header[i])] + [len(cells[i]) for cells in body]) for i in range(len(header))]
    fitted[1] = min(fitted[1], 24)                        # candidate
    fitted[2] = min(fitted[2], 16)                        # status (check)
    for i in range(3, len(header) - 1):
        fitted[i] = min(fitted[i], 12)                    # times with their interval, speedups
    fitted[-1] = max(8, width - sum(fitted[:-1]) - 2 * (len(header) - 1))   # the reason gets what is left
    table = Table(title=f"{name} leaderboard", box=box.SIMPLE_HEAD, show_edge=False, pad_edge=False, padding=(0, 1, 0, 0))
    for column, column_width in zip(header, fitted):
        table.add_column(column, no_wrap=True, overflow="ellipsis", width=column_width)
    for cells in body:
        table.add_row(*(Text(cell) for cell in cells))   # reasons are candidate text, never markup
    console.print(table)
    baselines = best_baselines(summary.rows, summary.shapes)
    console.print("time: median per call ±half its 95% interval; `2=`: intervals overlap at every shape; "
                  "*: host-bound, timed by the host clock." + (f" Best baseline: {baselines}." if baselines else "")
                  + " Every column: leaderboard.md", style="dim", width=width)


def command_compare(args, console: Console) -> int:
    from harness.compare import CompareError, compare, describe, geomean_ratio, percent

    try:
        comparisons = compare(Path(args.before), Path(args.after))
    except CompareError as exc:
        raise UsageError(str(exc)) from None
    if args.json:
        print(json.dumps([c.to_json() for c in comparisons], indent=2))
        return EXIT_OK
    table = Table(title=f"{args.after} against {args.before}", box=box.SIMPLE_HEAD)
    for column in ("candidate", "shape", "before", "after", "change", "after / before [95%]", "verdict"):
        table.add_column(column, no_wrap=column != "candidate")
    for c in comparisons:
        name = c.candidate if c.same_source else f"{c.candidate} (source changed)"
        table.add_row(Text(name), c.shape, format_time(c.before_us), format_time(c.after_us), percent(c.ratio),
                      describe(c), c.verdict)
    console.print(table)
    overall = geomean_ratio(comparisons)
    counts = {v: sum(c.verdict == v for c in comparisons) for v in ("faster", "slower", "same", "unknown")}
    unknown = f", {counts['unknown']} unknown (too few samples for an interval)" if counts["unknown"] else ""
    console.print(f"{len(comparisons)} pairs: {counts['faster']} faster, {counts['slower']} slower, {counts['same']} the "
                  f"same{unknown}; geometric mean after / before {overall:.3f}")
    return EXIT_OK


def command_report(args, console: Console) -> int:
    from harness.runner import report

    problem = load_problem(args.problem)
    summary = report(problem, Path(args.results))
    print_table(console, problem.name, summary)
    console.print(f"rewrote {summary.output_dir}/leaderboard.md (.csv, .json) from {summary.reused} records")
    return EXIT_OK


def check_file(candidate: str, problem: str | None) -> tuple[Path, list]:
    reference_module = load_problem(problem).reference_module if problem else ""
    path = Path(candidate)
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise UsageError(f"{path}: candidate: expected a readable UTF-8 .py file ({exc.__class__.__name__})") from None
    return path, check_source(parse_candidate(str(path), text, reference_module))


def command_check(args, console: Console) -> int:
    try:
        path, findings = check_file(args.candidate, args.problem)
    except (UsageError, ProblemError) as exc:
        if not args.json:
            raise
        # whoever asked for JSON parses stdout, also when the file could not be checked
        print(json.dumps({"accepted": False, "findings": [], "error": str(exc)}, indent=2))
        return EXIT_USAGE
    accepted = is_accepted(findings)
    if args.json:
        print(json.dumps({"accepted": accepted, "findings": [f.to_json() for f in findings]}, indent=2))
    else:
        for f in findings:
            console.print(f"{path}:{f.line}: {f.rule} {f.severity}: {f.message}", markup=False, highlight=False)
        console.print("accepted" if accepted else "rejected")
    return EXIT_OK if accepted else EXIT_FAILED


def command_rules(args, console: Console) -> int:
    for rule_id in sorted(RULES):
        spec = RULES[rule_id]
        console.print(f"{rule_id}  {spec.severity:<7}  {spec.rationale}", markup=False, highlight=False)
    return EXIT_OK


RUN_EXIT_CODES = """exit codes:
  0    done: leaderboards written (with --build-only: compiled, nothing evaluated); a failing
       candidate is a row of the leaderboard, not an exit code
  2    refused, one line on stderr: bad input (flag, problem or config file), --device cuda with
       no GPU visible, a failed environment probe, or a reference whose output ignores its inputs
  130  interrupted (Ctrl-C): finished records are kept; the same command resumes"""


def make_parser() -> Parser:
    parser = Parser(prog="harness", description="Check, compile, verify and time candidate kernels.")
    sub = parser.add_subparsers(dest="command", required=True, parser_class=Parser)
    run = sub.add_parser("run", help="evaluate candidates and write leaderboards", epilog=RUN_EXIT_CODES,
                         formatter_class=argparse.RawDescriptionHelpFormatter)
    run.add_argument("problem", help="problem YAML (e.g. problems/scalar_gated_delta.yaml), KernelBench problem file "
                                     "(.py), or a folder of KernelBench problem files")
    run.add_argument("--candidates", nargs="+", metavar="FILE_OR_DIR",
                     help="default: candidates/<problem>/; with a folder of problems, one folder ROOT holding "
                          "ROOT/<problem>/ (default: candidates/)")
    run.add_argument("--shapes", help="comma-separated shape names (default: configs' evaluate.shapes)")
    run.add_argument("--device", choices=["auto", "cuda", "cpu"], default="auto",
                     help="where candidates run: cuda (refused when no GPU is visible), cpu (CUDA candidates are "
                          "checked, then skipped without compiling; --build-only compiles them), or auto: cuda when a "
                          "GPU is visible (default)")
    run.add_argument("--gpus", default="0", help="'all' or GPU indices like 0,1: one evaluation worker per GPU")
    run.add_argument("--results", default="results", help="results folder (default: results/)")
    run.add_argument("--config", help="config YAML (default: configs/default.yaml)")
    run.add_argument("--fresh", action="store_true", help="re-evaluate instead of reusing matching records")
    run.add_argument("--build-only", action="store_true", help="check and compile, evaluate nothing")
    run.add_argument("--rtol", type=float, help="KernelBench problems: relative tolerance (default: by dtype, "
                                                "fp32 1e-4, fp16/bf16 1e-2, or <stem>.tolerance.yaml)")
    run.add_argument("--atol", type=float, help="KernelBench problems: absolute tolerance (default: as --rtol)")
    run.add_argument("--backend", choices=["local", "ray"], default="local",
                     help="where builds and evaluations run: this machine (default), or Ray tasks (pip install .[ray])")
    run.add_argument("--ray-address", metavar="auto|HOST:PORT",
                     help="--backend ray: the cluster to join (default: start a local Ray instance)")
    check = sub.add_parser("check", help="statically check one candidate without running it")
    check.add_argument("candidate")
    check.add_argument("--problem", help="problem YAML, to know its reference module")
    check.add_argument("--json", action="store_true", help="print {accepted, findings} as JSON")
    sub.add_parser("rules", help="list the static rules")
    report = sub.add_parser("report", help="rebuild the leaderboards from records.jsonl")
    report.add_argument("problem", help="problem YAML")
    report.add_argument("--results", default="results", help="results folder (default: results/)")
    compare = sub.add_parser("compare", help="two runs side by side: each (candidate, shape)'s ratio, its interval, "
                                             "and faster / slower / same")
    compare.add_argument("before", help="records.jsonl, or a results folder (of one problem, or of several)")
    compare.add_argument("after", help="the same, for the run to compare with it")
    compare.add_argument("--json", action="store_true", help="print the comparisons as JSON")
    return parser


def main(argv: list[str] | None = None) -> int:
    if hasattr(signal, "SIGUSR1"):   # `kill -USR1 <pid>` prints every thread's stack: a stuck run explains itself
        faulthandler.register(signal.SIGUSR1, all_threads=True)
    logging.basicConfig(level=logging.WARNING, format="%(levelname)s %(name)s: %(message)s")
    console = Console(stderr=False, width=None if sys.stdout.isatty() else 200)
    try:
        args = make_parser().parse_args(argv)
        handler = {"run": command_run, "check": command_check, "rules": command_rules,
                   "report": command_report, "compare": command_compare}[args.command]
        return handler(args, console)
    except (UsageError, ProblemError, EnvProbeError) as exc:
        print(f"error: {exc}", file=sys.stderr)   # one unwrapped line
        return EXIT_USAGE
