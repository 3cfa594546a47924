"""Where acknowledgements live: ``<user state dir>/rootguard/acknowledged.json``.

The I/O edge of ``lsp_bridge.core.acknowledged``: one small JSON file per user,
written atomically (temporary file, ``os.replace``) under an advisory lock so
two editor windows acknowledging at once do not lose each other's record. An
unreadable file counts as no acknowledgement (every wide window warns) and is
reported once in the server log; it is replaced by the next acknowledgement.
"""

from __future__ import annotations

import fcntl
import logging
import os
from collections.abc import Iterable, Sequence
from contextlib import contextmanager

import platformdirs

from lsp_bridge.core import acknowledged
from lsp_bridge.core.acknowledged import Acknowledgement
from lsp_bridge.core.paths import read_regular

log = logging.getLogger("rootguard.lsp.acknowledged")
FILE_NAME = "acknowledged.json"


def store_path() -> str:
    return os.path.join(platformdirs.user_state_dir("rootguard"), FILE_NAME)


MAX_BYTES = 16 << 20


class AcknowledgementStore:
    def __init__(self, path: str | None = None):
        self.path = path or store_path()
        self.error: str | None = None

    def load(self) -> dict[str, Acknowledgement]:
        text = self._text()
        if text is None:
            return {}
        try:
            records = acknowledged.parse(text, self.path)
        except acknowledged.AcknowledgementError as err:
            return self._failed(str(err))
        self.error = None
        return records

    def seen(self) -> list[tuple[str, ...]]:
        """The folder sets of windows that were warned about (``reopening`` when one starts again)."""
        text = self._text()
        return acknowledged.parse_seen(text) if text is not None else []

    def _text(self) -> str | None:
        data = read_regular(self.path, MAX_BYTES + 1, follow=True)  # a FIFO put there is refused, not waited on
        if data is None:
            if os.path.lexists(self.path):
                self._failed(f"{self.path}: cannot read: not a readable regular file")
            return None
        if len(data) > MAX_BYTES:
            self._failed(f"{self.path}: cannot read: larger than {MAX_BYTES} bytes")
            return None
        try:
            return data.decode("utf-8")
        except UnicodeDecodeError:
            self._failed(f"{self.path}: cannot read: not UTF-8 text")
            return None

    def _failed(self, message: str) -> dict[str, Acknowledgement]:
        if message != self.error:
            log.warning("acknowledgements ignored: %s", message)
        self.error = message
        return {}

    def acknowledge(self, folders: Iterable[str], union: Sequence[str], when: float) -> None:
        from lsp_bridge.core.atomic import atomic_write  # tempfile: not on the way to the first status

        with self._locked():
            records = acknowledged.acknowledge(self.load(), folders, union, when)
            atomic_write(self.path, acknowledged.render(records, self.seen()), dir_mode=0o700)

    def withdraw(self, folders: Iterable[str], when: float) -> None:
        """Each folder's record goes back to the union it replaced (``acknowledged.withdraw``)."""
        from lsp_bridge.core.atomic import atomic_write

        with self._locked():
            records = acknowledged.withdraw(self.load(), folders, when)
            atomic_write(self.path, acknowledged.render(records, self.seen()), dir_mode=0o700)

    def remember(self, folders: Sequence[str]) -> None:
        """Note that a window with these folders was warned about."""
        from lsp_bridge.core.atomic import atomic_write

        with self._locked():
            seen = self.seen()
            if seen and seen[-1] == acknowledged.window_key(folders):
                return
            atomic_write(self.path, acknowledged.render(self.load(), acknowledged.remember(seen, folders)), dir_mode=0o700)

    @contextmanager
    def _locked(self):
        os.makedirs(os.path.dirname(self.path), mode=0o700, exist_ok=True)
        fd = os.open(self.path + ".lock", os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            yield
        finally:
            os.close(fd)


def write_report(session: str, text: str) -> str:
    """The widening report as a file a client can open (``window/showDocument``)."""
    from lsp_bridge.core.atomic import atomic_write

    directory = os.path.join(platformdirs.user_state_dir("rootguard"), "reports")
    path = os.path.join(directory, f"widening-{session}.txt")
    atomic_write(path, text + "\n", dir_mode=0o700)
    return path
