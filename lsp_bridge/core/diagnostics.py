"""Diagnostics as data: what went wrong, where, how badly.

The language server publishes these as LSP diagnostics, the CLI prints them as
``file:line:col: severity: message``. Positions are 0-based (as in LSP);
``format()`` shows them 1-based, as editors and compilers do.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Literal

if TYPE_CHECKING:
    from typing import Any

Severity = Literal["error", "warning", "information", "hint"]


@dataclass(frozen=True)
class Range:
    start_line: int
    start_column: int
    end_line: int
    end_column: int

    @classmethod
    def point(cls, line: int, column: int, length: int = 1) -> Range:
        return cls(line, column, line, column + max(length, 1))


@dataclass(frozen=True)
class Diagnostic:
    severity: Severity
    code: str
    message: str
    file: str | None = None
    range: Range | None = None
    tags: tuple[str, ...] = field(default=())  # e.g. ("deprecated",)

    def format(self) -> str:
        where = self.file or "<input>"
        if self.range is not None:
            where += f":{self.range.start_line + 1}:{self.range.start_column + 1}"
        return f"{where}: {self.severity}: {self.message} [{self.code}]"

    def to_json(self) -> dict[str, Any]:
        data: dict[str, Any] = {
            "severity": self.severity,
            "code": self.code,
            "message": self.message,
            "file": self.file,
            "range": None,
            "tags": list(self.tags),
        }
        if self.range is not None:
            r = self.range
            data["range"] = {
                "start": {"line": r.start_line, "column": r.start_column},
                "end": {"line": r.end_line, "column": r.end_column},
            }
        return data


def has_errors(diagnostics: Iterable[Diagnostic]) -> bool:
    return any(d.severity == "error" for d in diagnostics)
