"""The private areas of the sandbox's file system: its home, and the read-only skeleton in ``/tmp``.

* **Home** (``sandbox/environment.py`` says what goes in it): a writable tmpfs at the
  caller's ``$HOME`` when the home folder is not in the union (then it is the union
  entry, as the policy says), with the harmless dotfiles bound read-only.
* **Skeleton**: a root under ``/tmp`` sits in the private ``/tmp``; the directories
  between ``/tmp`` and it are made a read-only tmpfs holding only the mount points,
  so a write above the root fails (``EROFS``) as it does anywhere else, instead of
  landing in the private ``/tmp`` and vanishing.
"""

from __future__ import annotations

import os

from lsp_bridge.core.paths import canonical, is_within
from lsp_bridge.sandbox.environment import home_dotfiles

TMP = "/tmp"


def private_areas(builder) -> str:
    """Add the home and skeleton mounts to ``builder.system`` (a ``profile._Builder``); HOME inside."""
    _skeletons(builder)
    return _home(builder)


def _skeletons(builder) -> None:
    from lsp_bridge.sandbox.profile_model import MountOp

    firsts: dict[str, None] = {}
    for op in builder.ops:
        if op.target != TMP and is_within(op.target, TMP):
            first = os.path.join(TMP, os.path.relpath(op.target, TMP).split(os.sep)[0])
            if first != op.target and builder.state_at(first) is None:  # not inside a tree (/tmp itself a root)
                firsts[first] = None
    for first in firsts:
        builder.system.append(MountOp("skeleton", first, reason="system: read-only skeleton above a root "
                                                                      "in the private /tmp"))


def _home(builder) -> str:
    from lsp_bridge.sandbox.profile_model import MountOp

    raw = builder.session.env.get("HOME", "")
    if not raw or not os.path.isabs(raw) or "\x00" in raw:
        return TMP
    try:
        home = canonical(raw)
    except ValueError:
        return TMP
    if home in ("/", TMP) or any(is_within(d, home) for d in ("/usr", "/etc", "/proc", "/dev")):
        return TMP
    if builder.state_at(home) is not None:
        return home  # in the union (or masked by a rule): the policy decides it like any tree
    size = builder.settings.tmp_size or None
    builder.system.append(MountOp("tmpfs", home, reason="system: a private, writable home, gone when the "
                                                              "command ends", size=size))

    def readable(path: str) -> str | None:
        if builder.state_at(path) is not None:
            return "mounted by its rule"
        read = builder.decide("read", path)
        if read.decision != "allow" and read.rule is not None:
            return f"{read.decision} ({read.reason})"
        return None

    mounted, notes = home_dotfiles(home, readable)
    for path in mounted:
        builder.system.append(MountOp("ro-bind", path, path,
                                            reason="system: a harmless dotfile in the private home, read-only"))
    builder.notes.extend(notes)
    return home
