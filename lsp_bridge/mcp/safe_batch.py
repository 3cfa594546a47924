"""Changes to several files applied as one (``apply_patch``), race-safe as ``safe_io``.

Every file is staged before the first rename; nothing is left on failure.
"""

from __future__ import annotations

import os
import stat
from contextlib import ExitStack

from lsp_bridge.mcp.safe_io import (
    TEMP_FLAGS,
    SafeIOError,
    fsync_dir,
    lstat_at,
    open_directory,
    open_leaf,
    os_call,
    require_plain_leaf,
    split_leaf,
    temp_name,
    unlink_quietly,
    write_all,
)


class Batch:
    """Changes to several files applied as one: ``apply_patch``.

    ``stage_write`` writes each new content to a temporary file beside its target and
    ``stage_delete`` checks each deletion, before anything visible changes. ``commit``
    then renames in order; an existing target is first kept under a hard-linked backup
    name, so a failure part-way restores every name already changed. Temporary files,
    backups and directories the batch created are removed on failure: nothing is left.
    """

    def __init__(self) -> None:
        self._stack = ExitStack()
        self._staged: list[tuple[str, int, str, str | None, str]] = []  # (kind, dfd, name, temp, shown)
        self._made_dirs: list[tuple[str, list[str]]] = []  # (root, parts) created, in creation order

    def __enter__(self) -> Batch:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def stage_write(self, root: str, relative: str, data: bytes) -> bool:
        """Write ``data`` beside ``relative``; True when the target does not exist yet."""
        parents, name = split_leaf(relative)
        self._note_missing_dirs(root, parents)
        dfd = self._stack.enter_context(open_directory(root, parents, create=True))
        existing = lstat_at(dfd, name)
        if existing is not None:
            require_plain_leaf(existing.st_mode, relative)
        temp = temp_name(name)
        fd = open_leaf(dfd, temp, TEMP_FLAGS, relative, mode=0o666)
        self._staged.append(("write", dfd, name, temp, relative))
        try:
            write_all(fd, data)
            if existing is not None:
                os.fchmod(fd, stat.S_IMODE(existing.st_mode))
            os.fsync(fd)
        except OSError as exc:
            raise SafeIOError("io_error", f"{relative}: {exc.strerror}") from None
        finally:
            os.close(fd)
        return existing is None

    def stage_delete(self, root: str, relative: str) -> None:
        parents, name = split_leaf(relative)
        dfd = self._stack.enter_context(open_directory(root, parents))
        info = lstat_at(dfd, name)
        if info is None:
            raise SafeIOError("not_found", f"{relative} does not exist")
        require_plain_leaf(info.st_mode, relative)
        self._staged.append(("delete", dfd, name, None, relative))

    def commit(self) -> None:
        """Rename every staged file into place; on failure undo the ones done and raise."""
        done: list[tuple[str, int, str, str | None]] = []  # (kind, dfd, name, backup)
        try:
            for kind, dfd, name, temp, shown in self._staged:
                backup = None
                if lstat_at(dfd, name) is not None:
                    backup = temp_name(name) + ".bak"
                    os_call(os.link, shown, name, backup, src_dir_fd=dfd, dst_dir_fd=dfd, follow_symlinks=False)
                done.append((kind, dfd, name, backup))
                if kind == "write":
                    os_call(os.rename, shown, temp, name, src_dir_fd=dfd, dst_dir_fd=dfd)
                else:
                    os_call(os.unlink, shown, name, dir_fd=dfd)
        except BaseException:
            for kind, dfd, name, backup in reversed(done):
                if backup is not None:
                    try:
                        os.rename(backup, name, src_dir_fd=dfd, dst_dir_fd=dfd)
                    except OSError:
                        pass
                elif kind == "write":
                    unlink_quietly(dfd, name)
            self.abort()
            raise
        for _, dfd, _, backup in done:
            if backup is not None:
                unlink_quietly(dfd, backup)
        for _, dfd, _, _, _ in self._staged:
            fsync_dir(dfd)
        self._staged = []
        self._made_dirs = []

    def abort(self) -> None:
        """Remove the temporary files and the directories the batch created."""
        for _kind, dfd, _, temp, _ in self._staged:
            if temp is not None:
                unlink_quietly(dfd, temp)
        self._staged = []
        for root, parts in reversed(self._made_dirs):
            try:
                with open_directory(root, parts[:-1]) as parent:
                    os.rmdir(parts[-1], dir_fd=parent)
            except (OSError, SafeIOError):
                pass
        self._made_dirs = []

    def close(self) -> None:
        if self._staged:
            self.abort()
        self._stack.close()

    def _note_missing_dirs(self, root: str, parents: list[str]) -> None:
        for depth in range(1, len(parents) + 1):
            try:
                with open_directory(root, parents[:depth]):
                    pass
            except SafeIOError:
                for missing in range(depth, len(parents) + 1):
                    if (root, parents[:missing]) not in self._made_dirs:
                        self._made_dirs.append((root, parents[:missing]))
                return
