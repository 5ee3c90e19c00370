"""Recall code mode's interpreter: a small, side-effect-free subset of Python.

The agent writes one short program that calls ``recall(...)`` as often as it needs, shapes
the results in code (counting, filtering, joining) and ``return``\\ s only what it computed, so
many reads cost one tool call and little context. The program is never given to Python's
``exec``: this module walks its syntax tree itself, and what it can do is what is written
here:

- statements: assignments (also to ``x[k]`` and tuple targets), ``+=`` and friends, ``if``,
  ``for``, ``while``, ``break``, ``continue``, ``pass``, ``return``; a top-level ``await``
  is accepted and ignored;
- values: numbers, strings, ``None``/``True``/``False``, lists, tuples, dicts, sets, f-strings,
  comprehensions, arithmetic, comparisons, ``and``/``or``/``not``, ``x if c else y``, indexing
  and slicing;
- functions: ``recall(...)`` (the tool, with its keyword arguments), ``print`` (to the logs),
  ``len``, ``str``, ``int``, ``float``, ``bool``, ``list``, ``dict``, ``set``, ``tuple``,
  ``range``, ``min``, ``max``, ``sum``, ``sorted``, ``reversed``, ``enumerate``, ``zip``,
  ``abs``, ``round``, ``any``, ``all`` (``key=lambda …`` for ``sorted``/``min``/``max``);
- methods: plain string, list, dict and set methods (``lower``, ``split``, ``join``,
  ``append``, ``get``, ``items``, …), never an attribute read, never a name or attribute
  starting with ``_``.

No import, no function or class definition, no file, network, process or clock access. A
program stops with an error past ``max_steps`` evaluation steps, ``max_calls`` recall calls,
a too-large value, or when ``expired()`` says its time is up.

:func:`run_program` is a generator: it yields a :class:`RecallRequest` for each recall call
and is sent the call's result, so the plan layer runs the calls as recall plans (sync or
async alike).
"""

from __future__ import annotations

import ast
from collections.abc import Callable, Generator, Iterable
from dataclasses import dataclass, field
from typing import Any

__all__ = ["CodeError", "Limits", "ProgramResult", "RecallRequest", "run_program"]

MAX_LEN = 200_000
"""Longest string, list or range a program may build."""
MAX_INT_BITS = 256
"""Largest integer (in bits) a program may build."""


class CodeError(Exception):
    """The program cannot run; the message says why (and where)."""

    def __init__(self, message: str, line: int | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.line = line


@dataclass(frozen=True)
class RecallRequest:
    """One ``recall(...)`` call of a program: its keyword arguments."""

    arguments: dict[str, Any]


@dataclass(frozen=True)
class Limits:
    """What one program may use."""

    max_steps: int = 100_000
    max_calls: int = 20
    expired: Callable[[], bool] = field(default=lambda: False)


@dataclass
class ProgramResult:
    """What a program returned, what it printed and how many recall calls it made."""

    value: Any = None
    logs: list[str] = field(default_factory=list)
    calls: int = 0


class _Return(Exception):
    def __init__(self, value: Any) -> None:
        self.value = value


class _Break(Exception):
    pass


class _Continue(Exception):
    pass


Eval = Generator[RecallRequest, Any, Any]

_METHODS: dict[type, frozenset[str]] = {
    str: frozenset(
        "lower upper strip lstrip rstrip split rsplit splitlines join startswith endswith "
        "replace find rfind count title capitalize isdigit isalpha isalnum isspace "
        "removeprefix removesuffix partition rpartition zfill".split()
    ),
    list: frozenset("append extend index count copy pop insert reverse remove clear".split()),
    dict: frozenset("get keys values items copy update pop setdefault clear".split()),
    set: frozenset("add update union intersection difference discard copy remove".split()),
    tuple: frozenset("index count".split()),
}
_SAFE_TYPES = (str, int, float, bool, type(None), list, dict, set, tuple, range)


def _check_size(value: Any) -> Any:
    if isinstance(value, (str, list, tuple, set, dict, range)) and len(value) > MAX_LEN:
        raise CodeError(f"a value grew past {MAX_LEN} items or characters")
    if isinstance(value, int) and not isinstance(value, bool) and value.bit_length() > MAX_INT_BITS:
        raise CodeError("a number grew too large")
    return value


def _text_size(value: Any, limit: int = MAX_LEN) -> int:
    """About how many characters ``value`` prints as (stops counting past ``limit``)."""
    total = 0
    stack = [value]
    while stack and total <= limit:
        item = stack.pop()
        if isinstance(item, str):
            total += len(item) + 2
        elif isinstance(item, dict):
            total += 2 + 4 * len(item)
            stack.extend(item.keys())
            stack.extend(item.values())
        elif isinstance(item, (list, tuple, set)):
            total += 2 + 2 * len(item)
            stack.extend(item)
        else:
            total += 24
    return total


def _printable(value: Any) -> Any:
    """``value`` when its text stays within the size limit (checked before it is built)."""
    if _text_size(value) > MAX_LEN:
        raise CodeError(f"a value grew past {MAX_LEN} items or characters")
    return value


def _guard_method(target: Any, method: str, args: list[Any]) -> None:
    """Refuse a string method call whose result would be too large to build."""
    if isinstance(target, str) and method == "join" and args:
        parts = list(args[0]) if isinstance(args[0], (list, tuple, set, dict)) else []
        size = sum(len(p) if isinstance(p, str) else 0 for p in parts)
        if size + len(target) * len(parts) > MAX_LEN:
            raise CodeError(f"a value grew past {MAX_LEN} items or characters")
    if isinstance(target, str) and method == "replace" and len(args) >= 2:
        old, new = args[0], args[1]
        if isinstance(old, str) and isinstance(new, str):
            grows = (target.count(old) if old else len(target) + 1) * max(0, len(new) - len(old))
            if len(target) + grows > MAX_LEN:
                raise CodeError(f"a value grew past {MAX_LEN} items or characters")
    if isinstance(target, str) and method == "zfill" and args and isinstance(args[0], int):
        if args[0] > MAX_LEN:
            raise CodeError(f"a value grew past {MAX_LEN} items or characters")


def _plain(value: Any) -> Any:
    """Dict views and iterators a builtin returned, as lists (programs see plain values)."""
    if isinstance(value, (type({}.keys()), type({}.values()), type({}.items()))):
        return list(value)
    if isinstance(value, (zip, enumerate, map, filter, reversed, type(iter([])))):
        return _check_size(list(value))
    return _check_size(value)


class _Program:
    def __init__(self, limits: Limits) -> None:
        self.limits = limits
        self.vars: dict[str, Any] = {}
        self.steps = 0
        self.result = ProgramResult()
        self.line: int | None = None

    # -- bookkeeping ---------------------------------------------------------------------

    def tick(self, node: ast.AST) -> None:
        self.steps += 1
        self.line = getattr(node, "lineno", self.line)
        if self.steps > self.limits.max_steps:
            raise CodeError(f"the program ran more than {self.limits.max_steps} steps")
        if self.steps % 1000 == 0 and self.limits.expired():
            raise CodeError("the program ran out of time")

    # -- statements ----------------------------------------------------------------------

    def block(self, body: Iterable[ast.stmt]) -> Eval:
        for statement in body:
            yield from self.statement(statement)

    def statement(self, node: ast.stmt) -> Eval:
        self.tick(node)
        if isinstance(node, ast.Expr):
            yield from self.expr(node.value)
        elif isinstance(node, ast.Assign):
            value = yield from self.expr(node.value)
            for target in node.targets:
                yield from self.assign(target, value)
        elif isinstance(node, ast.AnnAssign) and node.value is not None:
            yield from self.assign(node.target, (yield from self.expr(node.value)))
        elif isinstance(node, ast.AugAssign):
            current = yield from self.expr(_load(node.target))
            change = yield from self.expr(node.value)
            yield from self.assign(node.target, self.binop(node.op, current, change))
        elif isinstance(node, ast.If):
            test = yield from self.expr(node.test)
            yield from self.block(node.body if test else node.orelse)
        elif isinstance(node, ast.For):
            yield from self.for_loop(node)
        elif isinstance(node, ast.While):
            while (yield from self.expr(node.test)):
                self.tick(node)
                try:
                    yield from self.block(node.body)
                except _Break:
                    break
                except _Continue:
                    continue
        elif isinstance(node, ast.Return):
            raise _Return(None if node.value is None else (yield from self.expr(node.value)))
        elif isinstance(node, ast.Break):
            raise _Break
        elif isinstance(node, ast.Continue):
            raise _Continue
        elif isinstance(node, ast.Pass):
            return
        else:
            raise CodeError(f"{type(node).__name__} statements are not available", node.lineno)

    def for_loop(self, node: ast.For) -> Eval:
        items = yield from self.expr(node.iter)
        if not isinstance(items, (list, tuple, dict, str, set, range)):
            raise CodeError("a for loop goes over a list, tuple, dict, set, string or range")
        for item in list(items):
            self.tick(node)
            yield from self.assign(node.target, item)
            try:
                yield from self.block(node.body)
            except _Break:
                return
            except _Continue:
                continue
        yield from self.block(node.orelse)

    def assign(self, target: ast.expr, value: Any) -> Eval:
        if isinstance(target, ast.Name):
            self.vars[_name(target.id)] = value
        elif isinstance(target, (ast.Tuple, ast.List)):
            values = list(value) if isinstance(value, (list, tuple)) else None
            if values is None or len(values) != len(target.elts):
                raise CodeError("cannot unpack this value into that many names")
            for element, part in zip(target.elts, values, strict=True):
                yield from self.assign(element, part)
        elif isinstance(target, ast.Subscript):
            container = yield from self.expr(target.value)
            key = yield from self.expr(target.slice)
            if not isinstance(container, (list, dict)):
                raise CodeError("only list items and dict keys can be assigned")
            container[key] = value
            _check_size(container)
        else:
            raise CodeError("only names, x[key] and tuples of names can be assigned")

    # -- expressions ---------------------------------------------------------------------

    def expr(self, node: ast.expr) -> Eval:
        self.tick(node)
        if isinstance(node, ast.Constant):
            return node.value
        if isinstance(node, ast.Name):
            return self.name(node.id)
        if isinstance(node, ast.Await):
            return (yield from self.expr(node.value))
        if isinstance(node, (ast.List, ast.Tuple, ast.Set)):
            items = yield from self.exprs(node.elts)
            kind = {ast.List: list, ast.Tuple: tuple, ast.Set: set}[type(node)]
            return _check_size(kind(items))
        if isinstance(node, ast.Dict):
            out: dict[Any, Any] = {}
            for key, value in zip(node.keys, node.values, strict=True):
                if key is None:
                    raise CodeError("**spread in a dict is not available")
                out[(yield from self.expr(key))] = yield from self.expr(value)
            return _check_size(out)
        if isinstance(node, ast.JoinedStr):
            parts = []
            for piece in node.values:
                if isinstance(piece, ast.FormattedValue):
                    shown = _printable((yield from self.expr(piece.value)))
                    parts.append(_format(shown, piece))
                else:
                    parts.append(str((yield from self.expr(piece))))
            return _check_size("".join(parts))
        if isinstance(node, ast.BinOp):
            left = yield from self.expr(node.left)
            right = yield from self.expr(node.right)
            return self.binop(node.op, left, right)
        if isinstance(node, ast.UnaryOp):
            operand = yield from self.expr(node.operand)
            return _unary(node.op, operand)
        if isinstance(node, ast.BoolOp):
            last: Any = None
            for part in node.values:
                last = yield from self.expr(part)
                if isinstance(node.op, ast.And) and not last:
                    return last
                if isinstance(node.op, ast.Or) and last:
                    return last
            return last
        if isinstance(node, ast.Compare):
            return (yield from self.compare(node))
        if isinstance(node, ast.IfExp):
            test = yield from self.expr(node.test)
            return (yield from self.expr(node.body if test else node.orelse))
        if isinstance(node, ast.Subscript):
            container = yield from self.expr(node.value)
            return (yield from self.subscript(container, node.slice))
        if isinstance(node, ast.Call):
            return (yield from self.call(node))
        if isinstance(node, (ast.ListComp, ast.SetComp, ast.GeneratorExp, ast.DictComp)):
            return (yield from self.comprehension(node))
        if isinstance(node, ast.Attribute):
            raise CodeError("attributes can only be called as methods, e.g. text.lower()")
        raise CodeError(f"{type(node).__name__} expressions are not available")

    def exprs(self, nodes: Iterable[ast.expr]) -> Eval:
        values: list[Any] = []
        for node in nodes:
            values.append((yield from self.expr(node)))
        return values

    def keywords(self, keywords: Iterable[ast.keyword]) -> Eval:
        values: dict[str, Any] = {}
        for keyword in keywords:
            if keyword.arg:
                values[keyword.arg] = yield from self.expr(keyword.value)
        return values

    def name(self, name: str) -> Any:
        name = _name(name)
        if name in self.vars:
            return self.vars[name]
        if name in _BUILTINS or name in ("recall", "print"):
            return _Function(name)
        raise CodeError(f"name {name!r} is not defined")

    def binop(self, op: ast.operator, left: Any, right: Any) -> Any:
        if isinstance(op, ast.Pow) and (not isinstance(right, int) or abs(right) > 64):
            raise CodeError("** takes a whole exponent of at most 64")
        if isinstance(op, ast.Mult) and isinstance(left, (str, list, tuple)) != isinstance(
            right, (str, list, tuple)
        ):
            size = len(left) * right if isinstance(left, (str, list, tuple)) else len(right) * left
            if size > MAX_LEN:
                raise CodeError(f"a value grew past {MAX_LEN} items or characters")
        operations: dict[type, Callable[[Any, Any], Any]] = {
            ast.Add: lambda a, b: a + b,
            ast.Sub: lambda a, b: a - b,
            ast.Mult: lambda a, b: a * b,
            ast.Div: lambda a, b: a / b,
            ast.FloorDiv: lambda a, b: a // b,
            ast.Mod: lambda a, b: a % b,
            ast.Pow: lambda a, b: a**b,
        }
        operation = operations.get(type(op))
        if operation is None or (isinstance(op, ast.Mod) and isinstance(left, str)):
            raise CodeError(f"the {type(op).__name__} operator is not available")
        try:
            return _check_size(operation(left, right))
        except (TypeError, ZeroDivisionError, OverflowError) as exc:
            raise CodeError(str(exc)) from None

    def compare(self, node: ast.Compare) -> Eval:
        left = yield from self.expr(node.left)
        for op, right_node in zip(node.ops, node.comparators, strict=True):
            right = yield from self.expr(right_node)
            if not _compared(op, left, right):
                return False
            left = right
        return True

    def subscript(self, container: Any, index: ast.expr) -> Eval:
        if not isinstance(container, (list, tuple, dict, str, range)):
            raise CodeError("only lists, tuples, dicts, strings and ranges can be indexed")
        if isinstance(index, ast.Slice):
            bounds: list[Any] = []
            for part in (index.lower, index.upper, index.step):
                bounds.append(None if part is None else (yield from self.expr(part)))
            if isinstance(container, dict):
                raise CodeError("a dict cannot be sliced")
            return container[slice(*bounds)]
        key = yield from self.expr(index)
        try:
            return container[key]
        except (KeyError, IndexError, TypeError) as exc:
            raise CodeError(f"no item {key!r} ({type(exc).__name__})") from None

    def comprehension(
        self, node: ast.ListComp | ast.SetComp | ast.GeneratorExp | ast.DictComp
    ) -> Eval:
        saved = dict(self.vars)
        out: list[Any] = []
        try:
            yield from self.generators(node, node.generators, 0, out)
        finally:
            self.vars = {**saved, **{k: v for k, v in self.vars.items() if k in saved}}
        if isinstance(node, ast.SetComp):
            return _check_size(set(out))
        if isinstance(node, ast.DictComp):
            return _check_size(dict(out))
        return _check_size(out)

    def generators(
        self,
        node: ast.ListComp | ast.SetComp | ast.GeneratorExp | ast.DictComp,
        generators: list[ast.comprehension],
        depth: int,
        out: list[Any],
    ) -> Eval:
        if depth == len(generators):
            if isinstance(node, ast.DictComp):
                out.append(((yield from self.expr(node.key)), (yield from self.expr(node.value))))
            else:
                out.append((yield from self.expr(node.elt)))
            _check_size(out)
            return
        spec = generators[depth]
        items = yield from self.expr(spec.iter)
        if not isinstance(items, (list, tuple, dict, str, set, range)):
            raise CodeError("a comprehension goes over a list, tuple, dict, set, string or range")
        for item in list(items):
            self.tick(spec.iter)
            yield from self.assign(spec.target, item)
            if all((yield from self.exprs(spec.ifs))):
                yield from self.generators(node, generators, depth + 1, out)

    def call(self, node: ast.Call) -> Eval:
        if any(isinstance(a, ast.Starred) for a in node.args) or any(
            k.arg is None for k in node.keywords
        ):
            raise CodeError("*args and **kwargs are not available in calls")
        if isinstance(node.func, ast.Attribute):
            target = yield from self.expr(node.func.value)
            method = _name(node.func.attr)
            allowed = next((m for t, m in _METHODS.items() if type(target) is t), frozenset())
            if method not in allowed:
                raise CodeError(f"{type(target).__name__}.{method}() is not available")
            args = yield from self.exprs(node.args)
            kwargs = yield from self.keywords(node.keywords)
            _guard_method(target, method, args)
            try:
                value = _plain(getattr(target, method)(*args, **kwargs))
            except (TypeError, ValueError, KeyError, IndexError) as exc:
                raise CodeError(f"{method}(): {exc}") from None
            _check_size(target)
            return value
        function = yield from self.expr(node.func)
        if not isinstance(function, _Function):
            raise CodeError("only recall(), print() and the listed builtins can be called")
        key = next((k for k in node.keywords if k.arg == "key"), None)
        keywords = [k for k in node.keywords if k is not key]
        args = yield from self.exprs(node.args)
        kwargs = yield from self.keywords(keywords)
        if function.name == "recall":
            return (yield from self.recall(args, kwargs))
        if function.name == "print":
            self.result.logs.append(" ".join(str(_printable(a)) for a in args)[:2000])
            return None
        if key is not None:
            return (yield from self.keyed(function.name, key.value, args, kwargs))
        if function.name == "str":
            args = [_printable(a) for a in args]
        if function.name == "sum" and args and isinstance(args[0], (list, tuple, set, range)):
            if not all(isinstance(v, (int, float)) for v in args[0]):
                raise CodeError("sum() adds numbers only")
        try:
            return _plain(_BUILTINS[function.name](*args, **kwargs))
        except (TypeError, ValueError, OverflowError) as exc:
            raise CodeError(f"{function.name}(): {exc}") from None

    def keyed(self, name: str, key: ast.expr, args: list[Any], kwargs: dict[str, Any]) -> Eval:
        if name not in ("sorted", "min", "max") or not isinstance(key, ast.Lambda):
            raise CodeError("key= takes a lambda, in sorted(), min() and max() only")
        params = key.args.args
        if len(params) != 1 or key.args.vararg or key.args.kwarg:
            raise CodeError("a key lambda takes one argument")
        items = list(args[0]) if len(args) == 1 else list(args)
        saved = dict(self.vars)
        keys = []
        for item in items:
            self.tick(key)
            self.vars[_name(params[0].arg)] = item
            keys.append((yield from self.expr(key.body)))
        self.vars = saved
        try:
            if name == "sorted":
                reverse = bool(kwargs.get("reverse"))
                order = sorted(range(len(items)), key=keys.__getitem__, reverse=reverse)
                return [items[i] for i in order]
            if not items:
                raise CodeError(f"{name}() of an empty sequence")
            pick = min if name == "min" else max
            return items[pick(range(len(items)), key=keys.__getitem__)]
        except TypeError as exc:
            raise CodeError(f"{name}(): {exc}") from None

    def recall(self, args: list[Any], kwargs: dict[str, Any]) -> Eval:
        if args and not (len(args) == 1 and isinstance(args[0], dict)):
            raise CodeError("call recall with keyword arguments, e.g. recall(mode='threads')")
        arguments = {**(args[0] if args else {}), **kwargs}
        if self.result.calls >= self.limits.max_calls:
            raise CodeError(f"the program made more than {self.limits.max_calls} recall calls")
        if self.limits.expired():
            raise CodeError("the program ran out of time")
        self.result.calls += 1
        _printable(arguments)
        return (yield RecallRequest({str(k): v for k, v in arguments.items()}))


@dataclass(frozen=True)
class _Function:
    name: str


def _name(name: str) -> str:
    if name.startswith("_"):
        raise CodeError(f"names starting with '_' are not available ({name!r})")
    return name


def _load(target: ast.expr) -> ast.expr:
    if isinstance(target, (ast.Name, ast.Subscript)):
        return target
    raise CodeError("augmented assignment works on names and x[key] only")


def _format(value: Any, node: ast.FormattedValue) -> str:
    if isinstance(node.format_spec, ast.JoinedStr):
        pieces = node.format_spec.values
        if not all(isinstance(v, ast.Constant) for v in pieces):
            raise CodeError("a format specification cannot hold an expression")
        spec = "".join(str(v.value) for v in pieces if isinstance(v, ast.Constant))
        if any(c in spec for c in "{}") or len(spec) > 20:
            raise CodeError("this format specification is not available")
        try:
            return format(value, spec)
        except (TypeError, ValueError) as exc:
            raise CodeError(str(exc)) from None
    return repr(value) if node.conversion == ord("r") else str(value)


def _unary(op: ast.unaryop, operand: Any) -> Any:
    if isinstance(op, ast.Not):
        return not operand
    if isinstance(op, (ast.USub, ast.UAdd)) and isinstance(operand, (int, float)):
        return -operand if isinstance(op, ast.USub) else operand
    raise CodeError(f"the {type(op).__name__} operator is not available here")


def _compared(op: ast.cmpop, left: Any, right: Any) -> bool:
    try:
        if isinstance(op, ast.Eq):
            return bool(left == right)
        if isinstance(op, ast.NotEq):
            return bool(left != right)
        if isinstance(op, ast.Lt):
            return bool(left < right)
        if isinstance(op, ast.LtE):
            return bool(left <= right)
        if isinstance(op, ast.Gt):
            return bool(left > right)
        if isinstance(op, ast.GtE):
            return bool(left >= right)
        if isinstance(op, ast.In):
            return bool(left in right)
        if isinstance(op, ast.NotIn):
            return bool(left not in right)
        if isinstance(op, ast.Is):
            return left is right
        if isinstance(op, ast.IsNot):
            return left is not right
    except TypeError as exc:
        raise CodeError(str(exc)) from None
    raise CodeError(f"the {type(op).__name__} comparison is not available")


def _range(*args: int) -> range:
    value = range(*args)
    return _check_size(value)  # type: ignore[no-any-return]


_BUILTINS: dict[str, Callable[..., Any]] = {
    "len": len,
    "str": str,
    "int": int,
    "float": float,
    "bool": bool,
    "list": list,
    "dict": dict,
    "set": set,
    "tuple": tuple,
    "range": _range,
    "min": min,
    "max": max,
    "sum": sum,
    "sorted": sorted,
    "reversed": lambda x: list(reversed(x)),
    "enumerate": enumerate,
    "zip": zip,
    "abs": abs,
    "round": round,
    "any": any,
    "all": all,
}


def _safe(value: Any) -> bool:
    if isinstance(value, (list, tuple, set)):
        return all(_safe(v) for v in value)
    if isinstance(value, dict):
        return all(_safe(k) and _safe(v) for k, v in value.items())
    return isinstance(value, _SAFE_TYPES)


def parse_program(code: str) -> ast.Module:
    """The program's syntax tree (top-level ``return`` and ``await`` allowed).

    Raises:
        CodeError: the code is not Python, or uses a statement that is never available.
    """
    try:
        tree = compile(
            code, "<program>", "exec", flags=ast.PyCF_ONLY_AST | ast.PyCF_ALLOW_TOP_LEVEL_AWAIT
        )
    except SyntaxError as exc:
        raise CodeError(f"syntax error: {exc.msg}", exc.lineno) from None
    assert isinstance(tree, ast.Module)
    for node in ast.walk(tree):
        if isinstance(
            node,
            (
                ast.Import,
                ast.ImportFrom,
                ast.FunctionDef,
                ast.AsyncFunctionDef,
                ast.ClassDef,
                ast.Global,
                ast.Nonlocal,
                ast.With,
                ast.AsyncWith,
                ast.Try,
                ast.Raise,
                ast.Delete,
                ast.Yield,
                ast.YieldFrom,
            ),
        ):
            raise CodeError(
                f"{type(node).__name__} is not available in a recall program",
                getattr(node, "lineno", None),
            )
    return tree


def run_program(code: str, limits: Limits) -> Generator[RecallRequest, Any, ProgramResult]:
    """Run ``code``; yields each recall call and is sent its result.

    Returns:
        What the program returned (``None`` without a ``return``), its printed logs and its
        number of recall calls.

    Raises:
        CodeError: the program failed; ``line`` is where, when known.
    """
    tree = parse_program(code)
    program = _Program(limits)
    try:
        yield from program.block(tree.body)
    except _Return as done:
        program.result.value = done.value
    except (_Break, _Continue):
        raise CodeError("break/continue outside a loop", program.line) from None
    except CodeError as exc:
        exc.line = exc.line or program.line
        raise
    except RecursionError:
        raise CodeError("the program is nested too deeply", program.line) from None
    if not _safe(program.result.value):
        raise CodeError("the program returned a value that is not plain data", program.line)
    _printable(program.result.value)
    return program.result
