"""Find load_inline calls in a candidate's AST and resolve the source strings they are given.

Input: a parsed candidate module. Output: the `load_inline` calls, the C++/CUDA texts they compile
(`SourceString`s), and helpers the rules use to read those texts: `clean_cpp` (comments and string
literals blanked, offsets kept) and `python_line_of` (the Python line that holds a piece of text).

Strings are followed through module-level names, concatenation, lists, `.join`, `textwrap.dedent`
and f-strings; what cannot be resolved is left out, not guessed, and `unresolved_parts` names it.
"""
from __future__ import annotations

import ast
import re
from dataclasses import dataclass

from harness.rules import SourceString

SOURCE_KEYWORDS = {"cpp_sources": "cpp", "cuda_sources": "cuda"}
_STRING_METHODS = ("format", "strip", "lstrip", "rstrip", "replace")
_PASSTHROUGH_FUNCS = ("dedent", "str", "cleandoc")
_RETURNS = "()"      # key prefix in the names map: the expression a module-level function returns


def find_load_inline_calls(tree: ast.Module) -> list[ast.Call]:
    calls = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Call):
            func = node.func
            name = func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else ""
            if name == "load_inline":
                calls.append(node)
    return sorted(calls, key=lambda c: c.lineno)


def _assignments(tree: ast.Module) -> dict[str, ast.expr]:
    """Last value assigned to each plain name anywhere in the module (good enough for constants)."""
    values: dict[str, ast.expr] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Assign):
            for target in node.targets:
                if isinstance(target, ast.Name):
                    values[target.id] = node.value
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name) and node.value is not None:
            values[node.target.id] = node.value
        elif isinstance(node, ast.AugAssign) and isinstance(node.target, ast.Name):
            previous = values.get(node.target.id)
            if previous is not None and isinstance(node.op, ast.Add):
                values[node.target.id] = ast.BinOp(previous, ast.Add(), node.value)
    for node in tree.body:   # def make_source(...): ... return f"..."  (one return, at the end)
        if isinstance(node, ast.FunctionDef) and node.body and isinstance(node.body[-1], ast.Return) \
                and node.body[-1].value is not None \
                and sum(isinstance(n, ast.Return) for n in ast.walk(node)) == 1:
            values[_RETURNS + node.name] = node.body[-1].value
    return values


def _call_name(func: ast.expr) -> str:
    return func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else ""


def resolve_strings(node: ast.expr, names: dict[str, ast.expr], depth: int = 0) -> list[str]:
    """Every string the expression can be resolved to; a list or tuple gives one per element."""
    if depth > 20:
        return []
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return [node.value]
    if isinstance(node, ast.Constant) and isinstance(node.value, (int, float)) and not isinstance(node.value, bool):
        return [str(node.value)]
    if isinstance(node, ast.Name) and node.id in names:
        return resolve_strings(names[node.id], names, depth + 1)
    if isinstance(node, (ast.List, ast.Tuple)):
        out: list[str] = []
        for element in node.elts:
            out.extend(resolve_strings(element, names, depth + 1))
        return out
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
        left = resolve_strings(node.left, names, depth + 1)
        right = resolve_strings(node.right, names, depth + 1)
        if isinstance(node.left, (ast.List, ast.Tuple)) or isinstance(node.right, (ast.List, ast.Tuple)):
            return left + right
        return ["".join(left) + "".join(right)] if (left or right) else []
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Mod):   # "..." % (...): keep the template
        return resolve_strings(node.left, names, depth + 1)
    if isinstance(node, ast.JoinedStr):
        parts = []
        for value in node.values:
            if isinstance(value, ast.Constant):
                parts.append(str(value.value))
            elif isinstance(value, ast.FormattedValue):
                parts.append("".join(resolve_strings(value.value, names, depth + 1)))
        return ["".join(parts)]
    if (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "join"
            and len(node.args) == 1):
        separator = resolve_strings(node.func.value, names, depth + 1)
        items = resolve_strings(node.args[0], names, depth + 1)
        return [(separator[0] if separator else "").join(items)]
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "format":
        templates = resolve_strings(node.func.value, names, depth + 1)
        args = ["".join(resolve_strings(a, names, depth + 1)) for a in node.args]
        kwargs = {k.arg: "".join(resolve_strings(k.value, names, depth + 1)) for k in node.keywords if k.arg}
        try:
            return [t.format(*args, **kwargs) for t in templates]
        except (IndexError, KeyError, ValueError):
            return templates
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in _STRING_METHODS:
        return resolve_strings(node.func.value, names, depth + 1)
    if isinstance(node, ast.Call) and _call_name(node.func) in _PASSTHROUGH_FUNCS and len(node.args) == 1:
        return resolve_strings(node.args[0], names, depth + 1)
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and _RETURNS + node.func.id in names:
        return resolve_strings(names[_RETURNS + node.func.id], names, depth + 1)
    return []


def unresolved_parts(node: ast.expr, names: dict[str, ast.expr], depth: int = 0) -> list[ast.expr]:
    """Sub-expressions of a source argument whose text cannot be known without running the file.

    Interpolated numbers and names (f"{BLOCK}") are fine: they cannot smuggle code. What is
    reported is text produced by calls, attribute lookups or names assigned nowhere in the file.
    """
    if depth > 20:
        return []
    if isinstance(node, ast.Constant):
        return []
    if isinstance(node, ast.Name):
        return [] if node.id in names and not _is_self_reference(node.id, names[node.id]) and not unresolved_parts(
            names[node.id], names, depth + 1) else [node]
    if isinstance(node, (ast.List, ast.Tuple)):
        return [part for element in node.elts for part in unresolved_parts(element, names, depth + 1)]
    if isinstance(node, ast.BinOp) and isinstance(node.op, (ast.Add, ast.Mod)):
        if isinstance(node.op, ast.Mod):
            values = node.right.elts if isinstance(node.right, ast.Tuple) else [node.right]
            return unresolved_parts(node.left, names, depth + 1) + _unresolved_values(values, names, depth)
        return unresolved_parts(node.left, names, depth + 1) + unresolved_parts(node.right, names, depth + 1)
    if isinstance(node, ast.JoinedStr):
        out = []
        for value in node.values:
            if isinstance(value, ast.FormattedValue):
                out.extend(_unresolved_values([value.value], names, depth))
        return out
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "join" \
            and len(node.args) == 1:
        return unresolved_parts(node.func.value, names, depth + 1) + unresolved_parts(node.args[0], names, depth + 1)
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in _STRING_METHODS:
        values = list(node.args) + [k.value for k in node.keywords]
        return unresolved_parts(node.func.value, names, depth + 1) + _unresolved_values(values, names, depth)
    if isinstance(node, ast.Call) and _call_name(node.func) in _PASSTHROUGH_FUNCS and len(node.args) == 1:
        return unresolved_parts(node.args[0], names, depth + 1)
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and _RETURNS + node.func.id in names:
        return unresolved_parts(names[_RETURNS + node.func.id], names, depth + 1) + _unresolved_values(
            list(node.args) + [k.value for k in node.keywords], names, depth)
    return [node]


def _unresolved_values(values: list[ast.expr], names: dict[str, ast.expr], depth: int) -> list[ast.expr]:
    """Values interpolated into a template: numbers and parameters are fine, anything else must resolve."""
    out = []
    for value in values:
        if _is_plain_value(value) and not any(isinstance(n, ast.Name) and n.id in names for n in ast.walk(value)):
            continue       # numbers, and names bound nowhere at module level (a template function's parameters)
        if _is_plain_value(value) and _numeric(value, names, depth):
            continue
        out.extend(unresolved_parts(value, names, depth + 1))
    return out


def _numeric(node: ast.expr, names: dict[str, ast.expr], depth: int) -> bool:
    """Whether an expression of names and numbers evaluates to a number (so it holds no code)."""
    if depth > 20:
        return False
    if isinstance(node, ast.Constant):
        return isinstance(node.value, (int, float)) and not isinstance(node.value, bool)
    if isinstance(node, ast.Name):
        return node.id in names and _numeric(names[node.id], names, depth + 1)
    if isinstance(node, ast.BinOp):
        return _numeric(node.left, names, depth + 1) and _numeric(node.right, names, depth + 1)
    if isinstance(node, ast.UnaryOp):
        return _numeric(node.operand, names, depth + 1)
    return False


def _is_self_reference(name: str, value: ast.expr) -> bool:
    return isinstance(value, ast.Name) and value.id == name


def _is_plain_value(node: ast.expr) -> bool:
    """A number or arithmetic on names and numbers: safe to interpolate into source text."""
    if isinstance(node, ast.Constant):
        return not isinstance(node.value, (str, bytes))
    if isinstance(node, ast.Name):
        return True
    if isinstance(node, ast.BinOp):
        return _is_plain_value(node.left) and _is_plain_value(node.right)
    if isinstance(node, ast.UnaryOp):
        return _is_plain_value(node.operand)
    return False


def source_arguments(call: ast.Call) -> list[tuple[str, ast.expr]]:
    """The (kind, expression) pairs a load_inline call receives as C++ and CUDA sources."""
    pairs = [(SOURCE_KEYWORDS[k.arg], k.value) for k in call.keywords if (k.arg or "") in SOURCE_KEYWORDS]
    # load_inline(name, cpp_sources, cuda_sources, ...) positionally
    pairs += [(kind, call.args[position]) for position, kind in ((1, "cpp"), (2, "cuda")) if len(call.args) > position]
    return pairs


def collect_sources(tree: ast.Module, calls: list[ast.Call]) -> list[SourceString]:
    names = _assignments(tree)
    sources = []
    for call in calls:
        for kind, expression in source_arguments(call):
            for text in resolve_strings(expression, names):
                sources.append(SourceString(kind, text, call.lineno))
    return sources


# ----- reading C++/CUDA text -------------------------------------------------------------------

@dataclass(frozen=True)
class CleanSource:
    """A C++/CUDA text three ways, all the same length so offsets agree.

    `code`: comments and the insides of string/char literals blanked (what the compiler acts on).
    `no_comments`: comments blanked, literals kept (for #include targets and inline asm).
    `literals`: (offset, text) of each string literal.
    """
    original: str
    code: str
    no_comments: str
    literals: tuple[tuple[int, str], ...]


_RAW_STRING = re.compile(r'R"([^()\\\s]{0,16})\(')


def clean_cpp(text: str) -> CleanSource:
    code = list(text)
    no_comments = list(text)
    literals = []
    i, n = 0, len(text)

    def blank(buffer, start, end):
        for j in range(start, end):
            if buffer[j] != "\n":
                buffer[j] = " "

    while i < n:
        ch = text[i]
        if text.startswith("//", i):
            end = text.find("\n", i)
            end = n if end < 0 else end
            blank(code, i, end)
            blank(no_comments, i, end)
            i = end
        elif text.startswith("/*", i):
            end = text.find("*/", i + 2)
            end = n if end < 0 else end + 2
            blank(code, i, end)
            blank(no_comments, i, end)
            i = end
        elif ch == "R" and _RAW_STRING.match(text, i) and (i == 0 or not (text[i - 1].isalnum() or text[i - 1] == "_")):
            match = _RAW_STRING.match(text, i)
            closing = ")" + match.group(1) + '"'
            end = text.find(closing, match.end())
            end = n if end < 0 else end + len(closing)
            literals.append((i, text[match.end():max(match.end(), end - len(closing))]))
            blank(code, match.end(), max(match.end(), end - len(closing)))
            i = end
        elif ch in "\"'":
            if ch == "'" and i > 0 and text[i - 1].isalnum() and text[i - 1] not in "uUL8":   # 1'000 digit separator
                i += 1
                continue
            j = i + 1
            while j < n and text[j] != ch and text[j] != "\n":
                j += 2 if text[j] == "\\" else 1
            end = min(j + 1, n)
            if ch == '"':
                literals.append((i, text[i + 1:min(j, n)]))
            blank(code, i + 1, min(j, n))
            i = end
        else:
            i += 1
    return CleanSource(text, "".join(code), "".join(no_comments), tuple(literals))


def python_line_of(tree: ast.Module, source: SourceString, offset: int) -> int:
    """The Python line holding the source text at `offset`, or the load_inline call's line.

    Looks for the string constant that contains the offending C++ line and counts newlines inside
    it; a line that appears in no single constant (built by interpolation) gets the call's line.
    """
    start = source.text.rfind("\n", 0, offset) + 1
    end = source.text.find("\n", offset)
    line_text = source.text[start:end if end >= 0 else len(source.text)].strip()
    if not line_text:
        return source.line
    constants = [n for n in ast.walk(tree) if isinstance(n, ast.Constant) and isinstance(n.value, str)
                 and line_text in n.value]
    # prefer a constant that is part of this source text over, say, a docstring quoting the same line
    for node in sorted(constants, key=lambda n: n.value not in source.text):
        index = node.value.find(line_text)
        return node.lineno + node.value.count("\n", 0, index)
    return source.line
