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

from lsp_bridge.core.record import dataclass

FORMAT_VERSION = 1


@dataclass(frozen=True)
class Acknowledgement:
    folder: str  # canonical
    union: tuple[str, ...]  # canonical union entries
    when: float = 0.0


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
        found[folder] = Acknowledgement(folder, tuple(union), float(when) if isinstance(when, (int, float)) else 0.0)
    return found


def render(records: Mapping[str, Acknowledgement]) -> str:
    folders = {
        folder: {"union": list(rec.union), "when": rec.when} for folder, rec in sorted(records.items())
    }
    return json.dumps({"version": FORMAT_VERSION, "folders": folders}, indent=1) + "\n"


def acknowledge(
    records: Mapping[str, Acknowledgement], folders: Iterable[str], union: Sequence[str], when: float
) -> dict[str, Acknowledgement]:
    """The records after the person accepted ``union`` for the window's ``folders``."""
    updated = dict(records)
    for folder in folders:
        updated[folder] = Acknowledgement(folder, tuple(union), when)
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
