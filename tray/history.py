"""The tray's memory across restarts: decisions, missed requests, acknowledgements.

A small JSON-lines file beside the audit log (``<user state dir>/rootguard/
tray-history.jsonl``), one record per line, appended as things happen and read
back at start. Unreadable lines are skipped (a torn last line after a crash);
the file is rewritten, atomically, with only what the tray still shows once it
holds several times that.
"""

from __future__ import annotations

import json
import logging
import os
from dataclasses import asdict, fields

from lsp_bridge.core.atomic import atomic_write
from lsp_bridge.core.paths import open_regular, read_regular
from tray.queue import MISSED_LIMIT, RECENT_LIMIT, ApprovalQueue, DecisionRecord, MissedRecord

log = logging.getLogger("rootguard.tray.history")
FILE_NAME = "tray-history.jsonl"
MAX_BYTES = 16 << 20  # far above what RECENT_LIMIT and MISSED_LIMIT records take
_KINDS = {"decision": DecisionRecord, "missed": MissedRecord}


def history_path() -> str:
    from lsp_bridge.core.places import state_dir

    return os.path.join(state_dir(), FILE_NAME)


def _record(kind: str, data: dict):
    cls = _KINDS[kind]
    names = {f.name for f in fields(cls)}
    values = {k: v for k, v in data.items() if k in names}
    values["paths"] = tuple(p for p in values.get("paths", ()) if isinstance(p, str))
    if not isinstance(values.get("when"), (int, float)):
        raise ValueError("no time")
    return cls(**values)


class History:
    def __init__(self, path: str | None = None):
        self.path = path or history_path()
        self.lines = 0

    def load_into(self, queue: ApprovalQueue) -> None:
        """Fill the queue's recent and missed lists from the file (newest first)."""
        decisions: list[DecisionRecord] = []
        missed: list[MissedRecord] = []
        dismissed: set[tuple] = set()
        data = read_regular(self.path, MAX_BYTES + 1, follow=True)  # a FIFO put there is refused, not waited on
        if data is None or len(data) > MAX_BYTES:
            if os.path.lexists(self.path):
                log.warning("%s: cannot read the tray history: not a readable regular file of at most %d bytes",
                            self.path, MAX_BYTES)
            return
        raw = data.decode("utf-8", "replace").splitlines(keepends=True)
        for number, line in enumerate(raw, 1):
            try:
                item = json.loads(line)
                kind = item.pop("kind")
                if kind == "dismissed":
                    dismissed.add((item["when"], tuple(item["paths"])))
                    continue
                record = _record(kind, item)
            except (ValueError, KeyError, TypeError, AttributeError, RecursionError):
                log.info("%s:%d: unreadable history line skipped", self.path, number)
                continue
            (decisions if kind == "decision" else missed).append(record)
        self.lines = len(raw)
        missed = [m for m in missed if (m.when, m.paths) not in dismissed]
        queue.recent.extendleft(decisions[-RECENT_LIMIT:])
        queue.missed.extendleft(missed[-MISSED_LIMIT:])
        if self.lines > 4 * (RECENT_LIMIT + MISSED_LIMIT):
            self._compact(queue)

    def append(self, kind: str, record) -> None:
        if self.append_raw({"kind": kind, **asdict(record)}):
            self.lines += 1

    def dismissed(self, record: MissedRecord) -> None:
        self.append_raw({"kind": "dismissed", "when": record.when, "paths": list(record.paths)})

    def append_raw(self, data: dict) -> bool:
        """One line appended; False (and a warning) when the file cannot be written or is not a
        regular file (a FIFO in its place is refused, never waited on)."""
        try:
            os.makedirs(os.path.dirname(self.path), mode=0o700, exist_ok=True)
            fd = open_regular(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
            with os.fdopen(fd, "a", encoding="utf-8") as handle:
                handle.write(json.dumps(data) + "\n")
        except OSError as err:
            log.warning("%s: cannot write the tray history: %s", self.path, err.strerror)
            return False
        return True

    def _compact(self, queue: ApprovalQueue) -> None:
        lines = [json.dumps({"kind": "decision", **asdict(r)}) for r in reversed(queue.recent)]
        lines += [json.dumps({"kind": "missed", **asdict(m)}) for m in reversed(queue.missed)]
        try:
            atomic_write(self.path, "".join(line + "\n" for line in lines), dir_mode=0o700)
            self.lines = len(lines)
        except OSError as err:
            log.warning("%s: cannot compact the tray history: %s", self.path, err.strerror)
