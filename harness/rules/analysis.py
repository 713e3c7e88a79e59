"""The Python side of a candidate, analysed once and shared by the integrity rules.

Input: a candidate's AST. Output: an `Analysis`: import aliases (`qualname`), module-level names,
the handles of the compiled extension, and the functions reachable from `ModelNew.forward`, each
with the names that hold tensors derived from its inputs ("tainted"). `analysis_of` caches it.
"""
from __future__ import annotations

import ast
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field

from harness.rules import CandidateSource
from harness.rules.vocabulary import (
    MUTATORS,
    SCALAR_ATTRS,
    SCALAR_BUILTINS,
    SCALAR_METHODS,
    TORCH_NON_COMPUTE_PREFIXES,
)


def dotted(node: ast.AST) -> str | None:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        inner = dotted(node.value)
        return f"{inner}.{node.attr}" if inner else None
    return None


def starts(qualname: str | None, prefixes: Iterable[str]) -> bool:
    if not qualname:
        return False
    return any(qualname == p or qualname.startswith(p + ".") or (p.endswith((".", "_")) and qualname.startswith(p))
               for p in prefixes)


def module_matches(module: str, names: Iterable[str]) -> bool:
    return any(module == n or module.startswith(n + ".") for n in names)


@dataclass
class Function:
    node: ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda
    owner: ast.ClassDef | None
    tainted_params: set[str] = field(default_factory=set)
    tainted: set[str] = field(default_factory=set)


class Analysis:
    """What the Python rules share: import aliases, the call graph from forward, tensor taint."""

    def __init__(self, tree: ast.Module, reference_module: str = ""):
        self.tree = tree
        self.reference_module = reference_module
        self.parents: dict[ast.AST, ast.AST] = {}
        for node in ast.walk(tree):
            for child in ast.iter_child_nodes(node):
                self.parents[child] = node
        self.imports: list[tuple[str, str, int]] = []        # (module or module.object, bound name, line)
        self.aliases: dict[str, str] = {}
        self._collect_imports()
        self.functions = {n.name: n for n in tree.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))}
        self.nested_defs = {n.name: n for outer in ast.walk(tree) if isinstance(outer, (ast.FunctionDef, ast.AsyncFunctionDef))
                            for n in ast.walk(outer) if n is not outer and isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))}
        self.classes = {n.name: n for n in tree.body if isinstance(n, ast.ClassDef)}
        self.module_names = self._module_level_names()
        self.self_classes: dict[str, str] = {}               # self.X = Cls(...)
        self.self_functions: dict[str, str] = {}             # self.X = helper
        self._collect_aliases_by_assignment()
        self.builders = self._ext_builders()
        self.ext_handles = self._ext_handles()
        self.reachable: dict[ast.AST, Function] = {}
        self._returns: dict[tuple[ast.AST, frozenset[str]], bool] = {}
        self._walk_call_graph()

    # --- names ---------------------------------------------------------------------------------
    def _collect_imports(self) -> None:
        for node in ast.walk(self.tree):
            if isinstance(node, ast.Import):
                for alias in node.names:
                    bound = alias.asname or alias.name.split(".")[0]
                    self.imports.append((alias.name, bound, node.lineno))
                    self.aliases[bound] = alias.name if alias.asname else alias.name.split(".")[0]
            elif isinstance(node, ast.ImportFrom):
                module = "." * node.level + (node.module or "")
                for alias in node.names:
                    full = f"{module}.{alias.name}" if module and not module.endswith(".") else module + alias.name
                    self.imports.append((full, alias.asname or alias.name, node.lineno))
                    if alias.name != "*":
                        self.aliases[alias.asname or alias.name] = full

    def _module_level_names(self) -> set[str]:
        names = set()
        for node in self.tree.body:
            targets = node.targets if isinstance(node, ast.Assign) else [node.target] if isinstance(
                node, (ast.AnnAssign, ast.AugAssign)) else []
            for target in targets:
                names.update(n.id for n in ast.walk(target) if isinstance(n, ast.Name))
        return names

    def _collect_aliases_by_assignment(self) -> None:
        """`mm = torch.matmul` at module level and `self.mm = torch.matmul` anywhere act as imports."""
        for _ in range(2):
            for node in ast.walk(self.tree):
                if not isinstance(node, ast.Assign):
                    continue
                value_name = self.qualname(node.value)
                for target in node.targets:
                    if isinstance(target, ast.Name) and node in self.tree.body and value_name \
                            and value_name.split(".")[0] in {m.split(".")[0] for m, _, _ in self.imports}:
                        self.aliases.setdefault(target.id, value_name)
                    elif isinstance(target, ast.Attribute) and isinstance(target.value, ast.Name) \
                            and target.value.id == "self":
                        key = f"self.{target.attr}"
                        if value_name and value_name.split(".")[0] in {m.split(".")[0] for m, _, _ in self.imports}:
                            self.aliases.setdefault(key, value_name)
                        if isinstance(node.value, ast.Call) and isinstance(node.value.func, ast.Name):
                            if node.value.func.id in self.classes:
                                self.self_classes[target.attr] = node.value.func.id
                        if isinstance(node.value, ast.Name) and node.value.id in self.functions:
                            self.self_functions[target.attr] = node.value.id

    def qualname(self, node: ast.AST) -> str | None:
        """Fully qualified dotted name of a Name/Attribute chain, through import aliases."""
        if isinstance(node, ast.Name):
            return self.aliases.get(node.id)
        if isinstance(node, ast.Attribute):
            if isinstance(node.value, ast.Name) and node.value.id == "self":
                return self.aliases.get(f"self.{node.attr}")
            inner = self.qualname(node.value)
            return f"{inner}.{node.attr}" if inner else None
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "getattr" \
                and len(node.args) >= 2 and isinstance(node.args[1], ast.Constant) and isinstance(node.args[1].value, str):
            inner = self.qualname(node.args[0])
            return f"{inner}.{node.args[1].value}" if inner else None
        return None

    def outermost_chains(self, root: ast.AST) -> Iterator[tuple[ast.AST, str]]:
        """Each maximal Name/Attribute chain under root that resolves to an imported name."""
        for node in ast.walk(root):
            if isinstance(node, (ast.Name, ast.Attribute)):
                parent = self.parents.get(node)
                if isinstance(parent, ast.Attribute) and parent.value is node:
                    continue
                name = self.qualname(node)
                if name:
                    yield node, name

    def enclosing_class(self, node: ast.AST) -> ast.ClassDef | None:
        while node is not None:
            node = self.parents.get(node)
            if isinstance(node, ast.ClassDef):
                return node
        return None

    # --- the extension module ------------------------------------------------------------------
    def _ext_builders(self) -> set[str]:
        """Names of functions (or methods) that build or return the compiled extension."""
        builders: set[str] = set()
        for node in ast.walk(self.tree):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and any(
                    isinstance(c, ast.Call) and call_tail(c) == "load_inline" for c in ast.walk(node)):
                builders.add(node.name)
        return builders

    def is_ext_build(self, value: ast.AST | None) -> bool:
        if isinstance(value, ast.Constant) and value.value is None:
            return True
        if isinstance(value, ast.Await):
            value = value.value
        return isinstance(value, ast.Call) and (call_tail(value) == "load_inline" or call_tail(value) in self.builders)

    def _ext_handles(self) -> set[str]:
        handles: set[str] = set()
        for node in ast.walk(self.tree):
            if isinstance(node, (ast.Assign, ast.AnnAssign)) and node.value is not None and self.is_ext_build(node.value) \
                    and not (isinstance(node.value, ast.Constant)):
                targets = node.targets if isinstance(node, ast.Assign) else [node.target]
                for target in targets:
                    name = dotted(target)
                    if name:
                        handles.add(name)
        return handles

    def is_ext_expr(self, node: ast.AST) -> bool:
        name = dotted(node)
        if name and (name in self.ext_handles or name.split(".")[0] in self.ext_handles):
            return True
        if isinstance(node, ast.Attribute) and self.is_ext_expr(node.value):
            return True
        return isinstance(node, ast.Call) and self.is_ext_build(node)

    # --- call graph and taint ------------------------------------------------------------------
    def model_new(self) -> ast.ClassDef | None:
        return self.classes.get("ModelNew")

    def class_methods(self, cls: ast.ClassDef, seen: set[str] | None = None) -> dict[str, ast.FunctionDef]:
        """Methods of a class, including those of its bases defined in this file."""
        seen = seen or set()
        seen.add(cls.name)
        methods: dict[str, ast.FunctionDef] = {}
        for base in cls.bases:
            if isinstance(base, ast.Name) and base.id in self.classes and base.id not in seen:
                methods.update(self.class_methods(self.classes[base.id], seen))
        for node in cls.body:
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                methods[node.name] = node
        return methods

    def _owner_of(self, func: ast.AST) -> ast.ClassDef | None:
        parent = self.parents.get(func)
        return parent if isinstance(parent, ast.ClassDef) else None

    def _add(self, func: ast.AST, tainted: set[str], work: list) -> None:
        entry = self.reachable.get(func)
        if entry is None:
            entry = Function(func, self._owner_of(func))
            self.reachable[func] = entry
            entry.tainted_params = set(tainted)
            work.append(entry)
        elif not tainted <= entry.tainted_params:
            entry.tainted_params |= tainted
            work.append(entry)

    def _walk_call_graph(self) -> None:
        model = self.model_new()
        if model is None:
            return
        work: list[Function] = []
        methods = self.class_methods(model)
        for name in ("forward", "__call__"):
            if name in methods:
                self._add(methods[name], set(param_names(methods[name])[1:]), work)
        # any other module in the file may end up called by forward (ModuleList, hooks, containers)
        for cls in self.classes.values():
            if cls is not model:
                for name, method in self.class_methods(cls).items():
                    if name in ("forward", "__call__"):
                        self._add(method, set(param_names(method)[1:]), work)
        rounds = 0
        while work and rounds < 500:
            rounds += 1
            entry = work.pop()
            entry.tainted = self._taint(entry.node, entry.tainted_params)
            for node in ast.walk(entry.node):
                if isinstance(node, ast.Call):
                    for callee, skip in self._callees(node, entry.owner):
                        if skip < 0:
                            self._add(callee, set(param_names(callee)[1:]), work)
                            continue
                        self._add(callee, self.argument_taint(callee, skip, node, entry.tainted), work)
                elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load):
                    parent = self.parents.get(node)
                    if isinstance(parent, ast.Call) and parent.func is node:
                        continue
                    if node.id in self.functions:       # passed around as a callback: assume tensors
                        callee = self.functions[node.id]
                        self._add(callee, set(param_names(callee)), work)
                    elif node.id in self.classes and not (isinstance(parent, ast.Attribute)):
                        for method in self.class_methods(self.classes[node.id]).values():
                            self._add(method, set(param_names(method)[1:]), work)

    def argument_taint(self, callee: ast.AST, skip: int, call: ast.Call, tainted: set[str]) -> set[str]:
        """The callee's parameters that receive a tensor at this call."""
        params = param_names(callee)[skip:]
        out = set()
        for param, arg in zip(params, call.args):
            if isinstance(arg, ast.Starred) or self.expr_tainted(arg, tainted):
                out.add(param)
        for keyword in call.keywords:
            if self.expr_tainted(keyword.value, tainted):
                out.update(params if keyword.arg is None else [keyword.arg])
        if any(isinstance(a, ast.Starred) and self.expr_tainted(a.value, tainted) for a in call.args):
            out.update(params)
        return out

    def returns_tainted(self, func: ast.AST, params: set[str]) -> bool:
        """Whether a function in this file, given tensors in `params`, returns or yields a tensor.

        What a helper gives back is read from its `return`/`yield` values, not from its arguments:
        `n_chunks(q)` returning `q.shape[1] // 64` is an int. A recursive cycle counts as a tensor.
        """
        key = (func, frozenset(params))
        if key not in self._returns:
            self._returns[key] = True          # in progress: a cycle is assumed to carry tensors
            tainted = self._taint(func, params)
            self._returns[key] = any(value is not None and self.expr_tainted(value, tainted)
                                     for value in returned_values(func))
        return self._returns[key]

    def function_callees(self, call: ast.Call) -> list[tuple[ast.AST, int]] | None:
        """The functions of this file a call runs right away, or None if it is not (only) such a call.

        Instantiating a class gives an object whose methods may hold tensors, so it stays a tensor.
        """
        enclosing = self.parents.get(call)
        while enclosing is not None and not isinstance(enclosing, (ast.FunctionDef, ast.AsyncFunctionDef)):
            enclosing = self.parents.get(enclosing)
        owner = self._owner_of(enclosing) if enclosing is not None else None
        callees = self._callees(call, owner)
        if not callees or any(skip < 0 or getattr(callee, "name", "") == "__init__" for callee, skip in callees):
            return None
        return callees

    def _callees(self, call: ast.Call, owner: ast.ClassDef | None) -> list[tuple[ast.AST, int]]:
        """Functions in this file a call may run, with how many leading parameters the call does not fill."""
        func = call.func
        out: list[tuple[ast.AST, int]] = []
        if isinstance(func, ast.Name) and func.id in self.nested_defs:
            out.append((self.nested_defs[func.id], 0))
        elif isinstance(func, ast.Name):
            if func.id in self.functions:
                out.append((self.functions[func.id], 0))
            elif func.id in self.classes:
                methods = self.class_methods(self.classes[func.id])
                if "__init__" in methods:
                    out.append((methods["__init__"], 1))
                for name in ("forward", "__call__"):
                    if name in methods:
                        out.append((methods[name], -1))      # called later, with tensors
        elif isinstance(func, ast.Attribute):
            receiver = func.value
            if isinstance(receiver, ast.Name) and receiver.id == "self" and owner is not None:
                methods = self.class_methods(owner)
                if func.attr in methods:
                    out.append((methods[func.attr], 0 if is_static(methods[func.attr]) else 1))
                elif func.attr in self.self_classes:
                    cls_methods = self.class_methods(self.classes[self.self_classes[func.attr]])
                    out += [(cls_methods[n], 1) for n in ("forward", "__call__") if n in cls_methods]
                elif func.attr in self.self_functions:
                    out.append((self.functions[self.self_functions[func.attr]], 0))
            elif isinstance(receiver, ast.Attribute) and isinstance(receiver.value, ast.Name) \
                    and receiver.value.id == "self" and receiver.attr in self.self_classes:
                cls_methods = self.class_methods(self.classes[self.self_classes[receiver.attr]])
                if func.attr in cls_methods:
                    out.append((cls_methods[func.attr], 1))
            elif isinstance(receiver, ast.Name) and receiver.id in self.classes:
                cls_methods = self.class_methods(self.classes[receiver.id])
                if func.attr in cls_methods:
                    method = cls_methods[func.attr]
                    out.append((method, 0 if is_static(method) and func.attr != "forward" else 1))
                elif func.attr == "apply" and "forward" in cls_methods:   # autograd.Function
                    out.append((cls_methods["forward"], 1))
            elif isinstance(receiver, ast.Call) and isinstance(receiver.func, ast.Name) and receiver.func.id == "super" \
                    and owner is not None:
                methods = self.class_methods(owner)
                if func.attr in methods:
                    out.append((methods[func.attr], 1))
        return out

    def _taint(self, func: ast.AST, params: set[str]) -> set[str]:
        tainted = set(params)
        for _ in range(10):
            before = len(tainted)
            for node in ast.walk(func):
                if isinstance(node, ast.Assign):
                    for target in node.targets:
                        self._assign(target, node.value, tainted)
                elif isinstance(node, (ast.AnnAssign, ast.NamedExpr)) and node.value is not None:
                    self._assign(node.target, node.value, tainted)
                elif isinstance(node, ast.AugAssign) and self.expr_tainted(node.value, tainted):
                    self._assign(node.target, node.value, tainted)
                elif isinstance(node, (ast.For, ast.AsyncFor, ast.comprehension)):
                    self._assign(node.target, node.iter, tainted)
                elif isinstance(node, ast.withitem) and node.optional_vars is not None:
                    self._assign(node.optional_vars, node.context_expr, tainted)
                elif isinstance(node, ast.Call) and any(self.expr_tainted(a, tainted) for a in
                                                        list(node.args) + [k.value for k in node.keywords]):
                    for arg in node.args:      # map(lambda a, b: a * b, q, k)
                        if isinstance(arg, ast.Lambda):
                            tainted.update(param_names(arg))
                    func = node.func           # parts.append(q): the list now holds a tensor
                    if isinstance(func, ast.Attribute) and func.attr in MUTATORS:
                        root = func.value
                        while isinstance(root, (ast.Attribute, ast.Subscript)):
                            root = root.value
                        if isinstance(root, ast.Name) and root.id != "self":
                            tainted.add(root.id)
            if len(tainted) == before:
                break
        return tainted

    def _assign(self, target: ast.AST, value: ast.AST, tainted: set[str]) -> None:
        if isinstance(target, (ast.Tuple, ast.List)) and isinstance(value, (ast.Tuple, ast.List)) \
                and len(target.elts) == len(value.elts):
            for t, v in zip(target.elts, value.elts):
                self._assign(t, v, tainted)
            return
        if isinstance(target, (ast.Tuple, ast.List)) and isinstance(value, ast.Call) and not value.keywords \
                and isinstance(value.func, ast.Name) and value.func.id not in self.functions:
            # `for i, t in enumerate(xs)`: i counts; `for a, b in zip(xs, ys)`: each takes its own sequence's items
            if value.func.id == "enumerate" and len(target.elts) == 2 and len(value.args) == 1:
                self._assign(target.elts[1], value.args[0], tainted)
                return
            if value.func.id == "zip" and len(target.elts) == len(value.args) \
                    and not any(isinstance(a, ast.Starred) for a in value.args):
                for t, v in zip(target.elts, value.args):
                    self._assign(t, v, tainted)
                return
        if self.expr_tainted(value, tainted):
            for node in assigned_names(target):
                tainted.add(node)

    def expr_tainted(self, node: ast.AST, tainted: set[str]) -> bool:
        """Whether an expression plausibly holds a tensor derived from forward's inputs."""
        if isinstance(node, ast.Name):
            return node.id in tainted
        if isinstance(node, ast.Attribute):
            if node.attr in SCALAR_ATTRS or (isinstance(node.value, ast.Name) and node.value.id == "self"):
                return False
            if self.qualname(node):
                return False
            return self.expr_tainted(node.value, tainted)
        if isinstance(node, ast.Subscript):
            return self.expr_tainted(node.value, tainted)
        if isinstance(node, ast.Call):
            func = node.func
            if isinstance(func, ast.Name) and func.id in SCALAR_BUILTINS:
                return False
            if isinstance(func, ast.Attribute) and func.attr in SCALAR_METHODS:
                return False
            name = self.qualname(func)
            if name and name.startswith("torch.") and not starts(name, TORCH_NON_COMPUTE_PREFIXES) \
                    and name.split(".")[-1] not in {"device", "Size", "finfo", "iinfo", "is_tensor", "numel",
                                                    "is_floating_point", "get_default_dtype", "dtype"}:
                return True
            callees = self.function_callees(node)
            if callees is not None:     # a helper of this file: a tensor only if it returns one
                return any(self.returns_tainted(callee, self.argument_taint(callee, skip, node, tainted))
                           for callee, skip in callees)
            if isinstance(func, ast.Attribute) and self.expr_tainted(func.value, tainted):
                return True
            args = list(node.args) + [k.value for k in node.keywords]
            return any(self.expr_tainted(a, tainted) for a in args)
        if isinstance(node, ast.BinOp):
            return self.expr_tainted(node.left, tainted) or self.expr_tainted(node.right, tainted)
        if isinstance(node, ast.UnaryOp):
            return not isinstance(node.op, ast.Not) and self.expr_tainted(node.operand, tainted)
        if isinstance(node, ast.BoolOp):
            return any(self.expr_tainted(v, tainted) for v in node.values)
        if isinstance(node, ast.IfExp):
            return self.expr_tainted(node.body, tainted) or self.expr_tainted(node.orelse, tainted)
        if isinstance(node, (ast.Tuple, ast.List, ast.Set)):
            return any(self.expr_tainted(e, tainted) for e in node.elts)
        if isinstance(node, ast.Dict):
            return any(self.expr_tainted(v, tainted) for v in node.values if v is not None)
        if isinstance(node, (ast.Starred, ast.NamedExpr, ast.Await)):
            return self.expr_tainted(node.value, tainted)
        if isinstance(node, (ast.ListComp, ast.SetComp, ast.GeneratorExp)):
            return self.expr_tainted(node.elt, tainted)
        if isinstance(node, ast.DictComp):
            return self.expr_tainted(node.value, tainted)
        return False

    def in_reachable(self) -> Iterator[tuple[Function, ast.AST]]:
        """Every node in forward and what it calls (each function once)."""
        for entry in self.reachable.values():
            for node in ast.walk(entry.node):
                yield entry, node


def assigned_names(target: ast.AST) -> Iterator[str]:
    """The local names an assignment target binds or fills: `a, *b` -> a, b; `out[i]`, `box.x` -> out, box."""
    if isinstance(target, ast.Name):
        yield target.id
    elif isinstance(target, (ast.Tuple, ast.List)):
        for element in target.elts:
            yield from assigned_names(element)
    elif isinstance(target, ast.Starred):
        yield from assigned_names(target.value)
    elif isinstance(target, (ast.Subscript, ast.Attribute)):
        root = target.value
        while isinstance(root, (ast.Attribute, ast.Subscript)):
            root = root.value
        if isinstance(root, ast.Name):
            yield root.id


def returned_values(func: ast.AST) -> Iterator[ast.AST | None]:
    """The `return` and `yield` values of a function (a lambda's body), not those of functions nested in it."""
    if isinstance(func, ast.Lambda):
        yield func.body
        return
    stack = list(ast.iter_child_nodes(func))
    while stack:
        node = stack.pop()
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)):
            continue
        if isinstance(node, (ast.Return, ast.Yield, ast.YieldFrom)):
            yield node.value
        stack.extend(ast.iter_child_nodes(node))


def is_static(method: ast.AST) -> bool:
    return any(dotted(d) == "staticmethod" for d in getattr(method, "decorator_list", []))


def call_tail(call: ast.Call) -> str:
    func = call.func
    return func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else ""


def param_names(func: ast.AST) -> list[str]:
    args = func.args
    names = [a.arg for a in args.posonlyargs + args.args]
    if args.vararg:
        names.append(args.vararg.arg)
    names += [a.arg for a in args.kwonlyargs]
    if args.kwarg:
        names.append(args.kwarg.arg)
    return names


def analysis_of(source: CandidateSource) -> Analysis:
    cached = getattr(source.tree, "_harness_integrity", None)
    if cached is None:
        cached = Analysis(source.tree, source.reference_module)
        source.tree._harness_integrity = cached
    return cached
