"""The AST walker: a ``@kiln.jit`` function's Python AST -> semantic-layer calls.

Supported Python: assignments (names and tuples), augmented assignments,
expressions (arithmetic, comparisons, unary operators, calls, attributes,
``x[:, None]`` indexing, ``x.T``, conditional expressions on constexprs), ``if`` on
constexpr conditions (resolved here, at compile time), ``assert`` on
constexprs, ``pass``, ``return`` (in inlined callees: one value), calls to
``kiln.language`` builtins, to tensor methods (``x.to(dtype)``) and to other
``@kiln.jit`` functions (inlined), and calls of a few Python builtins / ``math``
functions on constexpr arguments (folded). Everything else is a
CompilationError at the offending node.
"""

from __future__ import annotations

import ast
import builtins
import inspect
import linecache
import operator
import textwrap
from types import ModuleType
from typing import Any, Dict, List, Optional, Tuple

from .. import language as kl_language
from ..language import core as lc
from ..language.core import TENSOR_METHODS, KernelFunction, constexpr, dtype, is_builtin, tensor
from ..language.errors import CompilationError, SemanticError
from .semantic import Semantic


class FunctionSource:
    """A Python function's source, AST and name environment, with the mapping
    from AST positions back to the user's file."""

    def __init__(self, fn: Any):
        self.fn = fn
        self.name = fn.__name__
        try:
            self.filename, lines, first = _read_source(fn)
        except (OSError, TypeError) as e:
            raise TypeError(f"kiln.jit: cannot read the source of {fn.__qualname__}: {e}") \
                from None
        raw = "".join(lines)
        self.src = textwrap.dedent(raw)
        first_raw = next((ln for ln in lines if ln.strip()), "")
        first_dedented = next((ln for ln in self.src.splitlines() if ln.strip()), "")
        self.col_shift = len(first_raw) - len(first_raw.lstrip()) - (
            len(first_dedented) - len(first_dedented.lstrip()))
        self.first_line = first
        self.lines = lines
        tree = ast.parse(self.src)
        defs = [n for n in tree.body if isinstance(n, ast.FunctionDef)]
        if not defs:
            raise TypeError(f"kiln.jit: {fn.__qualname__} is not a plain function")
        self.tree: ast.FunctionDef = defs[0]
        self.globals = fn.__globals__
        self.closure: Dict[str, Any] = {}
        if fn.__closure__:
            for name, cell in zip(fn.__code__.co_freevars, fn.__closure__):
                try:
                    self.closure[name] = cell.cell_contents
                except ValueError:
                    pass
        sig = inspect.signature(fn)
        self.params = list(sig.parameters.values())
        self.param_names = [p.name for p in self.params]
        self.constexpr_params = {p.name for p in self.params if _is_constexpr_annotation(
            p.annotation, self.globals)}

    def location(self, node: ast.AST) -> Tuple[str, int, int, Optional[str]]:
        lineno = getattr(node, "lineno", 1)
        col = getattr(node, "col_offset", 0) + self.col_shift + 1
        idx = lineno - 1
        line = self.lines[idx] if 0 <= idx < len(self.lines) else None
        return self.filename, self.first_line + lineno - 1, col, line


def _read_source(fn: Any) -> Tuple[str, List[str], int]:
    """(file, source lines, first line number) of a function. Straight from its code
    object's file and first line through linecache: inspect.getsourcelines would first
    search every module in sys.modules for the file (milliseconds once torch is loaded),
    which a warm cache hit cannot afford."""
    code = fn.__code__
    filename = code.co_filename
    all_lines = linecache.getlines(filename, fn.__globals__)
    start = code.co_firstlineno - 1  # the first decorator's line
    if not all_lines or not 0 <= start < len(all_lines):
        lines, first = inspect.getsourcelines(fn)
        return inspect.getsourcefile(fn) or filename, lines, first
    return filename, inspect.getblock(all_lines[start:]), start + 1


def _is_constexpr_annotation(annotation: Any, globals_: Dict[str, Any]) -> bool:
    if annotation is inspect.Parameter.empty:
        return False
    if annotation is constexpr:
        return True
    if isinstance(annotation, str):
        return annotation.split(".")[-1].strip() == "constexpr"
    return False


class _BoundMethod:
    def __init__(self, obj: tensor, name: str):
        self.obj = obj
        self.name = name


_BINOPS = {ast.Add: "add", ast.Sub: "sub", ast.Mult: "mul", ast.Div: "truediv",
           ast.FloorDiv: "floordiv", ast.Mod: "mod", ast.BitAnd: "and", ast.BitOr: "or",
           ast.BitXor: "xor", ast.LShift: "lshift", ast.RShift: "rshift"}
_PYBINOPS = {"add": operator.add, "sub": operator.sub, "mul": operator.mul,
             "truediv": operator.truediv, "floordiv": operator.floordiv, "mod": operator.mod,
             "and": operator.and_, "or": operator.or_, "xor": operator.xor,
             "lshift": operator.lshift, "rshift": operator.rshift, "pow": operator.pow}
_CMPOPS = {ast.Lt: "lt", ast.LtE: "le", ast.Gt: "gt", ast.GtE: "ge", ast.Eq: "eq",
           ast.NotEq: "ne"}
_PYCMPOPS = {"lt": operator.lt, "le": operator.le, "gt": operator.gt, "ge": operator.ge,
             "eq": operator.eq, "ne": operator.ne}
_UNARYOPS = {ast.USub: "neg", ast.UAdd: "pos", ast.Invert: "invert", ast.Not: "not"}
_PYUNARYOPS = {"neg": operator.neg, "pos": operator.pos, "invert": operator.invert,
               "not": operator.not_}

#: Python builtins a kernel may call on constexprs (folded at compile time).
_FOLDABLE_BUILTINS = {builtins.min, builtins.max, builtins.abs, builtins.int, builtins.float,
                      builtins.bool, builtins.len, builtins.round, builtins.pow}

_UNSUPPORTED = {
    "While": "`while` loops are not supported",
    "AsyncFor": "`async for` is not supported",
    "Try": "`try` is not supported in kernels",
    "TryStar": "`try` is not supported in kernels",
    "With": "`with` is not supported in kernels",
    "AsyncWith": "`async with` is not supported",
    "Lambda": "lambda is not supported in kernels",
    "ListComp": "list comprehensions are not supported in kernels",
    "SetComp": "set comprehensions are not supported in kernels",
    "DictComp": "dict comprehensions are not supported in kernels",
    "GeneratorExp": "generator expressions are not supported in kernels",
    "FunctionDef": "nested function definitions are not supported (use a @kiln.jit function)",
    "AsyncFunctionDef": "async functions are not supported",
    "ClassDef": "class definitions are not supported in kernels",
    "Global": "`global` is not supported in kernels",
    "Nonlocal": "`nonlocal` is not supported in kernels",
    "Delete": "`del` is not supported in kernels",
    "Raise": "`raise` is not supported in kernels (use kl.static_assert)",
    "Import": "imports are not supported inside kernels",
    "ImportFrom": "imports are not supported inside kernels",
    "Yield": "`yield` is not supported in kernels",
    "YieldFrom": "`yield from` is not supported in kernels",
    "Await": "`await` is not supported in kernels",
    "Match": "`match` is not supported in kernels",
    "NamedExpr": "`:=` is not supported in kernels",
    "Starred": "starred expressions are not supported in kernels",
    "JoinedStr": "f-strings are not supported in kernels",
    "Dict": "dict literals are not supported in kernels",
    "Set": "set literals are not supported in kernels",
}

_MAX_INLINE_DEPTH = 32


class CodeGenerator(ast.NodeVisitor):
    """Walks one function body. The kernel itself and every inlined callee get
    their own generator sharing the builder and the semantic layer."""

    def __init__(self, source: FunctionSource, semantic: Semantic, scope: Dict[str, Any],
                 call_stack: Optional[List[Tuple[str, int, int, Optional[str]]]] = None,
                 depth: int = 0):
        self.source = source
        self.semantic = semantic
        self.builder = semantic.builder
        self.scope: Dict[str, Any] = dict(scope)
        self.call_stack = list(call_stack or [])
        self.depth = depth
        self.returned = False
        self.return_value: Any = None
        self._last_node: Optional[ast.AST] = None
        #: The `return` statement that set `returned` (errors about it point there).
        self._return_node: Optional[ast.AST] = None
        #: The statement that last assigned each name (errors about a variable
        #: changing type across control flow point there).
        self._assigned_at: Dict[str, ast.AST] = {}

    # ------------------------------------------------------------------
    # Errors and locations
    # ------------------------------------------------------------------
    def error(self, node: ast.AST, message: str) -> CompilationError:
        filename, lineno, col, line = self.source.location(node)
        return CompilationError(filename, lineno, col, message, line, self.call_stack)

    def visit(self, node: ast.AST) -> Any:
        if hasattr(node, "lineno"):
            filename, lineno, col, _ = self.source.location(node)
            self.builder.set_loc(filename, lineno, col)
        try:
            return super().visit(node)
        except CompilationError:
            raise
        except SemanticError as e:
            raise self.error(node, str(e)) from None
        except RecursionError:
            raise self.error(node, "expression too deeply nested") from None
        except Exception as e:  # a bug or an unexpected value: still point at the source
            if not hasattr(node, "lineno"):
                raise
            raise self.error(node, f"{type(e).__name__}: {e}") from e

    def generic_visit(self, node: ast.AST) -> Any:
        name = type(node).__name__
        raise self.error(node, _UNSUPPORTED.get(name, f"unsupported syntax: {name}"))

    # ------------------------------------------------------------------
    # Statements
    # ------------------------------------------------------------------
    def run_body(self, stmts: List[ast.stmt]) -> None:
        for stmt in stmts:
            if self.returned:
                return
            self.visit(stmt)

    def visit_Expr(self, node: ast.Expr) -> None:
        if isinstance(node.value, ast.Constant) and isinstance(node.value.value, str):
            return  # docstring
        self.visit(node.value)

    def visit_Pass(self, node: ast.Pass) -> None:
        return None

    def _assign_target(self, target: ast.expr, value: Any, node: ast.AST) -> None:
        if isinstance(target, ast.Name):
            if target.id in self.source.constexpr_params and not isinstance(value, constexpr):
                raise self.error(target, f"cannot assign a runtime value to constexpr "
                                         f"parameter '{target.id}'")
            self.scope[target.id] = value
            self._assigned_at[target.id] = node
            return
        if isinstance(target, (ast.Tuple, ast.List)):
            vals = value.value if isinstance(value, constexpr) else value
            if not isinstance(vals, tuple) or len(vals) != len(target.elts):
                raise self.error(target, "cannot unpack: the value is not a tuple of "
                                         f"{len(target.elts)} elements")
            for t, v in zip(target.elts, vals):
                self._assign_target(t, v if isinstance(v, (tensor, constexpr)) else
                                    constexpr(v), node)
            return
        raise self.error(target, "only assignments to names and tuples of names are supported "
                                 f"(not {type(target).__name__})")

    def visit_Assign(self, node: ast.Assign) -> None:
        value = self.visit(node.value)
        for target in node.targets:
            self._assign_target(target, value, node)

    def visit_AnnAssign(self, node: ast.AnnAssign) -> None:
        if node.value is None:
            return
        value = self.visit(node.value)
        ann = self.visit(node.annotation)
        if (ann is constexpr or (isinstance(ann, constexpr) and ann.value is constexpr)) and \
                isinstance(value, tensor):
            raise self.error(node.value, "a constexpr variable needs a compile-time value")
        self._assign_target(node.target, value, node)

    def visit_AugAssign(self, node: ast.AugAssign) -> None:
        if not isinstance(node.target, ast.Name):
            raise self.error(node.target, "augmented assignment needs a plain name")
        cur = self._lookup(node.target.id, node.target)
        op = _BINOPS.get(type(node.op))
        if op is None:
            raise self.error(node, f"unsupported operator {type(node.op).__name__}")
        self._assign_target(node.target, self._binary(op, cur, self.visit(node.value)), node)

    def visit_If(self, node: ast.If) -> None:
        cond = self.visit(node.test)
        if not isinstance(cond, tensor):
            self.run_body(node.body if _truth(cond) else node.orelse)
            return
        if cond.type.is_block():
            raise self.error(node.test, "an `if` condition must be a scalar (use kl.where for "
                                        "elementwise selection)")
        if not cond.dtype.is_bool():
            cond = self.semantic.binary("ne", cond, 0)
        assigned = _assigned_names(node.body) | _assigned_names(node.orelse)
        saved = dict(self.scope)
        op = self.builder.if_begin(cond.handle)
        self.scope = dict(saved)
        self._run_branch(node.body, "if")
        then_scope, then_sites = self.scope, dict(self._assigned_at)
        self.builder.if_else(op)
        self.scope = dict(saved)
        self._run_branch(node.orelse, "else")
        else_scope, else_sites = self.scope, dict(self._assigned_at)

        merged, then_vals, else_vals, types = [], [], [], []
        for name in sorted(assigned):
            if name not in then_scope or name not in else_scope:
                continue  # defined on one path only: not visible after the `if`
            tv, ev = then_scope[name], else_scope[name]
            if not isinstance(tv, tensor) and not isinstance(ev, tensor):
                if _unwrap(tv) is _unwrap(ev) or _unwrap(tv) == _unwrap(ev):
                    saved[name] = tv
                    continue
                # Different compile-time values: a runtime value of the type both
                # promote to (1 and 2.5 give f32).
                a = self.semantic.to_tensor(_unwrap(tv))
                b = self.semantic.to_tensor(_unwrap(ev))
                ty = self.semantic.promote(a.dtype, b.dtype)
            else:
                ty = tv.type if isinstance(tv, tensor) else ev.type
            merged.append(name)
            types.append(ty)
            then_vals.append(tv)
            else_vals.append(ev)
        # Compile-time values become constants of the other branch's type, in their branch.
        self.builder.if_then(op)
        then_vals = [self._materialize(v, ty, then_sites.get(n, node), n)
                     for n, v, ty in zip(merged, then_vals, types)]
        self.builder.if_else(op)
        else_vals = [self._materialize(v, ty, else_sites.get(n, node), n)
                     for n, v, ty in zip(merged, else_vals, types)]
        results = self.builder.if_end(op, [v.handle for v in then_vals],
                                      [v.handle for v in else_vals])
        self.scope = saved
        for name, ty, handle in zip(merged, types, results):
            self.scope[name] = tensor(handle, ty)

    def _run_branch(self, body: List[ast.stmt], what: str) -> None:
        self.run_body(body)
        if self.returned:
            raise self.error(self._return_node or body[-1],
                             f"`return` inside a runtime `{what}` is not supported")

    def _materialize(self, value: Any, ty: Any, node: ast.AST, name: str = "") -> tensor:
        """`value` as a tensor of type `ty` (a constexpr becomes a constant)."""
        if isinstance(value, tensor):
            if value.type != ty:
                what = f"'{name}'" if name else "a variable"
                raise self.error(node, f"{what} changes type across control flow: {ty} vs "
                                       f"{value.type} (cast it explicitly)")
            return value
        v = self.semantic.to_tensor(_unwrap(value), ty.scalar)
        v = self.semantic.cast(v, ty.scalar)
        if ty.is_block():
            v = self.semantic.broadcast_to(v, ty.shape)
        return v

    def visit_For(self, node: ast.For) -> None:
        if node.orelse:
            raise self.error(node, "`for ... else` is not supported")
        if not isinstance(node.target, ast.Name):
            raise self.error(node.target, "the loop variable must be a plain name")
        it = node.iter
        if not isinstance(it, ast.Call):
            raise self.error(it, "kernel loops iterate over range(...) or kl.static_range(...)")
        fn = _unwrap(self.visit(it.func))
        args = [self.visit(a) for a in it.args]
        if not 1 <= len(args) <= 3:
            raise self.error(it, "range takes 1 to 3 arguments")
        num_stages = None
        warp_specialize = False
        if fn is kl_language.range:
            for kw in it.keywords:
                if kw.arg == "warp_specialize":
                    warp_specialize = _unwrap(self.visit(kw.value))
                    if not isinstance(warp_specialize, bool):
                        raise self.error(kw, f"warp_specialize must be a constexpr bool, got "
                                             f"{warp_specialize!r}")
                    continue
                if kw.arg != "num_stages":
                    raise self.error(kw, f"kl.range takes num_stages= and warp_specialize=, "
                                         f"not {kw.arg}=")
                num_stages = _unwrap(self.visit(kw.value))
                most = kl_language.range.MAX_NUM_STAGES
                if num_stages is not None and (not isinstance(num_stages, int) or
                                               isinstance(num_stages, bool) or
                                               not 1 <= num_stages <= most):
                    raise self.error(kw, f"num_stages must be a positive constexpr int (at "
                                         f"most {most}), got {num_stages!r}")
            if warp_specialize and (num_stages is None or num_stages < 2):
                raise self.error(it, f"warp_specialize=True needs num_stages >= 2 (a ring for "
                                     f"the producer to fill), got num_stages={num_stages!r}")
            fn = builtins.range
        elif it.keywords:
            raise self.error(it, "kernel loops iterate over range(...) or kl.static_range(...)")
        if fn is kl_language.static_range:
            if any(isinstance(a, tensor) for a in args):
                raise self.error(it, "kl.static_range needs constexpr bounds (use range for a "
                                     "runtime loop)")
            for v in range(*(_unwrap(a) for a in args)):
                self.scope[node.target.id] = constexpr(v)
                self.run_body(node.body)
                if self.returned:
                    raise self.error(self._return_node or node,
                                     "`return` inside a loop is not supported")
            return
        if fn is not builtins.range:
            raise self.error(it, "kernel loops iterate over range(...) or kl.static_range(...)")
        self._runtime_for(node, args, num_stages, warp_specialize)

    def _runtime_for(self, node: ast.For, args: List[Any], num_stages: Optional[int] = None,
                     warp_specialize: bool = False) -> None:
        sem = self.semantic
        if len(args) == 1:
            args = [constexpr(0), args[0], constexpr(1)]
        elif len(args) == 2:
            args = [args[0], args[1], constexpr(1)]
        step = args[2]
        if not isinstance(step, tensor) and _unwrap(step) <= 0:
            raise self.error(node.iter, "a runtime loop needs a positive step")
        for a in args:
            if isinstance(a, tensor) and (a.type.is_block() or not a.dtype.is_int()):
                raise self.error(node.iter, f"loop bounds must be scalar integers, got {a.type}")
        ity = lc.int64 if any(isinstance(a, tensor) and a.dtype.primitive_bitwidth == 64
                              for a in args) else lc.int32
        lb, ub, st = (sem.cast(sem.to_tensor(_unwrap(a) if not isinstance(a, tensor) else a,
                                             ity), ity) for a in args)
        var = node.target.id
        if getattr(self.builder, "eager", False):  # the CPU interpreter runs the loop
            return self._eager_for(node, var, lb, ub, st, ity)
        assigned = _assigned_names(node.body) - {var}
        before = dict(self.scope)
        carried = sorted(n for n in assigned if n in before)

        # A carried compile-time value takes the type the body gives it: find it
        # by emitting the body once into a scratch block.
        if any(not isinstance(before[n], tensor) for n in carried):
            self.builder.begin_scratch()
            try:
                self.scope = dict(before)
                self.scope[var] = sem.cast(sem.to_tensor(0, ity), ity)
                self.run_body(node.body)
                after = self.scope
            finally:
                self.builder.discard_scratch()
                self.scope = before
                self.returned = False
            for n in carried:
                if isinstance(before[n], tensor):
                    continue
                if isinstance(after.get(n), tensor):
                    self.scope[n] = self._materialize(before[n], after[n].type, node)
                elif _unwrap(after.get(n)) != _unwrap(before[n]):
                    # A compile-time value that changes: carry it as a runtime value of
                    # its natural type (Python int -> i32, float -> f32).
                    self.scope[n] = sem.to_tensor(_unwrap(before[n]))
            carried = [n for n in carried if isinstance(self.scope[n], tensor)]
            before = dict(self.scope)

        # The loop's diagnostics (kiln-tile-pipeline-loads, kiln-tile-warp-specialize)
        # point at its `for`, not at the last expression of its header.
        filename, lineno, col, _ = self.source.location(node)
        self.builder.set_loc(filename, lineno, col)
        op = self.builder.for_begin(lb.handle, ub.handle, st.handle,
                                    [before[n].handle for n in carried])
        if num_stages is not None and num_stages > 1:
            self.builder.for_set_num_stages(op, num_stages)
        if warp_specialize:
            self.builder.for_set_warp_specialize(op)
        self.scope[var] = tensor(self.builder.for_induction_var(op), ity)
        for n, arg in zip(carried, self.builder.for_iter_args(op)):
            self.scope[n] = tensor(arg, before[n].type)
        self.run_body(node.body)
        if self.returned:
            raise self.error(self._return_node or node, "`return` inside a loop is not supported")
        yields = [self._materialize(self.scope[n], before[n].type,
                                    self._assigned_at.get(n, node), n).handle for n in carried]
        results = self.builder.for_end(op, yields)
        self.scope = {k: v for k, v in before.items()}
        for n, handle in zip(carried, results):
            self.scope[n] = tensor(handle, before[n].type)

    def _eager_for(self, node: ast.For, var: str, lb: tensor, ub: tensor, st: tensor,
                   ity: Any) -> None:
        """A runtime loop under an eager builder (kiln.interpreter): the body runs
        once per iteration, as the compiled scf.for would."""
        import numpy as np  # noqa: PLC0415 - eager builders are numpy-based

        lo, hi, step = (int(np.asarray(v.handle)) for v in (lb, ub, st))
        for i in range(lo, hi, step):
            self.scope[var] = tensor(self.builder.int_constant(self.semantic.ir_type(ity), i),
                                     ity)
            self.run_body(node.body)
            if self.returned:
                raise self.error(self._return_node or node,
                                 "`return` inside a loop is not supported")

    def visit_Assert(self, node: ast.Assert) -> None:
        cond = self.visit(node.test)
        if isinstance(cond, tensor):
            raise self.error(node.test, "`assert` needs a constexpr condition")
        if not _truth(cond):
            msg = self.visit(node.msg) if node.msg is not None else None
            msg = msg.value if isinstance(msg, constexpr) else msg
            raise self.error(node, f"assertion failed: {msg}" if msg else "assertion failed")

    def visit_Return(self, node: ast.Return) -> None:
        self.return_value = self.visit(node.value) if node.value is not None else None
        self.returned = True
        self._return_node = node

    # ------------------------------------------------------------------
    # Expressions
    # ------------------------------------------------------------------
    def visit_Constant(self, node: ast.Constant) -> Any:
        return constexpr(node.value)

    def _lookup(self, name: str, node: ast.AST) -> Any:
        if name in self.scope:
            return self.scope[name]
        for env in (self.source.closure, self.source.globals):
            if name in env:
                return _wrap_global(env[name])
        if hasattr(builtins, name):
            return getattr(builtins, name)
        raise self.error(node, f"name '{name}' is not defined")

    def visit_Name(self, node: ast.Name) -> Any:
        return self._lookup(node.id, node)

    def visit_Tuple(self, node: ast.Tuple) -> Any:
        return tuple(self.visit(e) for e in node.elts)

    def visit_List(self, node: ast.List) -> Any:
        """A list literal is an immutable sequence, as a tuple (``desc.load([i, j])``)."""
        return tuple(self.visit(e) for e in node.elts)

    def visit_Slice(self, node: ast.Slice) -> Any:
        parts = [None if p is None else _unwrap(self.visit(p))
                 for p in (node.lower, node.upper, node.step)]
        return slice(*parts)

    def visit_Attribute(self, node: ast.Attribute) -> Any:
        base = self.visit(node.value)
        attr = node.attr
        if isinstance(base, tensor):
            if attr in TENSOR_METHODS:
                return _BoundMethod(base, attr)
            if attr in ("dtype", "shape", "numel", "type"):
                return constexpr(getattr(base, attr))
            if attr == "T":
                return self.semantic.transpose_attr(base)
            raise self.error(node, f"tiles have no attribute '{attr}'")
        obj = base.value if isinstance(base, constexpr) else base
        if attr.startswith("_"):
            raise self.error(node, f"private attribute '{attr}' is not accessible in kernels")
        try:
            value = getattr(obj, attr)
        except AttributeError:
            raise self.error(node, f"{_describe(obj)} has no attribute '{attr}'") from None
        return _wrap_global(value)

    def visit_Subscript(self, node: ast.Subscript) -> Any:
        base = self.visit(node.value)
        index = self.visit(node.slice)
        if isinstance(index, tuple):
            index = tuple(_unwrap(i) for i in index)
        else:
            index = _unwrap(index)
        if isinstance(base, tensor):
            return self.semantic.subscript(base, index)
        obj = _unwrap(base)
        if isinstance(index, tensor) or (isinstance(index, tuple) and builtins.any(
                isinstance(i, tensor) for i in index)):
            raise self.error(node.slice, "indexing with a runtime value is not supported")
        return _wrap_global(obj[index])

    def visit_IfExp(self, node: ast.IfExp) -> Any:
        cond = self.visit(node.test)
        if isinstance(cond, tensor):
            raise self.error(node.test, "a conditional expression needs a constexpr condition "
                                        "(use kl.where for elementwise selection)")
        return self.visit(node.body if _truth(cond) else node.orelse)

    def _binary(self, op: str, lhs: Any, rhs: Any) -> Any:
        if not isinstance(lhs, tensor) and not isinstance(rhs, tensor):
            a, b = _unwrap(lhs), _unwrap(rhs)
            try:
                return constexpr(_PYBINOPS[op](a, b))
            except Exception as e:
                raise SemanticError(f"{type(e).__name__} in compile-time expression: {e}") \
                    from None
        for v in (lhs, rhs):
            if not isinstance(v, tensor) and not Semantic.is_literal(v):
                raise SemanticError(f"cannot apply operator "
                                    f"{Semantic._SYMBOL.get(op, op)} to {_describe(_unwrap(v))}")
        return self.semantic.binary(op, lhs, rhs)

    def visit_BinOp(self, node: ast.BinOp) -> Any:
        lhs, rhs = self.visit(node.left), self.visit(node.right)
        if isinstance(node.op, ast.Pow):
            if isinstance(lhs, tensor) or isinstance(rhs, tensor):
                raise self.error(node, "** on runtime values is not supported (use kl.exp2/"
                                       "kl.log2 or multiply)")
            return self._binary("pow", lhs, rhs)
        op = _BINOPS.get(type(node.op))
        if op is None:
            raise self.error(node, f"unsupported operator {type(node.op).__name__}")
        return self._binary(op, lhs, rhs)

    def visit_UnaryOp(self, node: ast.UnaryOp) -> Any:
        operand = self.visit(node.operand)
        op = _UNARYOPS[type(node.op)]
        if not isinstance(operand, tensor):
            try:
                return constexpr(_PYUNARYOPS[op](_unwrap(operand)))
            except Exception as e:
                raise self.error(node, f"{type(e).__name__} in compile-time expression: {e}") \
                    from None
        return self.semantic.unary(op, operand)

    def visit_Compare(self, node: ast.Compare) -> Any:
        if len(node.ops) != 1:
            raise self.error(node, "chained comparisons are not supported (use (a < b) & "
                                   "(b < c))")
        lhs, rhs = self.visit(node.left), self.visit(node.comparators[0])
        opnode = node.ops[0]
        if isinstance(opnode, (ast.Is, ast.IsNot, ast.In, ast.NotIn)):
            if isinstance(lhs, tensor) or isinstance(rhs, tensor):
                raise self.error(node, f"'{type(opnode).__name__}' needs constexpr operands")
            a, b = _unwrap(lhs), _unwrap(rhs)
            fn = {ast.Is: operator.is_, ast.IsNot: operator.is_not,
                  ast.In: lambda x, y: x in y, ast.NotIn: lambda x, y: x not in y}[type(opnode)]
            return constexpr(fn(a, b))
        op = _CMPOPS[type(opnode)]
        if not isinstance(lhs, tensor) and not isinstance(rhs, tensor):
            return constexpr(_PYCMPOPS[op](_unwrap(lhs), _unwrap(rhs)))
        return self._binary(op, lhs, rhs)

    def visit_BoolOp(self, node: ast.BoolOp) -> Any:
        is_and = isinstance(node.op, ast.And)
        result: Any = None
        for v in node.values:
            val = self.visit(v)
            if isinstance(val, tensor):
                raise self.error(v, f"`{'and' if is_and else 'or'}` needs constexpr operands; "
                                    f"use {'&' if is_and else '|'} for runtime booleans")
            result = val
            if is_and and not _truth(val):
                return val
            if not is_and and _truth(val):
                return val
        return result

    # ------------------------------------------------------------------
    # Calls
    # ------------------------------------------------------------------
    def visit_Call(self, node: ast.Call) -> Any:
        fn = self.visit(node.func)
        args = []
        for a in node.args:
            if isinstance(a, ast.Starred):
                raise self.error(a, "*args in calls is not supported in kernels")
            args.append(self.visit(a))
        kwargs = {}
        for kw in node.keywords:
            if kw.arg is None:
                raise self.error(kw.value, "**kwargs in calls is not supported in kernels")
            kwargs[kw.arg] = self.visit(kw.value)
        fn = _unwrap(fn)
        if isinstance(fn, _BoundMethod):
            return getattr(fn.obj, fn.name)(*args, _semantic=self.semantic, **kwargs)
        if is_builtin(fn):
            saved = self.semantic.call_jit  # builtins that take a @kiln.jit function inline it here
            self.semantic.call_jit = lambda callee, call_args: self._inline(node, callee,
                                                                            call_args, {})
            try:
                return fn(*args, _semantic=self.semantic, **kwargs)
            except TypeError as e:
                if "argument" in str(e):
                    raise self.error(node, f"{fn.__name__}: {e}") from None
                raise
            finally:
                self.semantic.call_jit = saved
        if isinstance(fn, KernelFunction):
            return self._inline(node, fn, args, kwargs)
        if fn is builtins.abs and len(args) == 1 and isinstance(args[0], tensor):
            return self.semantic.abs(args[0])
        if fn in (builtins.min, builtins.max) and len(args) == 2 and builtins.any(
                isinstance(a, tensor) for a in args):
            return self.semantic.minmax("min" if fn is builtins.min else "max", *args)
        if fn is constexpr:
            if builtins.any(isinstance(a, tensor) for a in args):
                raise self.error(node, "constexpr() needs a compile-time value")
            return constexpr(_unwrap(args[0]) if args else None)
        foldable = fn in _FOLDABLE_BUILTINS or getattr(fn, "__module__", None) == "math" or (
            isinstance(fn, type) and fn.__module__.startswith("kiln.language"))
        if foldable:
            if builtins.any(isinstance(a, tensor) for a in list(args) + list(kwargs.values())):
                raise self.error(node, f"{_describe(fn)} can only be applied to constexprs in "
                                       f"a kernel")
            try:
                return _wrap_global(fn(*[_unwrap(a) for a in args],
                                       **{k: _unwrap(v) for k, v in kwargs.items()}))
            except Exception as e:
                raise self.error(node, f"{type(e).__name__} in compile-time call: {e}") \
                    from None
        raise self.error(node.func, f"cannot call {_describe(fn)} in a kernel (only "
                                    f"kiln.language builtins, @kiln.jit functions, tensor "
                                    f"methods and constexpr math are callable)")

    def _inline(self, node: ast.Call, callee: Any, args: List[Any],
                kwargs: Dict[str, Any]) -> Any:
        if self.depth + 1 > _MAX_INLINE_DEPTH:
            raise self.error(node, f"@kiln.jit calls nested deeper than {_MAX_INLINE_DEPTH} "
                                   f"(recursion is not supported)")
        src = callee.source
        try:
            bound = inspect.Signature(src.params).bind(*args, **kwargs)
        except TypeError as e:
            raise self.error(node, f"call to {src.name}: {e}") from None
        bound.apply_defaults()
        scope: Dict[str, Any] = {}
        for name, value in bound.arguments.items():
            if isinstance(value, (tensor, constexpr)):
                pass
            elif isinstance(value, tuple):
                value = constexpr(tuple(_unwrap(v) for v in value)) if not builtins.any(
                    isinstance(v, tensor) for v in value) else value
            else:
                value = constexpr(value)
            if name in src.constexpr_params and isinstance(value, tensor):
                raise self.error(node, f"argument '{name}' of {src.name} is a constexpr but "
                                       f"was given a runtime value")
            scope[name] = value
        gen = CodeGenerator(src, self.semantic, scope,
                            self.call_stack + [self.source.location(node)], self.depth + 1)
        gen.run_body(src.tree.body)
        filename, lineno, col, _ = self.source.location(node)
        self.builder.set_loc(filename, lineno, col)
        return gen.return_value


def _assigned_names(stmts: List[ast.stmt]) -> set:
    """Names a statement list assigns (including in nested blocks)."""
    names = set()
    for stmt in stmts:
        for n in ast.walk(stmt):
            if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store):
                names.add(n.id)
            elif isinstance(n, ast.AugAssign) and isinstance(n.target, ast.Name):
                names.add(n.target.id)
    return names


def _unwrap(v: Any) -> Any:
    return v.value if isinstance(v, constexpr) else v


def _truth(v: Any) -> bool:
    return bool(_unwrap(v))


def _wrap_global(value: Any) -> Any:
    """Python values seen from a kernel: numbers, strings, None, tuples and
    dtypes become constexprs; modules, functions and classes stay as they are."""
    if isinstance(value, (tensor, constexpr)):
        return value
    if value is None or isinstance(value, (bool, int, float, str, tuple)):
        return constexpr(value)
    if isinstance(value, dtype):
        return constexpr(value)
    return value


def _describe(obj: Any) -> str:
    if isinstance(obj, ModuleType):
        return f"module '{obj.__name__}'"
    name = getattr(obj, "__qualname__", None) or getattr(obj, "__name__", None)
    if name and callable(obj):
        return f"'{name}'"
    return f"{type(obj).__name__} {obj!r}"

