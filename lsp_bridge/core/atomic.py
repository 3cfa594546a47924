"""One atomic file write for every file Root Guard rewrites (grants, migrations, autostart).

The text goes to a temporary file with a unique name in the target's directory,
is flushed to disk (``fsync``), takes the requested mode, and replaces the target
in one ``rename``; the directory is synced too, so after a crash the target holds
the old text or the new one, never a mix. On any error the temporary file is
removed and the target is untouched.
"""

from __future__ import annotations

import os
import tempfile


def atomic_write(path: str, text: str, *, mode: int = 0o600, dir_mode: int | None = None) -> None:
    """Replace ``path`` with ``text`` (UTF-8, newlines as given); ``dir_mode`` creates missing directories."""
    directory = os.path.dirname(os.path.abspath(path))
    if dir_mode is not None:
        os.makedirs(directory, mode=dir_mode, exist_ok=True)
    fd, temp = tempfile.mkstemp(prefix=f".{os.path.basename(path)}.", suffix=".tmp", dir=directory)
    try:
        with os.fdopen(fd, "w", encoding="utf-8", newline="") as handle:
            handle.write(text)
            handle.flush()
            os.fchmod(handle.fileno(), mode)
            os.fsync(handle.fileno())
        os.replace(temp, path)
    except BaseException:
        try:
            os.unlink(temp)
        except FileNotFoundError:
            pass
        raise
    _fsync_dir(directory)


def _fsync_dir(directory: str) -> None:
    try:
        fd = os.open(directory, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)
