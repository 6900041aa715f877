"""Tables that stay readable in the terminal they are printed to.

rich squeezes a table that is wider than the console by cutting cells to "wo…" and "1.…",
which loses the numbers people came for.  Here every column declares a *priority* and the
table is fitted before rich sees it, the way ``kubectl get`` / ``gh`` / ``docker ps`` do:

* ``fit="drop"``: the least important columns are left out (priority 0 is the row's key and
  always stays; larger numbers go first, the rightmost first among equals) until the rest fit
  whole; one line under the table names what was left out and that ``--wide`` shows it
  (under several tables, :class:`Omitted`: what every table left out, then what only some
  did - each table fits on its own, so a column dropped from one may be shown in the next);
* ``fit="stack"``: for wide comparison grids (one column per algorithm), the columns are
  split over several tables printed one under the other, each repeating the key columns.

Only headers wrap (at spaces; a column is never narrower than its longest header word or its
widest cell), so no number is ever cut.  At the console's width the compact style (no vertical
rules) is used; with ``wide=True`` the table is printed whole in rich's boxed style, as before
this module existed.  A caller adding a column (steps to target, goodput, ...) gives it a
priority and nothing else changes.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from rich import box
from rich.console import Console
from rich.table import Table
from rich.text import Text

__all__ = ["Col", "Omitted", "print_table", "print_hidden"]

# compact style: columns separated by " " + padding 1 on each side, no outer edge or padding
_GAP = 3


@dataclass(frozen=True)
class Col:
    """One column: its header, alignment and how much it matters at a narrow width."""

    header: str
    justify: str = "right"
    #: 0 = the row's key, always shown; 1 = the headline figures; larger = details, dropped
    #: first when the terminal is narrow
    priority: int = 1


class Omitted:
    """The columns that the tables under one footer left out, table by table.

    Each table is fitted to the width on its own (its cells decide its columns' widths), so
    at one width a column can be dropped from one table and shown in the next: a footer
    built from the union of what was dropped would name columns the reader sees right above
    it.  This keeps every table's headers and hidden columns so that :func:`print_hidden`
    can say which columns no table shows and which only some tables left out.
    """

    def __init__(self) -> None:
        self._tables: list[tuple[tuple[str, ...], tuple[str, ...]]] = []

    def add(self, headers: Sequence[str], hidden: Sequence[str]) -> None:
        """Record one printed table: all its headers and those it left out."""
        self._tables.append((tuple(headers), tuple(hidden)))

    def _hidden(self) -> list[str]:
        return list(dict.fromkeys(h for _, hidden in self._tables for h in hidden))

    def everywhere(self) -> list[str]:
        """Left out of every table that has the column, in the order first left out."""
        return [h for h in self._hidden()
                if all(h in hidden for headers, hidden in self._tables if h in headers)]

    def somewhere(self) -> list[str]:
        """Left out of some tables but shown in at least one other."""
        every = set(self.everywhere())
        return [h for h in self._hidden() if h not in every]


def _cell_len(cell: str) -> int:
    return Text.from_markup(cell).cell_len if "[" in cell else Text(cell).cell_len


def _widths(cols: Sequence[Col], rows: Sequence[Sequence[str]]) -> list[tuple[int, int]]:
    """(narrowest, preferred) width of every column: cells whole, header wrapped or not."""
    out = []
    for k, c in enumerate(cols):
        cells = max((_cell_len(r[k]) for r in rows), default=0)
        word = max((Text(w).cell_len for w in c.header.split()), default=0)
        out.append((max(cells, word), max(cells, Text(c.header).cell_len)))
    return out


def _total(widths: Sequence[int]) -> int:
    return sum(widths) + _GAP * (len(widths) - 1) if widths else 0


def _drop(cols: Sequence[Col], mins: Sequence[int], width: int) -> list[int]:
    """Indices of the columns kept: least important (then rightmost) dropped until they fit."""
    keep = list(range(len(cols)))
    order = sorted((k for k in keep if cols[k].priority > 0),
                   key=lambda k: (-cols[k].priority, -k))
    for k in order:
        if _total([mins[j] for j in keep]) <= width:
            break
        keep.remove(k)
    return keep


def _stack(cols: Sequence[Col], mins: Sequence[int], width: int) -> list[list[int]]:
    """Column groups, each with the key columns, each fitting the width where it can."""
    keys = [k for k, c in enumerate(cols) if c.priority == 0]
    groups: list[list[int]] = []
    current: list[int] = []
    for k in (k for k, c in enumerate(cols) if c.priority > 0):
        trial = sorted(keys + current + [k])
        if current and _total([mins[j] for j in trial]) > width:
            groups.append(sorted(keys + current))
            current = []
        current.append(k)
    groups.append(sorted(keys + current))
    return groups


def _render(console: Console, title: str, cols: Sequence[Col], rows: Sequence[Sequence[str]],
            keep: Sequence[int], sizes: Sequence[tuple[int, int]], width: int) -> None:
    widths = [sizes[k][0] for k in keep]
    spare = width - _total(widths)
    for i, k in enumerate(keep):  # spare room un-wraps headers, left to right
        extra = min(max(spare, 0), sizes[k][1] - widths[i])
        widths[i] += extra
        spare -= extra
    console.print(Text(title, style="table.title"))
    t = Table(box=box.SIMPLE_HEAD, show_edge=False, pad_edge=False)
    for i, k in enumerate(keep):
        t.add_column(cols[k].header, justify=cols[k].justify, width=widths[i], overflow="fold")
    for r in rows:
        t.add_row(*[r[k] for k in keep])
    console.print(t)


def print_table(console: Console, title: str, cols: Sequence[Col],
                rows: Sequence[Sequence[str]], *, wide: bool = False, fit: str = "drop",
                note: bool = True, omitted: Omitted | None = None) -> list[str]:
    """Print ``rows`` (strings, rich markup allowed) under ``cols``; return the headers of the
    columns left out.

    ``wide``: every column, boxed, whatever the console's width.  Otherwise the table fits
    ``console.width`` by ``fit`` ("drop" or "stack", see the module docstring).  ``note``:
    say under the table what was left out (``False``: the caller says it once, for several
    tables, with :func:`print_hidden`).  ``omitted``: record this table's columns there, for
    that one footer to say only what is true of all the tables.
    """
    if omitted is not None:
        hidden = print_table(console, title, cols, rows, wide=wide, fit=fit, note=note)
        omitted.add([c.header for c in cols], hidden)
        return hidden
    if wide:
        t = Table(title=Text(title), title_justify="left")
        for c in cols:
            t.add_column(c.header, justify=c.justify)
        for r in rows:
            t.add_row(*r)
        console.print(t)
        return []
    width = console.width
    sizes = _widths(cols, rows)
    mins = [lo for lo, _ in sizes]
    if fit == "stack":
        groups = _stack(cols, mins, width)
        for g, keep in enumerate(groups):
            part = title if len(groups) == 1 else f"{title} ({g + 1}/{len(groups)})"
            _render(console, part, cols, rows, keep, sizes, width)
        return []
    keep = _drop(cols, mins, width)
    _render(console, title, cols, rows, keep, sizes, width)
    hidden = [c.header for k, c in enumerate(cols) if k not in keep]
    if note:
        print_hidden(console, hidden)
    return hidden


def print_hidden(console: Console, hidden: Sequence[str] | Omitted) -> None:
    """One line naming the columns left out at this width, if any: ``hidden``, one table's;
    or, under several tables, those no table shows, then those only some tables left out."""
    if isinstance(hidden, Omitted):
        every, some = hidden.everywhere(), hidden.somewhere()
    else:
        every, some = list(dict.fromkeys(hidden)), []
    if not every and not some:
        return
    parts = [f"not shown at {console.width} columns: {', '.join(every)}"] if every else []
    if some:
        where = "" if every else f" at {console.width} columns"
        parts.append(f"left out of some tables{where}: {', '.join(some)}")
    console.print(Text("; ".join(parts) + " (--wide shows every column)", style="dim"))
