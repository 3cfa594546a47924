"""How git finds (or is told it may not use) the repository inside ``rootguard run``.

The git directory itself is mounted like any union entry (``core/git_access.py`` makes it
one, decided by the ``git-read`` / ``git-write`` / ``git-code`` rules); this module only
sets the environment of the command, for the checkout the command starts in:

* ``git = "read"`` or ``"write"``, the checkout's ``.git`` directory granted: git's own
  discovery walks up from a narrow root to ``<top>/.git``, across the sandbox's mount
  points (``GIT_DISCOVERY_ACROSS_FILESYSTEM=1``); a linked worktree, whose ``.git`` file
  sits outside the grant, is named with ``GIT_DIR`` and ``GIT_WORK_TREE``;
* ``git = "none"`` and the git directory not visible (a narrow root): ``GIT_DIR`` names a
  path that cannot exist (``/`` is read-only inside) whose text is the one-line reason and
  how to grant git, so every git command fails with
  ``fatal: not a git repository: '/rootguard: git access is not granted ...'`` (unless
  another root holds its repository's git directory, which ``GIT_DIR`` would hide: then git
  only says it finds no repository);
* ``read`` or ``write`` from a narrow root: the ``git-wrapper/git`` script first on ``PATH``
  (its private index: docs/confinement.md, "git");
* the git directory already inside a root (the repository's top level is a root): nothing
  is set; git finds it, read-only unless ``git = "write"``.

Nothing is written on the host.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Callable, Sequence

from lsp_bridge.core.git_access import GitGrant, not_granted_line, read_only_line
from lsp_bridge.core.paths import is_within, relative_to

WRAPPER_SOURCE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "git-wrapper")
WRAPPER_TARGET = "/run/rootguard/git-wrapper"


def git_env(grants: tuple[GitGrant, ...], chdir: str, visible: Callable[[str], bool], trees: Sequence[str],
            user_file: str | None, path: str | None = None) -> tuple[tuple[tuple[str, str], ...], bool]:
    """The variables that set up git for a command starting in ``chdir``, and whether the wrapper
    (``git-wrapper/git``, mounted at ``WRAPPER_TARGET``, first on ``PATH``) is needed. ``visible``:
    whether a host path is mounted inside the sandbox; ``trees``: the host trees mounted; ``path``:
    the ``PATH`` the command inherits."""
    grant = _checkout_of(grants, chdir)
    if grant is None:
        return (), False
    if grant.mode == "none" and not visible(grant.git_dir):
        if any(visible(g.git_dir) for g in grants):  # GIT_DIR would also break the repository a root holds
            return (), False
        return (("GIT_DIR", not_granted_line(grant.mode, user_file)),), False
    if not visible(grant.git_dir):
        return (), False  # the engine hid it (a deny rule of the person's own): git says it finds nothing
    assert grant.toplevel is not None  # _checkout_of picks checkouts only
    top = grant.toplevel
    env: list[tuple[str, str]] = []
    if grant.mode != "none":  # with none, the git directory is visible because a root holds it: git finds it
        if grant.native:
            env.append(("GIT_DISCOVERY_ACROSS_FILESYSTEM", "1"))
        else:
            env += [("GIT_DIR", grant.git_dir), ("GIT_WORK_TREE", top)]
    inside = [t for t in trees if is_within(t, top) and not is_within(t, grant.common_dir)
              and not is_within(t, grant.git_dir)]
    narrow = bool(inside) and top not in inside  # the rest of the checkout is absent: the private index
    real = shutil.which("git", path=path)
    usable = os.access(os.path.join(WRAPPER_SOURCE, "git"), os.X_OK)  # an install that lost the mode: plain git
    if not (narrow or grant.mode != "write") or real is None or not visible(os.path.realpath(real)) or not usable:
        return tuple(env), False  # the whole checkout is visible and writable: git needs no help
    env += [("ROOTGUARD_GIT", grant.mode), ("ROOTGUARD_GIT_TOP", top), ("ROOTGUARD_GIT_REAL", os.path.realpath(real)),
            ("ROOTGUARD_GIT_INDEX", os.path.join(grant.git_dir, "index")),
            ("PATH", WRAPPER_TARGET + os.pathsep + (path or os.defpath))]
    if narrow:
        env.append(("ROOTGUARD_GIT_VISIBLE", ":".join(relative_to(t, top) for t in inside)))
    if grant.mode != "write":
        env.append(("ROOTGUARD_GIT_READONLY", read_only_line(grant.mode, user_file)))
    return tuple(env), True


def _checkout_of(grants: tuple[GitGrant, ...], chdir: str) -> GitGrant | None:
    """The checkout containing ``chdir`` (the deepest), if any."""
    inside = [g for g in grants if g.toplevel is not None and is_within(chdir, g.toplevel)]
    return max(inside, key=lambda g: len(g.toplevel or "")) if inside else None
