"""Sweep constraints: Python-like expressions over the axis names, read with :mod:`ast` and
evaluated by a small walker of a few node kinds (no ``eval``: a scenario file is input, not
code).

Why bounded: a constraint runs once per design point, and Python computes whatever it is
asked - ``9 ** 9 ** 9`` (minutes), ``"a" * 10**10`` (memory), or a list repeated inside a
list (``[[[1]*10000]*10000]*10000 == ...``: 10^12 element comparisons in C, where no
signal handler runs, so not even SIGTERM stops it).  Every number, text and list a
constraint builds is therefore bounded in size (:data:`MAX_DIGITS`, :data:`MAX_TEXT`,
counting the items of nested lists too) before it is built.
"""

from __future__ import annotations

import ast
import math
import operator
from collections.abc import Mapping, Sequence
from typing import Any

from clustersim.errors import InputError

__all__ = ["compile_constraint", "eval_constraint", "TooLarge", "MAX_DIGITS", "MAX_TEXT"]

#: the largest number (in decimal digits) and the most items a constraint may build: a text
#: counts its characters, a list its items and those of the lists and texts inside it
MAX_DIGITS = 400
MAX_TEXT = 10_000


class TooLarge(Exception):
    """A constraint's arithmetic would build a huge number, text or list."""


def _items(value: Any, limit: int = MAX_TEXT) -> int:
    """The items of a text or list, nested ones counted too (a list of 10,000 lists of
    10,000 is 10^8, not 10^4); stops counting past ``limit``.  Lists repeated with ``*``
    share their inner list, so this is what a comparison walks, not what memory holds."""
    total, stack = 0, [value]
    while stack and total <= limit:
        v = stack.pop()
        if isinstance(v, str):
            total += len(v)
        elif isinstance(v, (list, tuple)):
            total += len(v)
            stack.extend(x for x in v if isinstance(x, (str, list, tuple, dict)))
        elif isinstance(v, dict):
            total += len(v)
            stack.extend(x for kv in v.items() for x in kv
                         if isinstance(x, (str, list, tuple, dict)))
    return total


def _bounded(value: Any, what: str) -> Any:
    """``value`` if its items are within :data:`MAX_TEXT`, else :class:`TooLarge`."""
    if isinstance(value, (str, list)) and _items(value) > MAX_TEXT:
        raise TooLarge(f"{what} of more than {MAX_TEXT:,} items (nested lists counted)")
    return value


def _pow(a: Any, b: Any) -> Any:
    """``a ** b`` unless the result would have more than :data:`MAX_DIGITS` digits before
    the decimal point: ``b * log10|a|`` of them, so ``2 ** -10000`` (0.0) and ``0.5 ** 9``
    pass while ``0.5 ** -10000`` does not."""
    if isinstance(a, (int, float)) and isinstance(b, (int, float)) and a != 0:
        digits = b * math.log10(abs(a))
        if digits >= MAX_DIGITS:  # 10**400 has 401 digits
            raise TooLarge(f"computes a power of {math.floor(digits) + 1:,} digits (at "
                           f"most {MAX_DIGITS})")
    return operator.pow(a, b)


def _whole(v: Any) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def _mul(a: Any, b: Any) -> Any:
    for seq, n in ((a, b), (b, a)):
        if isinstance(seq, (str, list)) and _whole(n) and n * _items(seq) > MAX_TEXT:
            raise TooLarge(f"repeats a text or list to {n * _items(seq):,} items (at most "
                           f"{MAX_TEXT:,}, nested lists counted)")
    if _whole(a) and _whole(b):  # products of products: digits add up
        digits = (a.bit_length() + b.bit_length()) * math.log10(2)
        if digits > MAX_DIGITS:
            raise TooLarge(f"computes a product with about {digits:,.0f} digits (at most "
                           f"{MAX_DIGITS})")
    return operator.mul(a, b)


def _add(a: Any, b: Any) -> Any:
    if isinstance(a, (str, list)) and isinstance(b, (str, list)) \
            and _items(a) + _items(b) > MAX_TEXT:
        raise TooLarge(f"joins a text or list of more than {MAX_TEXT:,} items (nested lists "
                       f"counted)")
    return operator.add(a, b)


def _mod(a: Any, b: Any) -> Any:
    if isinstance(a, str):  # "%999999999s" % 1: printf formatting, not arithmetic
        raise TypeError("% on a text is string formatting, not allowed")
    return operator.mod(a, b)


_BIN = {ast.Add: _add, ast.Sub: operator.sub, ast.Mult: _mul,
        ast.Div: operator.truediv, ast.FloorDiv: operator.floordiv, ast.Mod: _mod,
        ast.Pow: _pow}
#: the operators a constraint may not use, by their symbol (the message had said "BinOp")
_OPS = {ast.LShift: "<<", ast.RShift: ">>", ast.BitAnd: "&", ast.BitOr: "|", ast.BitXor: "^",
        ast.MatMult: "@", ast.Invert: "~", ast.Is: "is", ast.IsNot: "is not",
        ast.Call: "a function call", ast.IfExp: "if-else", ast.Subscript: "indexing",
        ast.Lambda: "lambda", ast.Dict: "a dict", ast.Set: "a set", ast.NamedExpr: ":=",
        ast.ListComp: "a comprehension", ast.GeneratorExp: "a comprehension"}
_CMP = {ast.Lt: operator.lt, ast.LtE: operator.le, ast.Gt: operator.gt, ast.GtE: operator.ge,
        ast.Eq: operator.eq, ast.NotEq: operator.ne, ast.In: lambda a, b: a in b,
        ast.NotIn: lambda a, b: a not in b}


def _dotted(node: ast.AST) -> str | None:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        base = _dotted(node.value)
        return None if base is None else f"{base}.{node.attr}"
    return None


def compile_constraint(text: str, names: Sequence[str], path: tuple,
                       flags: Sequence[str] = ()) -> ast.AST:
    """The constraint ``text`` as a checked syntax tree: axis names, constants and the
    operators of :func:`eval_constraint` only, or an input error at ``path``; ``flags``:
    the axes of true/false values, which are conditions on their own."""
    try:
        tree = ast.parse(str(text), mode="eval").body
    except SyntaxError as exc:
        raise InputError(f"cannot read the constraint {text!r}: {exc.msg}", path=path) from None

    def check(node: ast.AST) -> None:
        name = _dotted(node)
        if name is not None:
            if name not in names:
                raise InputError(f"the constraint {text!r} names {name!r}, which is not an "
                                 f"axis (axes: {', '.join(names) or 'none'})", path=path)
            return
        if isinstance(node, ast.BinOp) and type(node.op) in _BIN:
            check(node.left)
            check(node.right)
        elif isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.Not, ast.USub,
                                                                    ast.UAdd)):
            check(node.operand)
        elif isinstance(node, ast.BoolOp):
            for v in node.values:
                check(v)
        elif isinstance(node, ast.Compare) and all(type(o) in _CMP for o in node.ops):
            for v in (node.left, *node.comparators):
                check(v)
        elif isinstance(node, (ast.List, ast.Tuple)):
            for v in node.elts:
                check(v)
        elif not (isinstance(node, ast.Constant)
                  and isinstance(node.value, (int, float, str, bool))):
            ops = getattr(node, "ops", None) or [getattr(node, "op", None)]
            bad = [o for o in ops if o is not None and type(o) not in _CMP]
            what = _OPS.get(type(bad[0]) if bad else type(node), type(node).__name__)
            raise InputError(f"the constraint {text!r} uses {what}; allowed: "
                             f"axis names, numbers, strings, + - * / // % **, comparisons, "
                             f"and/or/not, in [...]", path=path)

    check(tree)
    if not _is_condition(tree, flags):
        # "workload.batch_per_worker" alone was taken as a truth value (non-zero: kept),
        # which no one means by a constraint (QA 16c)
        raise InputError(f"the constraint {text!r} is not a condition; allowed: a comparison "
                         f"such as \"workers * workload.batch_per_worker <= 4096\", or "
                         f"comparisons joined by and/or/not", path=path)
    return tree


def _is_condition(node: ast.AST, flags: Sequence[str] = ()) -> bool:
    """A comparison, a truth constant, a true/false axis (``flags``), or conditions joined
    by and/or/not."""
    if isinstance(node, ast.Compare):
        return True
    if isinstance(node, ast.Constant):
        return isinstance(node.value, bool)
    if isinstance(node, ast.BoolOp):
        return all(_is_condition(v, flags) for v in node.values)
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not):
        return _is_condition(node.operand, flags)
    return _dotted(node) in flags


def eval_constraint(node: ast.AST, point: Mapping[str, Any]) -> Any:
    """The value of a compiled constraint at one design point (``{axis: value}``); raises
    :class:`TooLarge` where it would build a huge value."""
    name = _dotted(node)
    if name is not None:
        return point[name]
    if isinstance(node, ast.Constant):
        return node.value
    if isinstance(node, ast.BinOp):
        return _BIN[type(node.op)](eval_constraint(node.left, point),
                                   eval_constraint(node.right, point))
    if isinstance(node, ast.UnaryOp):
        v = eval_constraint(node.operand, point)
        return not v if isinstance(node.op, ast.Not) else (-v if isinstance(node.op, ast.USub)
                                                           else +v)
    if isinstance(node, ast.BoolOp):
        vals = (eval_constraint(v, point) for v in node.values)
        return all(vals) if isinstance(node.op, ast.And) else any(vals)
    if isinstance(node, ast.Compare):
        left = eval_constraint(node.left, point)
        for op, right_node in zip(node.ops, node.comparators):
            right = eval_constraint(right_node, point)
            if not _CMP[type(op)](left, right):
                return False
            left = right
        return True
    if isinstance(node, (ast.List, ast.Tuple)):
        return _bounded([eval_constraint(v, point) for v in node.elts], "builds a list")
    raise AssertionError(type(node).__name__)  # _compile admits nothing else
