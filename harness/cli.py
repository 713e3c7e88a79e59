"""Command line: `python -m harness run|check|rules`. The only module that prints or exits."""
from __future__ import annotations

import argparse
import faulthandler
import json
import logging
import signal
import sys
from pathlib import Path

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table
from rich.text import Text

from harness.config import load_config
from harness.discovery import discover
from harness.env import EnvProbeError, probe_env
from harness.leaderboard import table_cells
from harness.problem import ProblemError, load_problem, select_shapes
from harness.rules import RULES, check_source, is_accepted, parse_candidate

EXIT_OK, EXIT_FAILED, EXIT_USAGE = 0, 1, 2


class UsageError(Exception):
    pass


class Parser(argparse.ArgumentParser):
    def error(self, message: str) -> None:   # one line and exit 2, never a usage dump
        raise UsageError(f"{self.prog}: {message}")


class RichReporter:
    def __init__(self, console: Console):
        self.console = console
        self.progress = Progress(TextColumn("{task.fields[phase]:>8}"), BarColumn(), MofNCompleteColumn(),
                                 TimeElapsedColumn(), TextColumn("{task.description}"), console=console,
                                 transient=False)
        self.tasks: dict[str, int] = {}

    def __enter__(self):
        self.progress.start()
        return self

    def __exit__(self, *exc):
        self.progress.stop()

    def phase(self, name: str, total: int) -> None:
        self.tasks[name] = self.progress.add_task("", total=max(total, 0), phase=name)

    def advance(self, name: str, description: str) -> None:
        self.progress.update(self.tasks[name], advance=1, description=description)

    def note(self, message: str) -> None:
        self.progress.console.print(message)


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


def command_run(args, console: Console) -> int:
    from harness.runner import RunOptions, default_shapes, run

    problem = load_problem(args.problem)
    config = load_config(args.config)
    folder = Path("candidates") / problem.name
    candidates = discover(args.candidates) if args.candidates else discover([folder], origin="candidates folder") \
        if folder.exists() else []
    shapes_requested = [s.strip() for s in args.shapes.split(",") if s.strip()] if args.shapes else None
    if shapes_requested:
        select_shapes(problem, shapes_requested)   # refuse unknown names before any work
    gpus = parse_gpus(args.gpus)
    env = probe_env(args.device)
    if args.device == "cuda" and env.device != "cuda":
        raise UsageError("--device cuda: no CUDA device is visible")
    if gpus == "all":
        gpus = list(range(max(1, env.gpu_count)))
    elif env.device == "cuda" and max(gpus) >= env.gpu_count:
        raise UsageError(f"--gpus: expected GPU indices below {env.gpu_count}, got {args.gpus}")
    shapes = default_shapes(problem, config, env.device, shapes_requested)
    console.print(f"[bold]{problem.name}[/]: {len(candidates)} candidates, shapes {', '.join(shapes)}, "
                  f"device {env.device_name} ({env.device}), timing {config.get('timing.method')}")
    options = RunOptions(problem, config, env, candidates, shapes, Path(args.results), gpus=list(gpus), fresh=args.fresh,
                         build_only=args.build_only)
    try:
        with RichReporter(console) as reporter:
            summary = run(options, reporter)
    except KeyboardInterrupt:
        console.print(f"[yellow]interrupted[/]: finished records are kept in {Path(args.results) / problem.name / 'records.jsonl'}; "
                      "run the same command again to resume")
        return 130
    if args.build_only:
        console.print(f"built in {summary.wall_s:.1f} s; nothing evaluated (--build-only)")
        return EXIT_OK
    print_table(console, problem.name, summary)
    console.print(f"wrote {summary.output_dir}/leaderboard.md (.csv, .json) and records.jsonl; "
                  f"{summary.evaluated} new records, {summary.reused} reused, in {summary.wall_s:.1f} s")
    return EXIT_OK


def print_table(console: Console, name: str, summary) -> None:
    header, body = table_cells(summary.rows, summary.shapes)
    table = Table(title=f"{name} leaderboard", show_lines=False)
    for column in header:
        table.add_column(column, overflow="fold", max_width=60 if column == "reason" else None)
    for cells in body:
        table.add_row(*(Text(cell) for cell in cells))   # reasons are candidate text, never markup
    console.print(table)


def command_report(args, console: Console) -> int:
    from harness.runner import report

    problem = load_problem(args.problem)
    summary = report(problem, Path(args.results))
    print_table(console, problem.name, summary)
    console.print(f"rewrote {summary.output_dir}/leaderboard.md (.csv, .json) from {summary.reused} records")
    return EXIT_OK


def command_check(args, console: Console) -> int:
    reference_module = ""
    if args.problem:
        reference_module = load_problem(args.problem).reference_module
    path = Path(args.candidate)
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise UsageError(f"{path}: candidate: expected a readable UTF-8 .py file ({exc.__class__.__name__})") from None
    findings = check_source(parse_candidate(str(path), text, reference_module))
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


def make_parser() -> Parser:
    parser = Parser(prog="harness", description="Check, compile, verify and time candidate kernels.")
    sub = parser.add_subparsers(dest="command", required=True, parser_class=Parser)
    run = sub.add_parser("run", help="evaluate candidates and write leaderboards")
    run.add_argument("problem", help="problem YAML, e.g. problems/scalar_gated_delta.yaml")
    run.add_argument("--candidates", nargs="+", metavar="FILE_OR_DIR", help="default: candidates/<problem>/")
    run.add_argument("--shapes", help="comma-separated shape names (default: configs' evaluate.shapes)")
    run.add_argument("--device", choices=["auto", "cuda", "cpu"], default="auto")
    run.add_argument("--gpus", default="0", help="'all' or GPU indices like 0,1: one evaluation worker per GPU")
    run.add_argument("--results", default="results", help="results folder (default: results/)")
    run.add_argument("--config", help="config YAML (default: configs/default.yaml)")
    run.add_argument("--fresh", action="store_true", help="re-evaluate instead of reusing matching records")
    run.add_argument("--build-only", action="store_true", help="check and compile, evaluate nothing")
    check = sub.add_parser("check", help="statically check one candidate without running it")
    check.add_argument("candidate")
    check.add_argument("--problem", help="problem YAML, to know its reference module")
    check.add_argument("--json", action="store_true", help="print {accepted, findings} as JSON")
    sub.add_parser("rules", help="list the static rules")
    report = sub.add_parser("report", help="rebuild the leaderboards from records.jsonl")
    report.add_argument("problem", help="problem YAML")
    report.add_argument("--results", default="results", help="results folder (default: results/)")
    return parser


def main(argv: list[str] | None = None) -> int:
    if hasattr(signal, "SIGUSR1"):   # `kill -USR1 <pid>` prints every thread's stack: a stuck run explains itself
        faulthandler.register(signal.SIGUSR1, all_threads=True)
    logging.basicConfig(level=logging.WARNING, format="%(levelname)s %(name)s: %(message)s")
    console = Console(stderr=False, width=None if sys.stdout.isatty() else 200)
    try:
        args = make_parser().parse_args(argv)
        handler = {"run": command_run, "check": command_check, "rules": command_rules,
                   "report": command_report}[args.command]
        return handler(args, console)
    except (UsageError, ProblemError, EnvProbeError) as exc:
        print(f"error: {exc}", file=sys.stderr)   # one unwrapped line
        return EXIT_USAGE
