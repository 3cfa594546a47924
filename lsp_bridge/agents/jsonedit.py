"""Add entries to a JSON settings file's ``hooks`` without touching a byte of the rest.

``add_hook_groups(text, [(event, group), ...], indent)`` inserts each group at the end of
``hooks.<event>`` (creating the event's list, or the ``hooks`` object, where missing) by
splicing text at the right closing bracket: every other byte of the file stays as it was
(its formatting, key order, spacing, trailing newline). Pure: text in, text out; the
caller has refused files with comments.
"""

from __future__ import annotations

import json

_WS = " \t\n\r"
_DECODER = json.JSONDecoder()


class JsonEditError(ValueError):
    """The text is not the JSON object expected (a ``hooks`` that is not an object...)."""


def _skip(text: str, index: int) -> int:
    while index < len(text) and text[index] in _WS:
        index += 1
    return index


def members(text: str, start: int) -> tuple[dict[str, tuple[int, int]], int]:
    """The members of the object opening at ``start``: key -> (value start, value end); and the
    index of its closing brace."""
    if text[start] != "{":
        raise JsonEditError("not an object")
    found: dict[str, tuple[int, int]] = {}
    index = _skip(text, start + 1)
    if text[index] == "}":
        return found, index
    while True:
        if text[index] != '"':
            raise JsonEditError(f"a key expected at offset {index}")
        key, index = _DECODER.raw_decode(text, index)  # a key is a JSON string
        index = _skip(text, index)
        if text[index] != ":":
            raise JsonEditError(f"':' expected at offset {index}")
        value_start = _skip(text, index + 1)
        _, value_end = _DECODER.raw_decode(text, value_start)
        found[key] = (value_start, value_end)
        index = _skip(text, value_end)
        if text[index] == "}":
            return found, index
        if text[index] != ",":
            raise JsonEditError(f"',' or '}}' expected at offset {index}")
        index = _skip(text, index + 1)


def _insert(text: str, close: int, item: str, level: int, unit: str) -> str:
    """``item`` as the last element of the container closing at ``close`` (nested ``level`` deep)."""
    opening = close - 1
    while opening >= 0 and text[opening] in _WS:
        opening -= 1
    inner = unit * (level + 1)
    shown = item.replace("\n", "\n" + inner)
    if text[opening] in "{[":  # empty: the item alone, the closing bracket on its own line
        return text[:opening + 1] + "\n" + inner + shown + "\n" + unit * level + text[close:]
    return text[:opening + 1] + ",\n" + inner + shown + text[opening + 1:]


def add_hook_groups(text: str, groups: list[tuple[str, dict]], indent: int | str = 2) -> str:
    unit = indent if isinstance(indent, str) else " " * indent
    for event, group in groups:
        start = _skip(text, 0)
        top, top_close = members(text, start)
        dumped = json.dumps(group, indent=unit, ensure_ascii=False)
        if "hooks" not in top:
            body = json.dumps({event: [group]}, indent=unit, ensure_ascii=False)
            text = _insert(text, top_close, '"hooks": ' + body, 0, unit)
            continue
        hooks_start, _ = top["hooks"]
        if text[hooks_start] != "{":
            raise JsonEditError("`hooks` is not an object")
        events, hooks_close = members(text, hooks_start)
        if event not in events:
            body = json.dumps([group], indent=unit, ensure_ascii=False)
            text = _insert(text, hooks_close, json.dumps(event) + ": " + body, 1, unit)
            continue
        list_start, list_end = events[event]
        if text[list_start] != "[":
            raise JsonEditError(f"`hooks.{event}` is not a list")
        text = _insert(text, list_end - 1, dumped, 2, unit)
    return text
