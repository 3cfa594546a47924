"""Where outside content shows up in a tool result, in whatever form (pure).

Every content block, ``structuredContent``, ``_meta`` (the result's and each block's)
and the rest of the result are inspected separately, then together (a canary split
across two blocks). A canary counts when it appears plainly or upper-cased, reversed,
hex-encoded, base64-encoded (standard or URL-safe, at any offset: every base64-looking
run is decoded), percent-encoded, with whitespace or zero-width characters inserted, or
as its two halves anywhere in the result (split). The canaries are random hex strings
(``fixture.Fixture``), so a chance match is negligible.
"""

from __future__ import annotations

import base64
import binascii
import re
import urllib.parse
from typing import Any

_B64 = re.compile(r"[A-Za-z0-9+/_-]{12,}={0,2}")
_HEX = re.compile(r"(?:[0-9a-fA-F]{2}){8,}")
_NOISE = re.compile(r"[\s\u200b\u200c\u200d\u2060\ufeff]+")


def _strings(value: Any) -> list[str]:
    """Every string in a JSON value (keys too)."""
    out: list[str] = []
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, str):
            out.append(item)
        elif isinstance(item, dict):
            for key, sub in item.items():
                out.append(str(key))
                stack.append(sub)
        elif isinstance(item, (list, tuple)):
            stack.extend(item)
    return out


def _decoded(text: str) -> list[str]:
    """``text`` decoded every way a server could hide a canary."""
    found = [urllib.parse.unquote(text), _NOISE.sub("", text)]
    for run in _B64.findall(_NOISE.sub("", text)):
        for decode in (base64.b64decode, base64.urlsafe_b64decode):
            for trim in range(4):  # the canary may sit at any offset of a longer run
                chunk = run[trim:].rstrip("=")
                chunk += "=" * (-len(chunk) % 4)
                try:
                    found.append(decode(chunk).decode("latin-1"))
                except (binascii.Error, ValueError):
                    continue
    for run in _HEX.findall(text):
        try:
            found.append(bytes.fromhex(run).decode("latin-1"))
        except ValueError:
            continue
    return found


def form_of(text: str, canary: str) -> str | None:
    """How ``canary`` appears in ``text`` (plain, reversed, encoded, spaced), or None."""
    canary = canary.lower()
    low = text.lower()
    if canary in low:
        return "plain"
    if canary[::-1] in low:
        return "reversed"
    for decoded in _decoded(text):
        d = decoded.lower()
        if canary in d:
            return "encoded"
        if canary[::-1] in d:
            return "reversed, encoded"
    return None


def _split(text: str, canary: str) -> bool:
    half = len(canary) // 2
    low = _NOISE.sub("", text.lower())
    pieces = [canary[:half], canary[half:]]
    if all(p in low for p in pieces):
        return True
    reverse = canary[::-1]
    return all(p in low for p in (reverse[:half], reverse[half:]))


def evidence(dump: dict, canaries: dict[str, str]) -> list[str]:
    """Evidence lines for a tool result dumped as JSON (``model_dump(mode="json", by_alias=True)``).

    ``canaries``: label -> canary (e.g. "outside content" -> the fixture's marker)."""
    parts: list[tuple[str, str]] = []
    for i, block in enumerate(dump.get("content") or []):
        meta = block.get("_meta") if isinstance(block, dict) else None
        body = {k: v for k, v in block.items() if k != "_meta"} if isinstance(block, dict) else block
        parts.append((f"content[{i}]", "\n".join(_strings(body))))
        if meta is not None:
            parts.append((f"content[{i}]._meta", "\n".join(_strings(meta))))
    for key in ("structuredContent", "_meta"):
        if dump.get(key) is not None:
            parts.append((key, "\n".join(_strings(dump[key]))))
    rest = {k: v for k, v in dump.items() if k not in ("content", "structuredContent", "_meta")}
    parts.append(("result", "\n".join(_strings(rest))))
    found: list[str] = []
    for label, canary in canaries.items():
        hits = []
        for where, text in parts:
            form = form_of(text, canary)
            if form:
                hits.append(where + ("" if form == "plain" else f" ({form})"))
        if not hits:
            texts = [text for _, text in parts]
            joined = "".join("".join(_strings(b.get("text", "") if isinstance(b, dict) else b))
                             for b in dump.get("content") or [])
            form = form_of(joined, canary) or form_of("\n".join(texts), canary)
            if form or _split("\n".join(texts), canary):
                hits.append("split across the result" + (f" ({form})" if form and form != "plain" else ""))
        if hits:
            found.append(f"{label} in the answer: {', '.join(hits)}")
    return found
