"""The C++/CUDA texts and build flags a candidate hands to load_inline, as the integrity rules read them.

Input: a `CandidateSource`. Output: its sources with comments and string literals blanked (`cleaned`,
built once per candidate), pattern matches in them as `Finding`s (`scan`), the build flags
(`keyword_strings`), the host functions that take tensors (`host_bodies`) and inline PTX (`inline_ptx`).
"""
from __future__ import annotations

import ast
import re
from collections.abc import Iterator

from harness.rules import CandidateSource, Finding, SourceString, finding
from harness.rules.sources import CleanSource, _assignments, clean_cpp, python_line_of


def cleaned(source: CandidateSource) -> list[tuple[SourceString, CleanSource]]:
    cached = getattr(source.tree, "_harness_cleaned", None)
    if cached is None:
        cached = [(s, clean_cpp(s.text)) for s in source.sources]
        source.tree._harness_cleaned = cached
    return cached


def scan(source: CandidateSource, rule_id: str, pattern: re.Pattern, what: str, view: str = "code",
         group: int = 0) -> Iterator[Finding]:
    for src, clean in cleaned(source):
        text = getattr(clean, view)
        for match in pattern.finditer(text):
            token = " ".join(match.group(group).split())
            yield finding(rule_id, python_line_of(source.tree, src, match.start()), f"{what}: `{token}`")


def keyword_strings(source: CandidateSource, keywords: set[str]) -> Iterator[tuple[ast.Call, str]]:
    """Flags passed to load_inline under the given keywords, as strings."""
    from harness.rules.sources import resolve_strings
    names = _assignments(source.tree)
    for call in source.load_inline_calls:
        for keyword in call.keywords:
            if keyword.arg in keywords:
                for text in resolve_strings(keyword.value, names):
                    yield call, text


def host_bodies(code: str) -> Iterator[tuple[int, str, str]]:
    """(offset, parameter text, body text) of each C++ function taking a Tensor parameter."""
    for match in re.finditer(r"\)\s*(?:const\s*)?(?:noexcept\s*)?(?:->\s*[\w:<>]+\s*)?\{", code):
        close = match.start()
        depth, i = 0, close
        while i >= 0:
            if code[i] == ")":
                depth += 1
            elif code[i] == "(":
                depth -= 1
                if depth == 0:
                    break
            i -= 1
        if i < 0:
            continue
        name = re.search(r"(\w+)\s*$", code[:i])
        if not name or name.group(1) in {"if", "for", "while", "switch", "catch", "return", "sizeof", "decltype"}:
            continue
        params = code[i + 1:close]
        if "Tensor" not in params:
            continue
        start = match.end()
        depth, j = 1, start
        while j < len(code) and depth:
            depth += {"{": 1, "}": -1}.get(code[j], 0)
            j += 1
        yield start, params, code[start:j - 1]


def brace_depth(code: str, offset: int) -> int:
    return code.count("{", 0, offset) - code.count("}", 0, offset)


def inline_ptx(source: CandidateSource) -> Iterator[tuple[int, str]]:
    """(Python line, text) of every string literal in the sources that is an `asm(...)` statement's PTX."""
    for src, clean in cleaned(source):
        for offset, literal in clean.literals:
            statement = re.split(r"[;{}]", clean.code[max(0, offset - 300):offset])[-1]
            if re.search(r"\b(asm|__asm__|__asm)\b", statement):
                yield python_line_of(source.tree, src, offset), literal
