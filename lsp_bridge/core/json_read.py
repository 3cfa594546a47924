"""``json.loads`` for a short command: the standard library's own C scanner, without ``import json``.

Importing ``json`` compiles six regular expressions and, through them, imports ``re``
and ``enum``: 10-14 ms of a ~40 ms ``rootguard roots``, which reads a repository's
``tsconfig`` and ``package.json`` files and nothing else in JSON. The parsing itself
is ``_json.make_scanner``, the scanner ``json.loads`` calls; this module gives it the
context ``json.JSONDecoder()`` would (strict, ``float``, ``int``, the three constants)
and does what ``JSONDecoder.decode`` adds around it: a byte-order mark refused,
whitespace skipped before and after, extra data refused. Errors are the very
``json.JSONDecodeError`` (``json`` is imported then, on the error path only), and
where ``_json`` is missing (another interpreter) this is ``json.loads`` itself.
``tests/test_json_read.py`` holds the two equal on generated texts.
"""

from __future__ import annotations

from collections.abc import Callable

_WHITESPACE = " \t\n\r"  # json.decoder.WHITESPACE: what JSON allows between tokens


class _Context:
    """The attributes ``_json.make_scanner`` reads from a ``json.JSONDecoder()``."""

    strict = True
    object_hook = None
    object_pairs_hook = None
    parse_float = float
    parse_int = int
    parse_constant = {"-Infinity": float("-inf"), "Infinity": float("inf"), "NaN": float("nan")}.__getitem__


_scan: Callable[[str, int], tuple[object, int]] | None
try:
    from _json import make_scanner as _make_scanner

    _scan = _make_scanner(_Context)  # type: ignore[arg-type]  # it reads the attributes json.JSONDecoder has
except (ImportError, AttributeError, TypeError):  # pragma: no cover - CPython always has it
    _scan = None


def loads(text: str) -> object:
    """``json.loads(text)`` for a ``str``: the same value, or the same ``JSONDecodeError`` (a ``ValueError``;
    ``RecursionError`` past the nesting the interpreter allows, as ``json.loads``)."""
    if _scan is None or text.startswith("\ufeff"):
        import json

        return json.loads(text)
    start = len(text) - len(text.lstrip(_WHITESPACE))
    try:
        value, end = _scan(text, start)
    except StopIteration as stop:
        raise _error("Expecting value", text, stop.value) from None
    rest = len(text) - len(text[end:].lstrip(_WHITESPACE))
    if rest != len(text):
        raise _error("Extra data", text, rest)
    return value


def _error(message: str, text: str, position: int) -> ValueError:
    import json

    return json.JSONDecodeError(message, text, position)
