"""Where keys and values sit in a TOML text, and the strict parse that reports positions.

``tomllib`` (strict TOML 1.0, ten times faster than tomlkit on a 1 MiB file) parses;
it keeps no positions, so ``Locator`` scans the already valid text once and maps key
paths such as ``("paths", 1, "policies", "read")`` to line and column. Every
configuration diagnostic is placed with it.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import TYPE_CHECKING

from lsp_bridge.core.diagnostics import Diagnostic, Range

if TYPE_CHECKING:
    from typing import Any

_BARE_KEY = re.compile(r"[A-Za-z0-9_-]+")
_BARE_VALUE = re.compile(r"[^,\]}\n#]*")

if TYPE_CHECKING:
    KeyPath = tuple[Any, ...]  # of str (keys) and int (array indexes)
else:
    KeyPath = tuple

class _Locator:
    """Where keys and values sit in a TOML text, found by a small scanner.

    The TOML parsers keep no positions, so this walks the (already valid) text once and
    maps key paths such as ``("paths", 1, "policies", "read")`` to offsets.
    Positions are best effort: a construct it does not follow leaves the rest
    unmapped and callers fall back to the nearest mapped ancestor.
    """

    def __init__(self, text: str) -> None:
        self._text = text
        self._i = 0
        self._aot: dict[KeyPath, int] = {}
        self._line_starts = _line_starts(text)
        self.keys: dict[KeyPath, tuple[int, int]] = {}
        self.values: dict[KeyPath, tuple[int, int]] = {}
        try:
            self._document()
        except Exception:  # noqa: BLE001 - positions only; never fail a load on them
            pass

    def range_of(self, path: KeyPath, kind: str = "value") -> Range:
        """The range of ``path``'s key or value, else of its nearest mapped ancestor."""
        while True:
            first, second = (self.keys, self.values) if kind == "key" else (self.values, self.keys)
            span = first.get(path) or second.get(path)
            if span is not None:
                return Range(*self.position(span[0]), *self.position(span[1]))
            if not path:
                return Range.point(0, 0)
            path = path[:-1]
            kind = "key"

    def position(self, offset: int) -> tuple[int, int]:
        line = _bisect_right(self._line_starts, offset) - 1
        return line, offset - self._line_starts[line]

    # -- scanner
    def _peek(self, token: str) -> bool:
        return self._text.startswith(token, self._i)

    def _expect(self, token: str) -> None:
        if not self._peek(token):
            raise ValueError(f"expected {token!r}")
        self._i += len(token)

    def _skip(self, newlines: bool) -> None:
        text = self._text
        while self._i < len(text):
            char = text[self._i]
            if char in " \t" or (newlines and char in "\r\n"):
                self._i += 1
            elif char == "#":
                end = text.find("\n", self._i)
                self._i = len(text) if end < 0 else end
            else:
                return

    def _document(self) -> None:
        prefix: KeyPath = ()
        while True:
            self._skip(newlines=True)
            if self._i >= len(self._text):
                return
            start = self._i
            if self._peek("[["):
                self._i += 2
                parts = self._key()[0]
                self._skip(False)
                self._expect("]]")
                array = self._resolve(parts[:-1]) + (parts[-1],)
                index = self._aot.get(array, 0)
                self._aot[array] = index + 1
                prefix = array + (index,)
                self.keys.setdefault(array, (start, self._i))
                self.keys.setdefault(prefix, (start, self._i))
            elif self._peek("["):
                self._i += 1
                parts = self._key()[0]
                self._skip(False)
                self._expect("]")
                prefix = self._resolve(parts)
                self.keys.setdefault(prefix, (start, self._i))
            else:
                self._key_value(prefix)

    def _resolve(self, parts: tuple[str, ...]) -> KeyPath:
        """A header's key path, with the current index after each array of tables."""
        path: KeyPath = ()
        for part in parts:
            path += (part,)
            if path in self._aot:
                path += (self._aot[path] - 1,)
        return path

    def _key(self) -> tuple[tuple[str, ...], int, int]:
        self._skip(False)
        start = self._i
        parts = []
        while True:
            parts.append(self._simple_key())
            end = self._i
            self._skip(False)
            if not self._peek("."):
                return tuple(parts), start, end
            self._i += 1
            self._skip(False)

    def _simple_key(self) -> str:
        if self._peek('"') or self._peek("'"):
            start = self._i
            self._string()
            raw = self._text[start : self._i]
            if raw.startswith("'"):
                return raw[1:-1]
            try:
                import json

                key: str = json.loads(raw)
                return key
            except ValueError:
                return raw[1:-1]
        match = _BARE_KEY.match(self._text, self._i)
        if match is None:
            raise ValueError("expected a key")
        self._i = match.end()
        return match.group()

    def _key_value(self, prefix: KeyPath) -> None:
        parts, start, end = self._key()
        path = prefix + parts
        for size in range(len(prefix) + 1, len(path) + 1):
            self.keys.setdefault(path[:size], (start, end))
        self._skip(False)
        self._expect("=")
        self._skip(False)
        self._value(path)

    def _value(self, path: KeyPath) -> None:
        start = self._i
        char = self._text[self._i]
        if char in "\"'":
            self._string()
        elif char == "[":
            self._i += 1
            self._sequence(lambda index: self._value(path + (index,)), "]")
        elif char == "{":
            self._i += 1
            self._sequence(lambda index: self._key_value(path), "}")
        else:
            match = _BARE_VALUE.match(self._text, self._i)
            assert match is not None  # the pattern matches the empty string too
            self._i = start + len(match.group().rstrip())
            if self._i == start:
                raise ValueError("expected a value")
        self.values.setdefault(path, (start, self._i))

    def _sequence(self, item: Callable[[int], None], close: str) -> None:
        index = 0
        while True:
            self._skip(True)
            if self._peek(close):
                self._i += 1
                return
            item(index)
            index += 1
            self._skip(True)
            if self._peek(","):
                self._i += 1

    def _string(self) -> None:
        text, i = self._text, self._i
        quote = text[i]
        if text.startswith(quote * 3, i):
            j = i + 3
            while not text.startswith(quote * 3, j):
                j += 2 if (quote == '"' and text[j] == "\\") else 1
                if j >= len(text):
                    raise ValueError("unterminated string")
            run = 3
            while run < 5 and j + run < len(text) and text[j + run] == quote:
                run += 1
            self._i = j + run
            return
        j = i + 1
        while text[j] != quote:
            j += 2 if (quote == '"' and text[j] == "\\") else 1
        self._i = j + 1


def _line_starts(text: str) -> list[int]:
    """The offset of each line's first character."""
    starts = [0]
    at = text.find("\n")
    while at >= 0:
        starts.append(at + 1)
        at = text.find("\n", at + 1)
    return starts


def _bisect_right(items: list[int], value: int) -> int:
    low, high = 0, len(items)
    while low < high:
        middle = (low + high) // 2
        if value < items[middle]:
            high = middle
        else:
            low = middle + 1
    return low


# --------------------------------------------------------------------------- validation


def _display(path: KeyPath) -> str:
    text = ""
    for part in path:
        if isinstance(part, int):
            text += f"[{part}]"
        else:
            shown = part if _BARE_KEY.fullmatch(part) else _json_dumps(part)
            text += f".{shown}" if text else shown
    return text


def _json_dumps(text: str) -> str:
    import json  # imported when a key needs quoting, not on every start

    return json.dumps(text)


def _shown(text: str, limit: int = 60) -> str:
    """A user value quoted for a message: escaped and cut short."""
    return repr(text) if len(text) <= limit else repr(text[:limit]) + "..."

def _error(code: str, message: str, file: str | None, rng: Range | None = None) -> Diagnostic:
    return Diagnostic("error", code, message, file, rng)


_TOML_ERROR_AT = re.compile(
    r"(?s)^(?P<message>.*?)(?: \(at line (?P<line>\d+), column (?P<column>\d+)\)| \(at end of document\))?$"
)


def parse_toml(text: str, file: str) -> tuple[dict[str, Any] | None, Diagnostic | None]:
    """(data, None), or (None, a syntax error diagnostic at the parser's position).

    Loading uses the standard library's strict TOML 1.0 parser (an order of
    magnitude faster than tomlkit on large files); tomlkit keeps no positions
    either, so ``_Locator`` supplies them. ``migrate`` edits with tomlkit.
    """
    import tomllib  # imported when a file is there to parse: most runs have none

    try:
        return tomllib.loads(text), None
    except tomllib.TOMLDecodeError as exc:
        match = _TOML_ERROR_AT.match(str(exc))
        rng = _end_range(text)
        assert match is not None  # every part of the pattern is optional
        if match.group("line"):
            rng = Range.point(int(match.group("line")) - 1, int(match.group("column")) - 1)
        return None, _error("toml-syntax", f"invalid TOML: {match.group('message')}", file, rng)
    except Exception as exc:  # noqa: BLE001 - e.g. RecursionError: hostile input must never crash a load
        return None, _error("toml-syntax", f"invalid TOML ({type(exc).__name__})", file, Range.point(0, 0))


def _end_range(text: str) -> Range:
    lines = text.split("\n")
    return Range.point(len(lines) - 1, len(lines[-1]))



Locator = _Locator
