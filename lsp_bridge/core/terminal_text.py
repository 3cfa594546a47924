"""Text shown on a terminal: the one escaping every printed name goes through.

A file name, a reason, a command line may come from a hostile repository or an
agent. Printed raw, a newline fakes another entry, ESC or an 8-bit CSI/OSC
(U+009B, U+009D) moves the cursor, clears the screen or sets the clipboard, and
a bidirectional override (U+202E) shows ``exe.txt`` as ``txt.exe``. ``one_line``
writes every character that is not printable (``str.isprintable``: C0, DEL, C1,
format characters such as the bidi controls and zero-width marks, line and
paragraph separators, spaces other than " ", lone surrogates, unassigned code
points) as ``\\xNN``, ``\\uNNNN`` or ``\\UNNNNNNNN``.
"""

from __future__ import annotations


def one_line(text: str) -> str:
    """``text`` safe to print: every non-printable character as a hex escape (never a line break)."""
    if text.isprintable():  # the common case: nothing to escape
        return text
    return "".join(char if char.isprintable() else _escape(char) for char in text)


def _escape(char: str) -> str:
    code = ord(char)
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}" if code < 0x10000 else f"\\U{code:08x}"
