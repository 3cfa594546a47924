"""What one change of a window's folders or configuration did (``RootTracker`` makes them)."""

from __future__ import annotations

from dataclasses import dataclass

from lsp_bridge.core.union import Union, Widening


@dataclass(frozen=True)
class Change:
    before: Union
    after: Union
    widenings: tuple[Widening, ...]  # new since ``before`` and not acknowledged
    added_folders: tuple[str, ...] = ()
    start: bool = False  # the window's first folders
    verb: str = ""  # what the person did: "adding", "opening", "reopening" ("" for a configuration change)

    @property
    def widened(self) -> bool:
        return bool(self.widenings)
