"""Text a person reads: one way to shorten a list, to show a path, to keep a line whole.

Every list the CLI, the demo and the language server print goes through
``shorten`` (the first ``limit`` items, then "+N more"), every path through
``show_path`` / ``one_line`` (``lsp_bridge.core.terminal_text``: normalised,
control, C1 and bidi characters escaped: a newline in a file name cannot break
a report into lines that look like other entries, nor ESC or U+009B drive the
terminal).
"""

from __future__ import annotations

import os
from collections.abc import Iterable

from lsp_bridge.core.terminal_text import one_line

__all__ = ["LIST_LIMIT", "one_line", "plural", "show_path", "shorten"]

LIST_LIMIT = 8


def show_path(path: str) -> str:
    """A path normalised for display (no ``//``, no trailing ``/``), on one line."""
    if path.startswith("//") and not path.startswith("///"):
        path = path[1:]  # POSIX keeps a leading "//"; nobody means it here
    return one_line(os.path.normpath(path) if path else path)


def shorten(items: Iterable[str], limit: int = LIST_LIMIT, *, total: int | None = None) -> str:
    """``a, b, c (+N more)``: the first ``limit`` items; ``total`` when the list was capped upstream."""
    items = list(items)
    count = len(items) if total is None else max(total, len(items))
    shown = ", ".join(one_line(item) for item in items[:limit])
    hidden = count - min(len(items), limit)
    return f"{shown} (+{hidden:,} more)" if hidden > 0 else shown


def plural(count: int, noun: str, nouns: str | None = None) -> str:
    return f"{count:,} {noun if count == 1 else (nouns or noun + 's')}"
