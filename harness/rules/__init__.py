"""Static check of a candidate file: source text in, a sorted list of `Finding`s out.

Rules are small pure functions registered with a stable ID and a severity. Each takes a parsed
`CandidateSource` and yields `Finding`s; the first paragraph of its docstring is its rationale, shown
by `harness rules`. A finding of severity `error` rejects the candidate; `warning` is shown only.

A few rules read what the build produced instead of the source (stage "build"): they take the path
of the built extension library, and the build stage runs them (`check_library`); `check_source`
runs only the source-stage ones. All share one registry, one ID space and `harness rules`.
"""
from __future__ import annotations

import ast
import inspect
from dataclasses import dataclass, field
from typing import Callable, Iterable

ERROR = "error"
WARNING = "warning"


@dataclass(frozen=True)
class Finding:
    rule: str
    severity: str
    line: int
    message: str

    def to_json(self) -> dict:
        return {"rule": self.rule, "severity": self.severity, "line": self.line, "message": self.message}


@dataclass(frozen=True)
class SourceString:
    """One C++/CUDA source text passed to load_inline, with the line of the call that passed it."""
    kind: str          # "cpp" or "cuda"
    text: str
    line: int


@dataclass
class CandidateSource:
    """A candidate's text with its AST and the extension sources it hands to load_inline."""
    path: str
    text: str
    tree: ast.Module | None
    syntax_error: str | None = None
    syntax_error_line: int = 0
    load_inline_calls: list[ast.Call] = field(default_factory=list)
    sources: list[SourceString] = field(default_factory=list)
    reference_module: str = ""     # stem of the problem's reference file, when known

    @property
    def uses_cuda(self) -> bool:
        return any(s.kind == "cuda" for s in self.sources) or any(
            kw.arg == "cuda_sources" for call in self.load_inline_calls for kw in call.keywords
        )


Rule = Callable[[CandidateSource], Iterable[Finding]]
SOURCE, BUILD = "source", "build"      # what a rule reads: the candidate's text, or its built library


@dataclass(frozen=True)
class RuleSpec:
    id: str
    severity: str
    func: Callable[..., Iterable[Finding]]
    stage: str = SOURCE

    @property
    def rationale(self) -> str:
        paragraph = inspect.cleandoc(self.func.__doc__ or "").split("\n\n")[0]
        return " ".join(paragraph.split())


RULES: dict[str, RuleSpec] = {}


def rule(rule_id: str, severity: str = ERROR, stage: str = SOURCE) -> Callable[[Rule], Rule]:
    """Register a rule under a stable ID; IDs never change meaning once published."""
    def register(func: Rule) -> Rule:
        if rule_id in RULES:
            raise ValueError(f"duplicate rule id {rule_id}")
        RULES[rule_id] = RuleSpec(rule_id, severity, func, stage)
        return func
    return register


def finding(spec_id: str, line: int, message: str) -> Finding:
    return Finding(spec_id, RULES[spec_id].severity, int(line or 0), message)


def parse_candidate(path: str, text: str, reference_module: str = "") -> CandidateSource:
    from harness.rules.sources import collect_sources, find_load_inline_calls

    try:
        tree = ast.parse(text, filename=path)
    except SyntaxError as exc:
        return CandidateSource(path, text, None, syntax_error=str(exc.msg), syntax_error_line=exc.lineno or 0,
                               reference_module=reference_module)
    source = CandidateSource(path, text, tree, reference_module=reference_module)
    source.load_inline_calls = find_load_inline_calls(tree)
    source.sources = collect_sources(tree, source.load_inline_calls)
    return source


def check_source(source: CandidateSource) -> list[Finding]:
    findings: list[Finding] = []
    for rule_id in sorted(RULES):
        spec = RULES[rule_id]
        if spec.stage != SOURCE or source.tree is None and rule_id != "S001":
            continue
        findings.extend(spec.func(source))
    return sorted(findings, key=lambda f: (f.severity != ERROR, f.line, f.rule))


def check_text(path: str, text: str, reference_module: str = "") -> list[Finding]:
    return check_source(parse_candidate(path, text, reference_module))


def check_library(library) -> list[Finding]:
    """Run the build-stage rules on one built extension library (a path to a .so)."""
    findings: list[Finding] = []
    for rule_id in sorted(RULES):
        if RULES[rule_id].stage == BUILD:
            findings.extend(RULES[rule_id].func(library))
    return sorted(findings, key=lambda f: (f.severity != ERROR, f.rule, f.message))


def is_accepted(findings: Iterable[Finding]) -> bool:
    return not any(f.severity == ERROR for f in findings)


def _load_rule_modules() -> None:
    from harness.rules import contract, integrity, symbols  # noqa: F401  (importing registers their rules)


_load_rule_modules()
