"""What the person accepted: the union each workspace folder was last acknowledged with.

A widening is measured against this, not against the previous message, so a
window that *starts* wide (VS Code reloading into an untitled workspace after
*Add Folder*, a reopened workspace, a client started with several folders) is
warned about like a live change. Pure data: the language server reads and
writes the file (``lsp_bridge/lsp/acknowledgements.py``); here are the rules.

* Each record maps a canonical folder to the union paths it was acknowledged
  with (and when).
* The reference union of a window is the union of its folders' records. A
  window with exactly one folder and no record for it accepts that folder's
  own union implicitly (the person opened that folder alone); a folder without
  a record in a multi-folder window contributes nothing, so it is a widening.
* A record the file cannot vouch for (wrong type, relative path) is dropped:
  less acknowledged means more warnings, never fewer.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

FORMAT_VERSION = 1


@dataclass(frozen=True)
class Acknowledgement:
    folder: str  # canonical
    union: tuple[str, ...]  # canonical union entries
    when: float = 0.0
    previous: tuple[str, ...] | None = None  # the union this record replaced (withdrawing restores it)


SEEN_LIMIT = 200  # windows (folder sets) remembered as warned about, most recent last


class AcknowledgementError(ValueError):
    """The stored file is unreadable as a whole (its records are then ignored)."""


def parse(text: str, where: str = "<acknowledged>") -> dict[str, Acknowledgement]:
    """Records from the file's text. Bad records are skipped; a bad file raises."""
    if not text.strip():
        return {}
    try:
        data = json.loads(text)
    except json.JSONDecodeError as err:
        raise AcknowledgementError(f"{where}:{err.lineno}:{err.colno}: invalid JSON: {err.msg}") from None
    except RecursionError:
        raise AcknowledgementError(f"{where}: invalid JSON: nested too deep to read") from None
    if not isinstance(data, dict) or not isinstance(data.get("folders"), dict):
        raise AcknowledgementError(f"{where}: expected an object with a 'folders' object")
    found: dict[str, Acknowledgement] = {}
    for folder, record in data["folders"].items():
        if not (isinstance(folder, str) and folder.startswith("/") and isinstance(record, dict)):
            continue
        union = record.get("union")
        when = record.get("when", 0.0)
        if not isinstance(union, list) or not all(isinstance(p, str) and p.startswith("/") for p in union):
            continue
        previous = record.get("previous")
        if not (isinstance(previous, list) and all(isinstance(p, str) and p.startswith("/") for p in previous)):
            previous = None
        found[folder] = Acknowledgement(folder, tuple(union), float(when) if isinstance(when, (int, float)) else 0.0,
                                        None if previous is None else tuple(previous))
    return found


def parse_seen(text: str) -> list[tuple[str, ...]]:
    """The folder sets of windows that were warned about (``seen``), oldest first; [] when unreadable."""
    try:
        data = json.loads(text) if text.strip() else {}
    except (json.JSONDecodeError, RecursionError):
        return []
    seen = data.get("seen") if isinstance(data, dict) else None
    if not isinstance(seen, list):
        return []
    return [tuple(s) for s in seen if isinstance(s, list) and s and all(isinstance(p, str) and p.startswith("/") for p in s)]


def window_key(folders: Iterable[str]) -> tuple[str, ...]:
    """A window's folders as the ``seen`` list keeps them: sorted, without repeats."""
    return tuple(sorted(set(folders)))


def remember(seen: Sequence[tuple[str, ...]], folders: Iterable[str]) -> list[tuple[str, ...]]:
    """``seen`` with this window's folder set last (kept to the ``SEEN_LIMIT`` most recent)."""
    key = window_key(folders)
    kept = [s for s in seen if s != key] + [key]
    return kept[-SEEN_LIMIT:]


def render(records: Mapping[str, Acknowledgement], seen: Sequence[tuple[str, ...]] = ()) -> str:
    folders: dict[str, dict[str, object]] = {}
    for folder, rec in sorted(records.items()):
        folders[folder] = {"union": list(rec.union), "when": rec.when}
        if rec.previous is not None:
            folders[folder]["previous"] = list(rec.previous)
    data: dict[str, object] = {"version": FORMAT_VERSION, "folders": folders}
    if seen:
        data["seen"] = [list(s) for s in seen]
    return json.dumps(data, indent=1) + "\n"


def acknowledge(
    records: Mapping[str, Acknowledgement], folders: Iterable[str], union: Sequence[str], when: float
) -> dict[str, Acknowledgement]:
    """The records after the person accepted ``union`` for the window's ``folders``."""
    updated = dict(records)
    for folder in folders:
        old = records.get(folder)
        previous = None if old is None else (old.union if tuple(old.union) != tuple(union) else old.previous)
        updated[folder] = Acknowledgement(folder, tuple(union), when, previous)
    return updated


def withdraw(records: Mapping[str, Acknowledgement], folders: Iterable[str], when: float) -> dict[str, Acknowledgement]:
    """The records after the person withdrew the window's acknowledgement: each folder's record goes
    back to the union it replaced (a folder acknowledged for the first time has none: it is dropped),
    so the window warns again as it did before it was acknowledged."""
    updated = dict(records)
    for folder in folders:
        old = records.get(folder)
        if old is None:
            continue
        if old.previous is None:
            del updated[folder]
        else:
            updated[folder] = Acknowledgement(folder, old.previous, when, None)
    return updated


def reference(
    records: Mapping[str, Acknowledgement], folders: Sequence[str], own_unions: Mapping[str, Sequence[str]]
) -> tuple[str, ...]:
    """The union the person accepted for a window with these (canonical) folders.

    ``own_unions[folder]`` is what the folder's union would be on its own; it is
    the implicit acceptance of a single-folder window with no record.
    """
    paths: list[str] = []
    for folder in folders:
        record = records.get(folder)
        if record is not None:
            chosen: Sequence[str] = record.union
        elif len(folders) == 1:
            chosen = own_unions.get(folder, (folder,))
        else:
            chosen = ()
        for path in chosen:
            if path not in paths:
                paths.append(path)
    return tuple(paths)


def implicit(records: Mapping[str, Acknowledgement], folders: Sequence[str]) -> str | None:
    """The folder a single-folder window accepts implicitly (it has no record yet)."""
    if len(folders) == 1 and folders[0] not in records:
        return folders[0]
    return None
