"""What the sandbox cannot forbid by mounts, it watches for, and stops.

Three things a mount cannot hold, each watched on the host while the command runs
(watchdog: inotify on Linux), each stopping the sandbox the moment it happens:

* **A mask replaced.** A mount covers the file (inode) that was at the path when the
  sandbox started. A host-side ``mv new .env`` (or a delete and re-create) puts a
  *different* file at the path, which the sandbox then sees.
* **A mask's ancestor renamed.** Renaming a directory that holds a mask or a
  read-only protected file (``mv config cfg2``) carries the file out from under the
  rule anchored on its path: every later session would see ``cfg2/secret.json``.
* **A name created that the policy does not let the command write**, in a writable
  tree: a protected target (a candidate configuration file such as
  ``.rootguard.toml``, a ``.git``, the files editors, shells and agents run or read by
  themselves: ``.envrc``, ``.vscode/tasks.json``, ``.devcontainer/``,
  ``.claude/settings.json``...), or a path a rule denies writing. One that did not
  exist cannot be masked without creating it on the host, so its creation (a new
  file or directory, a rename or a link onto the name) is what is watched, and the
  one policy engine decides each event (``refuses``: why writing it is not allowed,
  or None).
* **A name created that the policy hides**, in any visible tree, on either side (a
  file a deny rule names that did not exist when the sandbox started, then written
  on the host: the sandbox would see it). ``hides``: why reading it is not allowed,
  or None.

On any of them ``on_violation(path, what)`` is called once; the runner kills the
whole sandbox, then ``remedy()`` undoes what it can on the host (nothing is
deleted: a protected name created in a writable tree (a configuration or auto-run
file, a ``.git``: what acts on the next session) is renamed aside,
``NAME.rootguard-held-<time>-<random>`` (a name nothing held before: it cannot be
guessed and taken ahead), for the person to look at; a renamed ancestor is
renamed back, after whatever took its name during the run is renamed aside the same
way; any other file stays where it is). A name that
carries the held marker is judged like any other. What the watch could not see (its
inotify watches used up) the runner's sweep after the command finds (``sweep.py``) and
hands to ``seen`` all the same. Who made a
name cannot be told from the host (the person may have made it meanwhile): the
message names it either way.
"""

from __future__ import annotations

import ctypes
import errno
import logging
import os
import secrets
import threading
import time
from collections.abc import Callable, Iterable
from typing import Any

from lsp_bridge.core.paths import is_within

HELD_SUFFIX = ".rootguard-held-"

# watchdog logs its own stop-time race (an event read while the observer stops) as an error. With
# no logging configured (``rootguard run``), Python would print it on stderr, which is COMMAND's:
# a handler here keeps it off; an application that configures logging (the language server) still
# gets every record.
logging.getLogger("watchdog").addHandler(logging.NullHandler())


class SandboxWatch:
    """Watches ``masks`` (their paths and ancestors up to their tree) and ``writable`` trees."""

    def __init__(self, masks: Iterable[tuple[str, str]], visible: Iterable[str], writable: Iterable[str],
                 refuses: Callable[[str], tuple[str, bool] | None], hides: Callable[[str], str | None],
                 on_violation: Callable[[str, str], None]):
        self.masks = frozenset(path for path, _ in masks)
        # Each masked path's ancestors strictly inside its tree: renaming one carries the mask away.
        self.ancestors: dict[str, str] = {}
        for path, tree in masks:
            parent = os.path.dirname(path)
            while parent != tree and is_within(parent, tree) and parent != os.path.dirname(parent):
                self.ancestors.setdefault(parent, path)
                parent = os.path.dirname(parent)
        self.visible = tuple(sorted(set(visible) | set(writable)))
        self.writable = tuple(sorted(set(writable)))
        self.refuses = refuses
        self.hides = hides
        self.on_violation = on_violation
        self.violation: tuple[str, str] | None = None
        # (what to rename, to what (None: aside, ``set_aside``), whether what now holds that name was made
        # during the run: set it aside)
        self._remedies: list[tuple[str, str | None, bool]] = []
        self._lock = threading.Lock()
        self._observer: Any = None
        self._trees: list[str] = []  # watched recursively: ``caught_up`` marks each
        self._marked: dict[str, threading.Event] = {}

    # -- watching ------------------------------------------------------------

    def start(self) -> None:
        if not (self.masks or self.visible):
            return
        from watchdog.events import FileSystemEventHandler
        from watchdog.observers import Observer

        watch = self

        class Handler(FileSystemEventHandler):
            def on_any_event(self, event) -> None:
                src = os.fsdecode(event.src_path)
                if event.event_type in ("created", "deleted", "moved"):
                    watch.seen(event.event_type, src, os.fsdecode(getattr(event, "dest_path", "") or ""))
                elif src in watch._marked and event.event_type in ("modified", "attrib"):
                    watch._marked[src].set()

        observer = Observer()
        below = [d for d in self.visible if os.path.isdir(d)]
        below = [d for d in below if not any(d != t and is_within(d, t) for t in below)]  # one watch per tree
        for tree in below:
            observer.schedule(Handler(), tree, recursive=True)
        self._trees = below
        flat = {os.path.dirname(p) for p in (*self.masks, *self.ancestors)}
        for directory in sorted(flat):
            if os.path.isdir(directory) and not any(is_within(directory, t) for t in below):
                observer.schedule(Handler(), directory, recursive=False)
        observer.daemon = True
        observer.start()
        self._observer = observer

    def seen(self, kind: str, src: str, dest: str) -> None:
        """One file-system event: a violation, or nothing."""
        if kind == "moved" and dest in self.masks:
            self._fire(dest, f"another file was renamed onto it ({src}); the mask no longer covered it")
        elif src in self.masks:
            what = {"created": "it was created or replaced", "deleted": "it was deleted",
                    "moved": f"it was renamed away (to {dest})"}[kind]
            self._fire(src, f"{what}; the mask no longer covered it")
        elif kind == "moved" and src in self.ancestors:
            self._fire(src, f"it was renamed to {dest}, carrying {self.ancestors[src]} out from under its rule",
                       (dest, src, True))
        elif kind in ("created", "moved"):
            made = dest if kind == "moved" else src  # a name marked held is judged too: the remedy runs after
            refusal = self.refuses(made) if any(is_within(made, t) for t in self.writable) else None
            if refusal is not None and refusal[1]:  # a protected name: it acts on the next session
                self._fire(made, f"it was created while the command ran, where the policy does not let it "
                                 f"write ({refusal[0]})", (made, None, False))
                return
            hidden = self.hides(made)
            if hidden is not None:
                self._fire(made, f"it was created while the command ran and the policy hides it ({hidden}); "
                                 "the sandbox would have shown it")
            elif refusal is not None:
                self._fire(made, f"it was created while the command ran, where the policy does not let it "
                                 f"write ({refusal[0]})")

    def _fire(self, path: str, what: str, remedy: tuple[str, str | None, bool] | None = None) -> None:
        with self._lock:
            if remedy is not None:
                self._remedies.append(remedy)
            if self.violation is not None:
                return
            self.violation = (path, what)
        self.on_violation(path, what)

    def caught_up(self, timeout: float = 10.0) -> bool:
        """After the command: whether every event up to now has been seen. Each recursively watched
        tree's own times are set to what they are (an attribute change, nothing else), and the
        watch waits for that event, which the kernel queues after every earlier one of the tree."""
        marks = {tree: threading.Event() for tree in self._trees}
        self._marked = marks
        for tree in marks:
            try:
                info = os.stat(tree)
                os.utime(tree, ns=(info.st_atime_ns, info.st_mtime_ns))
            except OSError:
                marks[tree].set()  # gone or not ours to touch: nothing more to wait for there
        deadline = time.monotonic() + timeout
        return all(mark.wait(max(0.0, deadline - time.monotonic())) for mark in marks.values())

    def stop(self) -> None:
        if self._observer is not None:
            self._observer.stop()
            self._observer.join(timeout=5)
            self._observer = None

    # -- undoing ---------------------------------------------------------------

    def remedy(self) -> list[str]:
        """After the sandbox is gone: rename aside what was created, rename back what was renamed.
        One line per step, for the person."""
        done: list[str] = []
        with self._lock:
            remedies = list(self._remedies)
        for current, wanted, displace in remedies:
            if not os.path.lexists(current):
                continue
            if wanted is None:  # a protected name made during the run
                aside, error = set_aside(current)
                done.append(f"could not rename {current} aside: {error}" if aside is None
                            else f"renamed {current} to {aside}")
                continue
            if os.path.lexists(wanted) and displace:  # the renamed ancestor's name was taken during the run
                aside, error = set_aside(wanted)
                if aside is None:
                    done.append(f"could not rename {wanted} aside: {error}")
                    continue
                done.append(f"renamed {wanted}, made while the command ran, to {aside}")
            if os.path.lexists(wanted):
                done.append(f"left {current} where it is: {wanted} exists")
                continue
            try:
                os.rename(current, wanted)
            except OSError as err:
                done.append(f"could not rename {current} to {wanted}: {err.strerror or err}")
            else:
                done.append(f"renamed {current} to {wanted}")
        return done


def set_aside(path: str, tries: int = 8) -> tuple[str | None, str]:
    """Rename ``path`` to a new name beside it, ``NAME.rootguard-held-<time>-<random>``, that nothing held
    before: the random part cannot be guessed ahead, and the rename never replaces what is there (an
    existing name is retried under another). The new name, or None and why not."""
    error = "every name tried was taken"
    for _ in range(tries):
        aside = f"{path}{HELD_SUFFIX}{time.strftime('%Y%m%d-%H%M%S')}-{secrets.token_hex(6)}"
        try:
            _rename_noreplace(path, aside)
        except FileExistsError:
            continue
        except OSError as err:
            return None, err.strerror or str(err)
        return aside, ""
    return None, error


def _rename_noreplace(src: str, dest: str) -> None:
    """``rename(2)`` that fails with EEXIST instead of replacing ``dest`` (renameat2 RENAME_NOREPLACE;
    where the kernel or file system lacks it, a check just before, the name being unguessable)."""
    rename = getattr(_libc(), "renameat2", None)
    if rename is not None:
        at_fdcwd, noreplace = -100, 1
        if rename(at_fdcwd, os.fsencode(src), at_fdcwd, os.fsencode(dest), noreplace) == 0:
            return
        err = ctypes.get_errno()
        if err not in (errno.EINVAL, errno.ENOSYS):
            raise OSError(err, os.strerror(err), src)
    if os.path.lexists(dest):
        raise FileExistsError(errno.EEXIST, os.strerror(errno.EEXIST), dest)
    os.rename(src, dest)


def _libc():
    import ctypes.util

    return ctypes.CDLL(ctypes.util.find_library("c") or None, use_errno=True)
