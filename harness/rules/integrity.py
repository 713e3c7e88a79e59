"""Integrity rules (IDs I1xx): catch candidates that get credit without computing the answer.

Input: a parsed `CandidateSource`. Output: `Finding`s. Python is read through its AST; the C++/CUDA
texts handed to load_inline are read with comments and string literals blanked (`clean_cpp`), so
a comment that mentions a forbidden word trips nothing. One error ID per class of cheat, and a
few warning IDs (I108, I112-I116, I118) for things that are legitimate often enough that a person
should look, or that verification decides anyway.

Reachability: PyTorch math is only rejected in `ModelNew.forward` and what it calls in the same
file (helper functions, methods, classes it instantiates); `__init__` and module-level code may
use PyTorch freely. A value counts as a tensor ("tainted") if it is a forward argument or derived
from one; `.shape`, `.size()`, `.numel()` and friends give plain ints, so shape arithmetic is fine.

What the rules share lives beside them: `analysis` (Python), `cpp` (C++/CUDA) and `vocabulary`.
"""
from __future__ import annotations

import ast
import re
from typing import Iterable, Iterator

from harness.rules import WARNING, CandidateSource, Finding, finding, rule
from harness.rules.analysis import (Analysis, Function, analysis_of, call_tail, dotted, module_matches,
                                    param_names, starts)
from harness.rules.cpp import brace_depth, cleaned, host_bodies, inline_ptx, keyword_strings, scan
from harness.rules.sources import _assignments, python_line_of, source_arguments, unresolved_parts
from harness.rules.vocabulary import (ASM_PRECISION, ASM_SPLIT_MMA, ASM_TF32, CACHE_DECORATORS, COMPUTE_METHODS,
                                      CPP_ALLOWED_ATEN, CPP_ATEN_CALL, CPP_ATEN_DEVICE_ALLOWED,
                                      CPP_ATEN_DEVICE_CALL, CPP_AUTO_TENSOR, CPP_COMPUTE_NAMESPACE, CPP_CONCURRENCY,
                                      CPP_CONCURRENCY_INCLUDES, CPP_DEFINE, CPP_DEVICE_GLOBAL, CPP_DEVICE_SYNC,
                                      CPP_GLOBAL_TENSOR, CPP_INCLUDE, CPP_IO, CPP_IO_INCLUDES, CPP_IO_OPEN,
                                      CPP_LIBRARIES, CPP_OBFUSCATION, CPP_PARALLEL_WARN, CPP_PRECISION,
                                      CPP_PRECISION_INCLUDES, CPP_STATIC_STATE, CPP_STATIC_TENSOR, CPP_STREAMS,
                                      CPP_TEMPLATE_LIBRARIES, CPP_TENSOR_DECL, CPP_TENSOR_METHOD, CPP_TF32,
                                      CPP_TOKEN_PASTING, CPP_TORCH_LIBRARY_ATEN, CPP_USING_ATEN, DUNDER_ARITHMETIC,
                                      ENV_MUTATORS, FOREIGN_BACKENDS, FOREIGN_LDFLAGS, FOREIGN_MATH_MODULES,
                                      IMPERSONATING_DUNDERS, LAZY_NAMES, LAZY_QUALNAMES, LIBRARY_LDFLAGS, MUTATORS,
                                      NN_ALLOWED, PRECISION_FLAGS, PY_CONCURRENCY, PY_CONCURRENCY_CALLS,
                                      PY_IO_BUILTINS, PY_IO_CALLS, PY_IO_MODULES, PY_OBFUSCATION_BUILTINS,
                                      PY_OBFUSCATION_MODULES, PY_PRECISION_FLAGS, PY_PRECISION_METHODS,
                                      PY_PRECISION_QUALNAMES, PY_STREAMS, PY_STREAM_METHODS, PY_TAMPER_MODULES,
                                      PY_TAMPER_QUALNAMES, REDUCING_BUILTINS, SCALAR_ATTRS, SCALAR_METHODS,
                                      TAMPER_ATTRS, TAMPER_METHODS, TORCH_ALLOWED, TORCH_NON_COMPUTE_PREFIXES)


def _unique(findings: Iterable[Finding]) -> Iterator[Finding]:
    seen = set()
    for item in findings:
        key = (item.rule, item.line, item.message)
        if key not in seen:
            seen.add(key)
            yield item


# ===== the rules ===============================================================================

@rule("I101")
def pytorch_computes_answer(source: CandidateSource):
    """ModelNew.forward (and what it calls) may allocate, reshape and launch, but not compute in PyTorch."""
    analysis = analysis_of(source)
    out = []
    for entry, node in analysis.in_reachable():
        if isinstance(node, (ast.Name, ast.Attribute)):
            parent = analysis.parents.get(node)
            if isinstance(parent, ast.Attribute) and parent.value is node:
                continue
            name = analysis.qualname(node)
            message = _torch_compute(name) or _foreign_call(name, analysis, node, entry)
            if message:
                out.append(finding("I101", node.lineno, message))
        if isinstance(node, ast.Attribute) and (node.attr in COMPUTE_METHODS or DUNDER_ARITHMETIC.match(node.attr)) \
                and not isinstance(analysis.parents.get(node), ast.Call) and not analysis.qualname(node) \
                and analysis.expr_tainted(node.value, entry.tainted):
            out.append(finding("I101", node.lineno, f"`.{node.attr}` of a tensor taken inside forward"))
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "getattr" \
                and len(node.args) >= 2 and isinstance(node.args[1], ast.Constant) \
                and isinstance(node.args[1].value, str) and (node.args[1].value in COMPUTE_METHODS
                                                             or DUNDER_ARITHMETIC.match(node.args[1].value)) \
                and not analysis.is_ext_expr(node.args[0]):
            out.append(finding("I101", node.lineno, f"`getattr(..., {node.args[1].value!r})` computes inside forward"))
        if isinstance(node, ast.Call):
            func = node.func
            args = list(node.args) + [k.value for k in node.keywords]
            if isinstance(func, ast.Attribute) and not analysis.qualname(func) and not analysis.is_ext_expr(func.value):
                if func.attr in COMPUTE_METHODS or DUNDER_ARITHMETIC.match(func.attr):
                    out.append(finding("I101", node.lineno, f"`.{func.attr}(...)` computes in PyTorch inside forward"))
            elif isinstance(func, ast.Name) and func.id in REDUCING_BUILTINS and func.id not in analysis.functions \
                    and any(analysis.expr_tainted(a, entry.tainted) for a in args):
                out.append(finding("I101", node.lineno, f"builtin `{func.id}` applied to tensors inside forward"))
        elif isinstance(node, ast.BinOp):
            if isinstance(node.op, ast.MatMult) or analysis.expr_tainted(node.left, entry.tainted) \
                    or analysis.expr_tainted(node.right, entry.tainted):
                out.append(finding("I101", node.lineno, f"tensor arithmetic `{ast.unparse(node)[:60]}` inside forward"))
        elif isinstance(node, ast.AugAssign):
            if isinstance(node.op, ast.MatMult) or analysis.expr_tainted(node.value, entry.tainted) \
                    or analysis.expr_tainted(node.target, entry.tainted):
                out.append(finding("I101", node.lineno, f"tensor arithmetic `{ast.unparse(node)[:60]}` inside forward"))
        elif isinstance(node, ast.UnaryOp) and not isinstance(node.op, ast.Not):
            if analysis.expr_tainted(node.operand, entry.tainted):
                out.append(finding("I101", node.lineno, f"tensor arithmetic `{ast.unparse(node)[:60]}` inside forward"))
        elif isinstance(node, ast.Compare):
            operands = [node.left] + list(node.comparators)
            if any(not isinstance(op, (ast.Is, ast.IsNot, ast.In, ast.NotIn)) for op in node.ops) \
                    and any(analysis.expr_tainted(o, entry.tainted) for o in operands):
                out.append(finding("I101", node.lineno, f"tensor comparison `{ast.unparse(node)[:60]}` inside forward"))
    yield from _unique(out)


def _torch_compute(name: str | None) -> str | None:
    if not name or not (name == "torch" or name.startswith("torch.")):
        return None
    if starts(name, TORCH_NON_COMPUTE_PREFIXES) or name.startswith("torch.ops.") and not starts(
            name, ("torch.ops.aten", "torch.ops.prims", "torch.ops.quantized", "torch.ops.higher_order")):
        return None
    parts = name.split(".")
    if name == "torch" or len(parts) < 2:
        return None
    if len(parts) == 2 and parts[1] in TORCH_ALLOWED:
        return None
    if parts[1] == "nn" and len(parts) >= 3 and parts[2] != "functional":
        return None        # layers are I103's business
    if parts[1] == "Tensor" and len(parts) == 3 and (parts[2] in SCALAR_METHODS or parts[2] in SCALAR_ATTRS
                                                     or parts[2] in {"view", "reshape", "contiguous", "permute"}):
        return None
    if len(parts) == 2 and parts[1][:1].isupper() and parts[1] != "Tensor":
        return None        # classes: torch.Generator, torch.Size ...
    return f"`{name}` computes in PyTorch inside forward"


def _foreign_call(name: str | None, analysis: Analysis, node: ast.AST, entry: Function) -> str | None:
    """numpy/math/operator/functools applied to tensors inside forward."""
    if not name or not module_matches(name.split(".")[0], FOREIGN_MATH_MODULES):
        return None
    parent = analysis.parents.get(node)
    if not (isinstance(parent, ast.Call) and parent.func is node):
        return None
    args = list(parent.args) + [k.value for k in parent.keywords]
    if any(analysis.expr_tainted(a, entry.tainted) for a in args) or name.split(".")[-1] in COMPUTE_METHODS \
            and name.split(".")[0] in ("numpy", "scipy"):
        return f"`{name}` applied to tensors inside forward"
    return None


@rule("I102")
def library_math_in_sources(source: CandidateSource):
    """The kernel must be the candidate's own: ATen ops and vendor math libraries in its sources compute for it."""
    out = list(scan(source, "I102", CPP_COMPUTE_NAMESPACE, "ATen/torch compute namespace"))
    for src, clean in cleaned(source):
        for match in CPP_USING_ATEN.finditer(clean.code):
            if match.group(1) is None or match.group(1) not in CPP_ALLOWED_ATEN:
                out.append(finding("I102", python_line_of(source.tree, src, match.start()),
                                   f"`{' '.join(match.group(0).split())}` hides which ATen ops are called"))
        for match in CPP_ATEN_DEVICE_CALL.finditer(clean.code):
            if match.group(1) not in CPP_ATEN_DEVICE_ALLOWED:
                out.append(finding("I102", python_line_of(source.tree, src, match.start()),
                                   f"ATen op `{' '.join(match.group(0).split())}` computes in the library"))
        for match in CPP_ATEN_CALL.finditer(clean.code):
            if match.group(1) not in CPP_ALLOWED_ATEN and not re.match(r"k[A-Z]", match.group(1)):
                out.append(finding("I102", python_line_of(source.tree, src, match.start()),
                                   f"ATen op `{' '.join(match.group(0).split())}` computes in the library"))
        for offset, params, body in host_bodies(clean.code):
            names = {m.group(1) for m in CPP_TENSOR_DECL.finditer(params)}
            names |= {m.group(1) for m in CPP_TENSOR_DECL.finditer(body)}
            names |= {m.group(1) for m in CPP_AUTO_TENSOR.finditer(body)}
            names -= {"const", "options", "self"}
            if not names:
                continue
            alternatives = "|".join(sorted(map(re.escape, names)))
            operator = re.compile(
                rf"(?<![\w.>:&*])\b({alternatives})\b\s*(?:[-+*/%]=?|&)(?![-+>=*/&])\s*(?=[\w(.\-])|"
                rf"[\w)\]]\s*[-+*/%]=?\s*\b({alternatives})\b(?!\s*(?:\.|->|\[|\())|"
                rf"(?:^|[=(,;?:]|return)\s*-\s*\b({alternatives})\b(?!\s*(?:\.|->|\[|\())",
                re.MULTILINE)
            for match in operator.finditer(body):
                context = body[max(0, match.start() - 40):match.start()]
                if re.search(r"(float|double|int|auto|scalar_t|half|T|void|char|const|long|unsigned|size_t|"
                             r"\w+_t)\s*$", context + match.group(0).split("*")[0]) and "*" in match.group(0):
                    continue
                out.append(finding("I102", python_line_of(source.tree, src, offset + match.start()),
                                   f"tensor arithmetic in C++ host code: `{' '.join(match.group(0).split())}`"))
    out += scan(source, "I102", CPP_TENSOR_METHOD, "tensor method computes in ATen")
    out += scan(source, "I102", CPP_LIBRARIES, "vendor math library")
    out += scan(source, "I102", re.compile(r"#\s*include\s*[<\"]\s*((?:cublas|cudnn|cusparse|cufft|cusolver|cutensor|"
                                           r"mkl|cblas|Eigen|ATen/native|ATen/ops|ATen/cuda/CUDABlas|torch/nn|"
                                           r"ATen/Functions|ATen/NativeFunctions|ATen/cpu/vec)[\w./]*)"),
                "vendor math library header", view="no_comments", group=1)
    for call, text in keyword_strings(source, {"extra_ldflags", "extra_cflags", "extra_cuda_cflags"}):
        match = LIBRARY_LDFLAGS.search(text)
        if match and match.group(1) not in {"cuda"}:
            out.append(finding("I102", call.lineno, f"links a math library: `{text}`"))
    yield from _unique(out)


@rule("I103")
def falls_back_to_reference(source: CandidateSource):
    """No fallbacks: no try/except around the kernel, no reuse of the reference Model, no nn layers or other backends."""
    analysis = analysis_of(source)
    out = []
    reachable_nodes = {id(node) for _, node in analysis.in_reachable()}
    for node in ast.walk(source.tree):
        if isinstance(node, (ast.Try, getattr(ast, "TryStar", ast.Try))) and node.handlers:
            inside = id(node) in reachable_nodes
            guards_build = any(isinstance(c, ast.Call) and (analysis.is_ext_build(c) or analysis.is_ext_expr(c.func))
                               for stmt in node.body for c in ast.walk(stmt))
            if inside or guards_build:
                out.append(finding("I103", node.lineno, "try/except around the kernel: a failure must fail, not fall back"))
        elif isinstance(node, ast.ClassDef):
            for base in node.bases:
                base_name = dotted(base) or ""
                qual = analysis.qualname(base) or ""
                if base_name.split(".")[-1] == "Model" or (source.reference_module and source.reference_module in qual):
                    out.append(finding("I103", node.lineno, f"class {node.name} subclasses the reference `{base_name}`"))
            if node.name == "ModelNew":
                for stmt in node.body:
                    if isinstance(stmt, (ast.Assign, ast.AnnAssign)) and any(
                            isinstance(t, ast.Name) and t.id in ("forward", "__call__")
                            for t in (stmt.targets if isinstance(stmt, ast.Assign) else [stmt.target])):
                        out.append(finding("I103", stmt.lineno, "ModelNew.forward is assigned, not defined"))
        elif isinstance(node, (ast.With, ast.AsyncWith)):
            for item in node.items:
                name = analysis.qualname(item.context_expr.func if isinstance(item.context_expr, ast.Call)
                                         else item.context_expr) or ""
                if name.endswith("suppress") and name.startswith("contextlib"):
                    out.append(finding("I103", node.lineno, "contextlib.suppress swallows kernel failures"))
    for module, bound, line in analysis.imports:
        parts = module.lstrip(".").split(".")
        if (source.reference_module and source.reference_module in parts) or parts[0] in ("problems", "reference") \
                or module.startswith(".") or parts[0] == "harness":
            out.append(finding("I103", line, f"imports `{module}`: the reference and the harness are off limits"))
        if module_matches(module, FOREIGN_BACKENDS):
            out.append(finding("I103", line, f"imports `{module}`: kernels must come from load_inline sources"))
        if starts(module, ("torch.compile", "torch._dynamo", "torch._inductor", "torch.jit", "torch.fx",
                           "torch.export", "torch.func", "torch.vmap", "torch.hub")):
            out.append(finding("I103", line, f"imports `{module}`: another compiler or model source"))
    for node, name in analysis.outermost_chains(source.tree):
        parts = name.split(".")
        if len(parts) >= 3 and parts[:2] == ["torch", "nn"] and parts[2][:1].isupper() and parts[2] not in NN_ALLOWED:
            out.append(finding("I103", node.lineno, f"`{name}` is a PyTorch layer that computes for the candidate"))
        elif len(parts) >= 4 and parts[:3] == ["torch", "nn", "modules"] and parts[-1][:1].isupper():
            out.append(finding("I103", node.lineno, f"`{name}` is a PyTorch layer that computes for the candidate"))
        elif starts(name, ("torch.compile", "torch.jit.script", "torch.jit.trace", "torch.jit.load", "torch._dynamo",
                           "torch._inductor", "torch.export", "torch.fx", "torch.func", "torch.vmap", "torch.hub",
                           "torch.cuda.jiterator", "torch.utils.cpp_extension.load_inline_jit")):
            out.append(finding("I103", node.lineno, f"`{name}` compiles or fetches code other than the candidate's own"))
        elif source.reference_module and name.split(".")[0] == source.reference_module:
            out.append(finding("I103", node.lineno, f"uses the reference module `{name}`"))
    yield from _unique(out)


@rule("I104")
def tampers_with_runtime(source: CandidateSource):
    """The candidate must not patch torch, the timer, the harness or the interpreter it shares with them."""
    analysis = analysis_of(source)
    out = []
    imported = {bound for _, bound, _ in analysis.imports}
    for node in ast.walk(source.tree):
        targets: list[ast.AST] = []
        if isinstance(node, ast.Assign):
            targets = node.targets
        elif isinstance(node, (ast.AugAssign, ast.AnnAssign)):
            targets = [node.target]
        elif isinstance(node, ast.Delete):
            targets = node.targets
        for target in targets:
            for part in ast.walk(target):
                if isinstance(part, ast.Attribute):
                    root = part
                    while isinstance(root, (ast.Attribute, ast.Subscript)):
                        root = root.value
                    qual = analysis.qualname(part) or ""
                    if qual.startswith("os.environ") or (isinstance(root, ast.Name) and root.id == "self"):
                        continue
                    if isinstance(root, ast.Name) and (root.id in imported or (
                            root.id in analysis.classes and analysis.enclosing_class(node) is None)
                            or root.id in ("__builtins__",)):
                        if any(flag in part.attr for flag in PY_PRECISION_FLAGS):
                            break          # I108 reports precision switches
                        out.append(finding("I104", node.lineno, f"assigns `{ast.unparse(part)}`: patches shared state"))
                    elif part.attr in ("__class__", "__dict__", "__code__", "forward", "__call__", "__eq__"):
                        out.append(finding("I104", node.lineno, f"assigns `{ast.unparse(part)}`"))
                    break
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in ("setattr", "delattr") \
                and node.args:
            target = node.args[0]
            root_name = dotted(target) or ""
            if analysis.qualname(target) or root_name.split(".")[0] in analysis.classes or (
                    isinstance(target, ast.Call) and call_tail(target) == "type"):
                out.append(finding("I104", node.lineno, f"`{node.func.id}` on `{ast.unparse(target)}` patches shared state"))
        if isinstance(node, ast.Attribute) and node.attr in TAMPER_ATTRS and node.attr != "__class__":
            out.append(finding("I104", node.lineno, f"`.{node.attr}` reaches into interpreter internals"))
        if isinstance(node, ast.Attribute) and node.attr == "__class__" and isinstance(
                analysis.parents.get(node), ast.Attribute) and analysis.parents[node].attr not in ("__name__", "__qualname__"):
            out.append(finding("I104", node.lineno, "`.__class__` walked into: reaches into interpreter internals"))
        if isinstance(node, ast.Name) and node.id in ("__builtins__", "__loader__", "__spec__"):
            out.append(finding("I104", node.lineno, f"`{node.id}` reaches into interpreter internals"))
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in TAMPER_METHODS:
            out.append(finding("I104", node.lineno, f"`.{node.func.attr}` hooks into module calls"))
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name in ("__del__", "__init_subclass__",
                                                                                          "__set_name__"):
            out.append(finding("I104", node.lineno, f"`{node.name}` runs code at times the harness does not control"))
    for module, bound, line in analysis.imports:
        if module_matches(module, PY_TAMPER_MODULES) or starts(module, PY_TAMPER_QUALNAMES) or module in (
                "sys.modules", "sys._getframe"):
            out.append(finding("I104", line, f"imports `{module}`"))
    for node, name in analysis.outermost_chains(source.tree):
        if starts(name, PY_TAMPER_QUALNAMES) or module_matches(name, PY_TAMPER_MODULES):
            out.append(finding("I104", node.lineno, f"`{name}` touches interpreter or torch internals"))
    out += scan(source, "I104", CPP_TORCH_LIBRARY_ATEN, "re-registers a built-in operator")
    yield from _unique(out)


@rule("I105")
def runs_concurrently(source: CandidateSource):
    """No threads, processes or async work: the timer must see all the work the candidate does."""
    analysis = analysis_of(source)
    out = []
    for module, bound, line in analysis.imports:
        if module_matches(module, PY_CONCURRENCY):
            out.append(finding("I105", line, f"imports `{module}`"))
    for node, name in analysis.outermost_chains(source.tree):
        if starts(name, PY_CONCURRENCY_CALLS) or module_matches(name, PY_CONCURRENCY):
            out.append(finding("I105", node.lineno, f"`{name}` runs work outside the timed call"))
    for node in ast.walk(source.tree):
        if isinstance(node, (ast.AsyncFunctionDef, ast.Await, ast.AsyncFor, ast.AsyncWith)):
            out.append(finding("I105", node.lineno, "async code runs work outside the timed call"))
    out += scan(source, "I105", CPP_CONCURRENCY, "host threads or processes")
    out += scan(source, "I105", CPP_CONCURRENCY_INCLUDES, "host threading header", view="no_comments")
    yield from _unique(out)


@rule("I106")
def uses_side_streams(source: CandidateSource):
    """Work must run on the current stream, so the harness's events time all of it; no graphs or callbacks."""
    analysis = analysis_of(source)
    out = []
    for node, name in analysis.outermost_chains(source.tree):
        if starts(name, PY_STREAMS):
            out.append(finding("I106", node.lineno, f"`{name}` moves work off the timed stream"))
    for node in ast.walk(source.tree):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in PY_STREAM_METHODS:
            out.append(finding("I106", node.lineno, f"`.{node.func.attr}(...)` synchronises with another stream"))
    out += scan(source, "I106", CPP_STREAMS, "stream, event, graph or device-state API")
    yield from _unique(out)


@rule("I107")
def obfuscates_code(source: CandidateSource):
    """Everything that runs must be readable by these rules: no exec, decoding, dynamic lookup or hidden includes."""
    analysis = analysis_of(source)
    out = []
    for module, bound, line in analysis.imports:
        if module_matches(module, PY_OBFUSCATION_MODULES):
            out.append(finding("I107", line, f"imports `{module}`"))
        if bound == "*":
            out.append(finding("I107", line, f"`from {module} import *` hides which names are used"))
    defined = set(analysis.functions) | set(analysis.classes) | analysis.module_names
    for node in ast.walk(source.tree):
        if not isinstance(node, ast.Call):
            continue
        func = node.func
        if isinstance(func, ast.Name) and func.id in PY_OBFUSCATION_BUILTINS and func.id not in defined:
            out.append(finding("I107", node.lineno, f"`{func.id}()` runs or looks up code dynamically"))
        if isinstance(func, ast.Name) and func.id in ("getattr", "setattr", "delattr", "hasattr") and func.id not in defined:
            name_arg = node.args[1] if len(node.args) > 1 else None
            if name_arg is None or not (isinstance(name_arg, ast.Constant) and isinstance(name_arg.value, str)):
                out.append(finding("I107", node.lineno, f"`{func.id}` with a computed attribute name"))
            elif node.args and analysis.qualname(node.args[0]) and func.id != "hasattr":
                out.append(finding("I107", node.lineno, f"`{func.id}` on module `{ast.unparse(node.args[0])}`: "
                                                        "use the attribute directly"))
        if isinstance(func, ast.Name) and func.id == "type" and len(node.args) == 3 and "type" not in defined:
            out.append(finding("I107", node.lineno, "`type(name, bases, dict)` builds a class dynamically"))
        if isinstance(func, ast.Attribute) and func.attr in ("fromhex", "frombytes", "decode", "translate") and (
                isinstance(func.value, ast.Constant) or dotted(func.value) in ("bytes", "bytearray", "str")):
            out.append(finding("I107", node.lineno, f"`.{func.attr}` decodes hidden text"))
    for node, name in analysis.outermost_chains(source.tree):
        if module_matches(name, PY_OBFUSCATION_MODULES) or name in ("sys.modules",):
            out.append(finding("I107", node.lineno, f"`{name}` loads or decodes code dynamically"))
    names = _assignments(source.tree)
    for call in source.load_inline_calls:
        for kind, expression in source_arguments(call):
            for part in unresolved_parts(expression, names):
                out.append(finding("I107", getattr(part, "lineno", call.lineno),
                                   f"{kind} source part `{ast.unparse(part)[:60]}` cannot be read statically"))
        if any(k.arg is None for k in call.keywords) or any(isinstance(a, ast.Starred) for a in call.args):
            out.append(finding("I107", call.lineno, "load_inline arguments passed through * or ** cannot be read"))
        for keyword in call.keywords:
            if keyword.arg == "extra_include_paths" and not (
                    isinstance(keyword.value, (ast.List, ast.Tuple)) and not keyword.value.elts):
                out.append(finding("I107", call.lineno, "extra_include_paths pulls in code outside the candidate"))
    for call, text in keyword_strings(source, {"extra_ldflags", "extra_cflags", "extra_cuda_cflags"}):
        if FOREIGN_LDFLAGS.search(text) and not LIBRARY_LDFLAGS.search(text):
            out.append(finding("I107", call.lineno, f"build flag `{text}` pulls in code outside the candidate"))
    out += scan(source, "I107", CPP_OBFUSCATION, "loads or runs code dynamically")
    out += scan(source, "I107", CPP_TOKEN_PASTING, "preprocessor token pasting hides identifiers")
    for src, clean in cleaned(source):
        for match in CPP_DEFINE.finditer(clean.code):
            params = [p.strip() for p in match.group(1).split(",") if p.strip()]
            body = match.group(2)
            if any(re.search(rf"(?<!#)#\s*{re.escape(p)}\b", body) for p in params if p != "..."):
                out.append(finding("I107", python_line_of(source.tree, src, match.start()),
                                   "preprocessor stringizing hides identifiers"))
        for match in CPP_INCLUDE.finditer(clean.no_comments):
            target = match.group(1).strip()
            local = target.startswith('"') or not target.startswith("<") or "/" == target[1:2] or ".." in target \
                or target.startswith("<~") or ":" in target
            if local:
                out.append(finding("I107", python_line_of(source.tree, src, match.start()),
                                   f"`#include {target}` is not a system, CUDA or torch header"))
    yield from _unique(out)


@rule("I108", WARNING)
def downgrades_precision(source: CandidateSource):
    """Half, bfloat16 or fp8 types, or precision switches, in a float32 problem: a person should check where they are used.

    A warning, not an error: the types alone say nothing about the math (a float32 kernel may keep a
    small `__half` table, or convert at its edges), and verification against the float64 gold at a
    float32 tolerance already fails a candidate that computes in half, bf16 or TF32.
    """
    analysis = analysis_of(source)
    out = []
    for node, name in analysis.outermost_chains(source.tree):
        if starts(name, PY_PRECISION_QUALNAMES) or name.startswith("torch.float8") or name.split(".")[-1] in PY_PRECISION_FLAGS:
            out.append(finding("I108", node.lineno, f"`{name}` lowers float32 precision"))
    for node in ast.walk(source.tree):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in PY_PRECISION_METHODS \
                and not node.args and not analysis.qualname(node.func):
            out.append(finding("I108", node.lineno, f"`.{node.func.attr}()` lowers float32 precision"))
        if isinstance(node, ast.Attribute) and node.attr in PY_PRECISION_FLAGS:
            out.append(finding("I108", node.lineno, f"`{ast.unparse(node)}` lowers float32 matmul precision"))
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and node.value in (
                "float16", "half", "bfloat16", "tf32", "medium", "fp16", "bf16") and isinstance(
                analysis.parents.get(node), ast.Call) and call_tail(analysis.parents[node]) in (
                "to", "set_float32_matmul_precision", "type", "getattr"):
            out.append(finding("I108", node.lineno, f"`{node.value}` lowers float32 precision"))
    for src, clean in cleaned(source):
        # `int half = n / 2;` is a common reduction idiom: then the bare word is a variable, not the type
        half_is_variable = re.search(r"\b(?:int|unsigned|long|size_t|auto|int64_t|int32_t|const)\s+half\b", clean.code)
        for match in CPP_PRECISION.finditer(clean.code):
            if match.group(0) == "half" and half_is_variable:
                continue
            out.append(finding("I108", python_line_of(source.tree, src, match.start()),
                               f"reduced-precision type or intrinsic: `{match.group(0)}`"))
    out += scan(source, "I108", CPP_PRECISION_INCLUDES, "reduced-precision header", view="no_comments", group=1)
    for line, ptx in inline_ptx(source):
        lowered = ASM_PRECISION.search(ASM_SPLIT_MMA.sub("", ptx))   # fp32-accumulating MMAs are I118's
        if lowered:
            out.append(finding("I108", line, f"inline PTX uses a reduced-precision type: `{lowered.group(0)}`"))
    yield from _unique(out)


@rule("I109")
def touches_files_network_or_env(source: CandidateSource):
    """No files, processes, network or environment writes: a candidate is a pure function of its inputs."""
    analysis = analysis_of(source)
    out = []
    for module, bound, line in analysis.imports:
        if module_matches(module, PY_IO_MODULES):
            out.append(finding("I109", line, f"imports `{module}`"))
    defined = set(analysis.functions) | set(analysis.classes) | analysis.module_names
    for node, name in analysis.outermost_chains(source.tree):
        if starts(name, PY_IO_CALLS) or any(name.startswith(p) for p in ("os.exec", "os.spawn", "os.posix_spawn")):
            out.append(finding("I109", node.lineno, f"`{name}` reaches files, processes or the environment"))
        elif module_matches(name, PY_IO_MODULES):
            out.append(finding("I109", node.lineno, f"`{name}` reaches files, processes or the network"))
    for node in ast.walk(source.tree):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in PY_IO_BUILTINS \
                and node.func.id not in defined:
            out.append(finding("I109", node.lineno, f"`{node.func.id}()` reaches files or the console"))
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in ENV_MUTATORS \
                and (analysis.qualname(node.func.value) or "") == "os.environ":
            out.append(finding("I109", node.lineno, f"`os.environ.{node.func.attr}` changes the environment"))
        targets = node.targets if isinstance(node, (ast.Assign, ast.Delete)) else [node.target] if isinstance(
            node, (ast.AugAssign, ast.AnnAssign)) else []
        for target in targets:
            if isinstance(target, ast.Subscript) and (analysis.qualname(target.value) or "") == "os.environ":
                out.append(finding("I109", node.lineno, "writes `os.environ`: changes the environment"))
            elif isinstance(target, ast.Attribute) and (analysis.qualname(target) or "") == "os.environ":
                out.append(finding("I109", node.lineno, "replaces `os.environ`"))
    for call in source.load_inline_calls:
        for keyword in call.keywords:
            if keyword.arg == "build_directory":
                out.append(finding("I109", call.lineno, "build_directory: the harness owns where extensions are built"))
    out += scan(source, "I109", CPP_IO, "file, process, network or environment access")
    out += scan(source, "I109", CPP_IO_OPEN, "file access")
    out += scan(source, "I109", CPP_IO_INCLUDES, "file or OS header", view="no_comments", group=1)
    yield from _unique(out)


@rule("I110")
def returns_lazy_output(source: CandidateSource):
    """forward must return a plain tensor holding the answer, not an object that fakes one when compared."""
    analysis = analysis_of(source)
    out = []
    for node in ast.walk(source.tree):
        if isinstance(node, ast.ClassDef):
            for base in node.bases:
                qual = analysis.qualname(base) or dotted(base) or ""
                if qual.split(".")[-1] in ("Tensor", "TorchDispatchMode", "TorchFunctionMode") or qual in (
                        "torch.Tensor", "torch._C.TensorBase", "torch._C._TensorBase"):
                    out.append(finding("I110", node.lineno, f"class {node.name} subclasses `{qual}`"))
            for stmt in node.body:
                if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef)) and stmt.name in IMPERSONATING_DUNDERS:
                    out.append(finding("I110", stmt.lineno, f"{node.name}.{stmt.name} lets an object pose as a tensor"))
        if isinstance(node, ast.Attribute) and node.attr in LAZY_NAMES:
            out.append(finding("I110", node.lineno, f"`{node.attr}` builds a tensor subclass or dispatch hook"))
        if isinstance(node, ast.Name) and node.id in LAZY_NAMES:
            out.append(finding("I110", node.lineno, f"`{node.id}` builds a tensor subclass or dispatch hook"))
    for module, bound, line in analysis.imports:
        if starts(module, LAZY_QUALNAMES):
            out.append(finding("I110", line, f"imports `{module}`"))
    for node, name in analysis.outermost_chains(source.tree):
        if starts(name, LAZY_QUALNAMES):
            out.append(finding("I110", node.lineno, f"`{name}` builds a tensor subclass or dispatch hook"))
    yield from _unique(out)


@rule("I111")
def keeps_state_across_calls(source: CandidateSource):
    """Each call must compute from its inputs: no results cached in self, globals, memoisation or static tensors."""
    analysis = analysis_of(source)
    out = []
    for entry in analysis.reachable.values():
        func = entry.node
        params = param_names(func)
        constructing = getattr(func, "name", "") in ("__init__", "__new__", "__post_init__")
        self_name = params[0] if entry.owner is not None and params and not constructing else None
        local_names = {n.id for n in ast.walk(func) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)}
        persistent_roots = {self_name} if self_name else set()
        persistent_roots |= (analysis.module_names | set(analysis.classes) | set(analysis.functions)) \
            - local_names - set(params)
        declared_global: set[str] = set()
        for node in ast.walk(func):
            if isinstance(node, (ast.Global, ast.Nonlocal)):
                declared_global.update(node.names)
                lazy = all(analysis.is_ext_build(a.value) for a in ast.walk(func) if isinstance(a, ast.Assign)
                           for t in a.targets if isinstance(t, ast.Name) and t.id in node.names)
                if not lazy:
                    out.append(finding("I111", node.lineno, f"`{type(node).__name__.lower()} "
                                                            f"{', '.join(node.names)}` keeps state between calls"))
        persistent_roots |= declared_global
        for node in ast.walk(func):
            targets = node.targets if isinstance(node, (ast.Assign, ast.Delete)) else [node.target] if isinstance(
                node, (ast.AugAssign, ast.AnnAssign)) else []
            value = getattr(node, "value", None)
            for target in targets:
                if isinstance(target, ast.Name) or (isinstance(target, (ast.Tuple, ast.List))):
                    continue
                root = target
                while isinstance(root, (ast.Attribute, ast.Subscript)):
                    root = root.value
                class_of_self = isinstance(root, ast.Call) and call_tail(root) in ("type", "super")
                if (class_of_self or isinstance(root, ast.Name) and root.id in persistent_roots) and not (
                        isinstance(node, ast.Assign) and analysis.is_ext_build(value)):
                    out.append(finding("I111", node.lineno, f"`{ast.unparse(target)[:60]}` written in forward "
                                                            "keeps state between calls"))
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in MUTATORS:
                root = node.func.value
                while isinstance(root, (ast.Attribute, ast.Subscript)):
                    root = root.value
                if isinstance(root, ast.Name) and root.id in persistent_roots - analysis.ext_handles \
                        or node.func.attr in ("__setattr__", "__setitem__", "__delitem__", "__delattr__"):
                    out.append(finding("I111", node.lineno, f"`{ast.unparse(node.func)}` mutates state kept "
                                                            "between calls"))
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "setattr" \
                    and node.args and isinstance(node.args[0], ast.Name) and node.args[0].id in persistent_roots:
                out.append(finding("I111", node.lineno, "setattr in forward keeps state between calls"))
        for default in func.args.defaults + [d for d in func.args.kw_defaults if d is not None]:
            if isinstance(default, (ast.Dict, ast.List, ast.Set, ast.Call)):
                out.append(finding("I111", default.lineno, "mutable default argument keeps state between calls"))
    for node in ast.walk(source.tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            for decorator in node.decorator_list:
                target = decorator.func if isinstance(decorator, ast.Call) else decorator
                name = (dotted(target) or "").split(".")[-1]
                real_params = [p for p in param_names(node) if p not in ("self", "cls")]
                if name in CACHE_DECORATORS and real_params:
                    out.append(finding("I111", node.lineno, f"@{name} on `{node.name}` memoises results between calls"))
    out += scan(source, "I111", CPP_STATIC_TENSOR, "static tensor keeps results between calls")
    for src, clean in cleaned(source):
        for match in CPP_GLOBAL_TENSOR.finditer(clean.code):
            if brace_depth(clean.code, match.start()) == 0:
                out.append(finding("I111", python_line_of(source.tree, src, match.start()),
                                   f"global tensor keeps results between calls: `{' '.join(match.group(0).split())}`"))
    yield from _unique(out)


# ----- warnings -------------------------------------------------------------------------------

@rule("I112", WARNING)
def uses_template_libraries(source: CandidateSource):
    """CUTLASS/CuTe, Thrust, CUB and std algorithms may do the heavy lifting: a person should check what is the candidate's own."""
    yield from _unique(scan(source, "I112", CPP_TEMPLATE_LIBRARIES, "library algorithm or template"))


@rule("I113", WARNING)
def uses_fast_math(source: CandidateSource):
    """Fast-math flags relax IEEE float32 (flushing, approximate division): accuracy may pass by luck at one seed."""
    out = [finding("I113", call.lineno, f"build flag `{text}` relaxes float32 semantics")
           for call, text in keyword_strings(source, {"extra_cflags", "extra_cuda_cflags"}) if PRECISION_FLAGS.search(text)]
    yield from _unique(out)


@rule("I114", WARNING)
def synchronises_device(source: CandidateSource):
    """A device-wide synchronize inside the call is slow and can mask work on other streams; the harness syncs itself."""
    yield from _unique(scan(source, "I114", CPP_DEVICE_SYNC, "device-wide synchronisation"))


@rule("I115", WARNING)
def keeps_device_or_static_state(source: CandidateSource):
    """Static pointers and __device__ globals persist between calls: legitimate for workspaces, a cache otherwise."""
    out = []
    for src, clean in cleaned(source):
        for match in CPP_STATIC_STATE.finditer(clean.code):
            if CPP_STATIC_TENSOR.match(clean.code, match.start()) or "(" in match.group(0):
                continue
            out.append(finding("I115", python_line_of(source.tree, src, match.start()),
                               f"static variable persists between calls: `{' '.join(match.group(0).split())}`"))
        for match in CPP_DEVICE_GLOBAL.finditer(clean.code):
            out.append(finding("I115", python_line_of(source.tree, src, match.start()),
                               f"__device__ global persists between calls: `{' '.join(match.group(0).split())}`"))
    yield from _unique(out)


@rule("I116", WARNING)
def uses_host_parallelism(source: CandidateSource):
    """OpenMP / at::parallel_for spread a CPU kernel over cores: allowed, but timings then depend on the machine's threads."""
    out = list(scan(source, "I116", CPP_PARALLEL_WARN, "host parallelism", view="no_comments"))
    out += [finding("I116", call.lineno, f"build flag `{text}` enables OpenMP")
            for call, text in keyword_strings(source, {"extra_cflags", "extra_ldflags"}) if "openmp" in text]
    yield from _unique(out)


@rule("I117")
def hides_work_in_generators(source: CandidateSource):
    """A generator method or a driven generator resumes code outside forward's checks and keeps state in its frame."""
    for cls in (n for n in ast.walk(source.tree) if isinstance(n, ast.ClassDef)):
        for node in ast.walk(cls):
            if isinstance(node, (ast.Yield, ast.YieldFrom)):
                yield finding("I117", node.lineno, f"`yield` in class {cls.name}: a generator method's body "
                                                   "escapes the forward checks")
    for node in ast.walk(source.tree):
        if (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
                and node.func.attr in ("send", "asend", "athrow")):
            yield finding("I117", node.lineno, f"`.{node.func.attr}(...)` drives a generator or coroutine between calls")
        elif isinstance(node, (ast.AsyncFunctionDef, ast.Await)):
            yield finding("I117", node.lineno, "coroutine in a candidate: its body escapes the forward checks")


@rule("I118", WARNING)
def uses_reduced_precision_tensor_cores(source: CandidateSource):
    """TF32, or bf16/f16 into an fp32 accumulator, on tensor cores: split precision (3xTF32, two-piece bf16)
    can meet an fp32 tolerance, one such product does not; verification against the float64 gold decides."""
    out = list(scan(source, "I118", CPP_TF32, "TF32 tensor-core math"))
    for line, ptx in inline_ptx(source):
        if ASM_TF32.search(ptx):
            out.append(finding("I118", line, "inline PTX uses TF32 tensor cores (`.tf32`)"))
        split = ASM_SPLIT_MMA.search(ptx)
        if split:
            out.append(finding("I118", line, f"inline PTX multiplies `.{split.group(1)}` operands on tensor cores "
                                             "into an fp32 accumulator"))
    yield from _unique(out)
