"""One atomic file write for every file Root Guard rewrites (grants, migrations, autostart).

The text goes to a temporary file with a unique name in the target's directory,
is flushed to disk (``fsync``), takes the requested mode, and replaces the target
in one ``rename``; the directory is synced too, so after a crash the target holds
the old text or the new one, never a mix. On any error the temporary file is
removed and the target is untouched.
"""

from __future__ import annotations

import os
import threading


def atomic_write(path: str, text: str, *, mode: int = 0o600, dir_mode: int | None = None) -> None:
    """Replace ``path`` with ``text`` (UTF-8, newlines as given); ``dir_mode`` creates missing directories."""
    import tempfile  # here, not at import: the short commands import this module for write_cache

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


CACHE_LIMIT = 1 << 26  # bytes: a kept file larger than this is not read (the largest, a 60k-file root's scans, is ~0.4 MB)


def read_cache(path: str, limit: int = CACHE_LIMIT) -> object:
    """The JSON value ``write_cache`` kept at ``path``, or None: missing, unreadable, over ``limit``,
    not JSON, or not a regular file. A FIFO or a device put there is refused, never waited on, and
    a symbolic link is not followed (``paths.read_regular``)."""
    from lsp_bridge.core.paths import read_regular

    data = read_regular(path, limit + 1)
    if data is None or len(data) > limit:
        return None
    import json

    try:
        return json.loads(data)
    except (ValueError, RecursionError):  # RecursionError: nested past the parser's depth
        return None


def write_cache(path: str, text: str) -> bool:
    """Replace the private cache file ``path`` with ``text``; False when it could not be written.

    For what Root Guard keeps between runs only to go faster (the caller reads it
    back validated, and recomputes when it is missing): the directory is created
    private, the text goes to a temporary file of this process and thread, opened
    without following a link, mode 0600, and replaces the target in one ``rename``.
    No ``fsync``: after a crash the cache is merely recomputed.
    """
    temp = f"{path}.{os.getpid()}.{threading.get_ident()}.tmp"
    try:
        os.makedirs(os.path.dirname(path), mode=0o700, exist_ok=True)
        fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_CLOEXEC | getattr(os, "O_NOFOLLOW", 0), 0o600)
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(text)
        os.replace(temp, path)
    except (OSError, UnicodeEncodeError):  # a text UTF-8 cannot hold (lone surrogates): not kept either
        try:
            os.unlink(temp)
        except OSError:
            pass
        return False
    return True


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
