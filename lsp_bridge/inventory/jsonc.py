"""Reading the JSON(C) files a toolchain or an MCP client reads: ``json`` plus one comment-stripping step.

``strip_jsonc`` blanks comments and trailing commas (positions kept, so ``json``'s line
and column still point into the file); ``load_json`` reads a file without ever waiting
on it (``read_regular``: a FIFO or a kernel interface file is refused) and returns the
value, the text and a diagnostic naming the file. ``locate`` finds a string literal's
position for a diagnostic.
"""

from __future__ import annotations

import json
import os
import re

from lsp_bridge.core.diagnostics import Diagnostic, Range
from lsp_bridge.core.paths import read_regular

MAX_CONFIG_BYTES = 8 << 20  # an MCP configuration or a tsconfig is a few KB

# A string (kept), a line or block comment (blanked), or a comma whose next token closes
# an object or array (blanked). Strings come first, so "//" inside one is never a comment.
_TOKENS = re.compile(
    r'"(?:[^"\\\n]|\\.)*"?'
    r"|//[^\n]*"
    r"|/\*.*?(?:\*/|\Z)"
    r"|,(?=(?:\s|//[^\n]*|/\*[^*]*\*+(?:[^/*][^*]*\*+)*/)*[\]}])",
    re.DOTALL,
)


def strip_jsonc(text: str) -> str:
    """JSONC -> JSON: comments and trailing commas blanked, positions unchanged.

    Raises ``json.JSONDecodeError`` for an unterminated ``/*`` comment.
    """

    def blank(match: re.Match[str]) -> str:
        token = match.group()
        if token.startswith('"'):
            return token
        if token.startswith("/*") and not token.endswith("*/") or token == "/*/":
            raise json.JSONDecodeError("unterminated /* comment", text, match.start())
        return re.sub(r"[^\r\n]", " ", token)

    return _TOKENS.sub(blank, text)


def load_json(path: str, *, comments: bool, limit: int = MAX_CONFIG_BYTES,
              code: str = "mcp-config") -> tuple[object | None, str | None, Diagnostic | None]:
    """(data, raw text, error) for a JSON(C) file; data None with no error = absent.

    ``code``: the prefix of the diagnostics' codes (``<code>-unreadable``, ``<code>-invalid``)."""
    if not os.path.exists(path):  # absent, or a link to nothing: no configuration here
        return None, None, None
    data = read_regular(path, limit + 1, follow=True)  # a FIFO here would block the reader
    if data is None:
        return None, None, Diagnostic("error", f"{code}-unreadable", "cannot read: not a readable regular file", path)
    if len(data) > limit:
        return None, None, Diagnostic("error", f"{code}-unreadable",
                                      f"cannot read: larger than {limit // (1 << 20)} MiB", path)
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        return None, None, Diagnostic("error", f"{code}-unreadable", f"cannot read: {exc.__class__.__name__}", path)
    try:
        if comments:
            try:
                return json.loads(text), text, None  # most files hold no comment: no strip to pay for
            except json.JSONDecodeError:
                text_read = strip_jsonc(text)
        else:
            text_read = text
        return json.loads(text_read), text, None
    except json.JSONDecodeError as exc:
        return None, text, Diagnostic("error", f"{code}-invalid", f"invalid JSON: {exc.msg}", path,
                                      Range.point(exc.lineno - 1, exc.colno - 1))
    except ValueError as exc:  # a number past the interpreter's digit limit
        return None, text, Diagnostic("error", f"{code}-invalid", f"invalid JSON: {str(exc).split(';')[0]}", path)
    except RecursionError:  # a repository's file nested past the parser's depth: refused, named
        return None, text, Diagnostic("error", f"{code}-invalid", "invalid JSON: nested too deep to read", path)


def locate(text: str | None, value: str) -> Range | None:
    """The position of the string literal ``value`` in ``text`` when it is unique."""
    if text is None:
        return None
    needle = json.dumps(value, ensure_ascii=False)
    at = text.find(needle)
    if at < 0 or text.find(needle, at + 1) >= 0:
        return None
    line = text.count("\n", 0, at)
    column = at - (text.rfind("\n", 0, at) + 1)
    return Range.point(line, column, len(needle))
