"""Contract rules (IDs S0xx): is this file a candidate at all?"""
from __future__ import annotations

import ast
import re

from harness.rules import CandidateSource, finding, rule

GLOBAL_KERNEL = re.compile(r"__global__")


@rule("S001")
def parses(source: CandidateSource):
    """The file must be valid Python: nothing else can be checked or run otherwise."""
    if source.tree is None:
        yield finding("S001", source.syntax_error_line, f"syntax error: {source.syntax_error}")


@rule("S002")
def defines_model_new(source: CandidateSource):
    """The file must define `class ModelNew` at module level: the harness builds and calls it."""
    for node in source.tree.body:
        if isinstance(node, ast.ClassDef) and node.name == "ModelNew":
            return
    yield finding("S002", 1, "no module-level `class ModelNew` defined")


@rule("S003")
def calls_load_inline(source: CandidateSource):
    """The kernel must be compiled by torch.utils.cpp_extension.load_inline, so the harness owns the build."""
    if not source.load_inline_calls:
        yield finding("S003", 1, "no call to torch.utils.cpp_extension.load_inline")


@rule("S004")
def cuda_sources_hold_a_kernel(source: CandidateSource):
    """A CUDA candidate's sources must define a `__global__` kernel: otherwise no kernel of its own runs."""
    cuda_calls = [c for c in source.load_inline_calls if any(k.arg == "cuda_sources" for k in c.keywords)
                  or len(c.args) > 2]
    if not cuda_calls:
        return
    cuda_texts = [s.text for s in source.sources if s.kind == "cuda"]
    if not cuda_texts:
        yield finding("S004", cuda_calls[0].lineno, "cuda_sources could not be resolved to string constants")
    elif not any(GLOBAL_KERNEL.search(text) for text in cuda_texts):
        yield finding("S004", cuda_calls[0].lineno, "cuda_sources define no __global__ kernel")
