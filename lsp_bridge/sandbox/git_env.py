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
  ``fatal: not a git repository: '/rootguard: git access is not granted ...'``;
* the git directory already inside a root (the repository's top level is a root): nothing
  is set; git finds it, read-only unless ``git = "write"``.

Nothing is written on the host.
"""

from __future__ import annotations

from collections.abc import Callable

from lsp_bridge.core.git_access import GitGrant, not_granted_line
from lsp_bridge.core.paths import is_within


def git_env(grants: tuple[GitGrant, ...], chdir: str, visible: Callable[[str], bool],
            user_file: str | None) -> tuple[tuple[str, str], ...]:
    """The variables that set up git for a command starting in ``chdir`` (``visible``: whether a host
    path is mounted inside the sandbox)."""
    grant = _checkout_of(grants, chdir)
    if grant is None:
        return ()
    if grant.mode == "none":
        if visible(grant.git_dir):
            return ()
        return (("GIT_DIR", not_granted_line(grant.mode, user_file)),)
    if not visible(grant.git_dir):
        return ()  # the engine hid it (a deny rule of the person's own): git says it finds nothing
    if grant.native:
        return (("GIT_DISCOVERY_ACROSS_FILESYSTEM", "1"),)
    assert grant.toplevel is not None  # native is False only for a linked worktree here
    return (("GIT_DIR", grant.git_dir), ("GIT_WORK_TREE", grant.toplevel))


def _checkout_of(grants: tuple[GitGrant, ...], chdir: str) -> GitGrant | None:
    """The checkout containing ``chdir`` (the deepest), if any."""
    inside = [g for g in grants if g.toplevel is not None and is_within(chdir, g.toplevel)]
    return max(inside, key=lambda g: len(g.toplevel or "")) if inside else None
