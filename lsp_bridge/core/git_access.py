"""``[workspace] git``: the repository's git directory as built-in rules and union entries.

``git = "none"`` (the default) grants nothing: the git directory is visible only when a
root contains it (read-only there, like every protected target), and from a narrow
root git finds no repository. ``read`` and ``write`` grant the git directory of each
root's repository (the *common* directory: objects, refs, and every checkout's admin
directory below ``worktrees/``), and that grant is part of the boundary:

* the directory becomes a union entry of its own (origin ``git``) when no root already
  contains it, so ``rootguard roots``, the widening warning and the inventory count it
  (its size, its commits, the deleted files its history still holds) exactly as when the
  repository root is added;
* the engine decides it with rules of source ``git`` (``GIT_RULE_IDS``), ranked like any
  rule and part of the floor a project file cannot loosen:

  - ``git-read``: read allowed; write and delete denied (``read``);
  - ``git-write``: read, write and delete allowed (``write``), which also lifts the
    built-in protection of paths below ``.git`` for this one directory (``policy``),
    except the directory itself, which cannot be deleted or renamed;
  - ``git-code``: what git runs or obeys by itself stays read-only under ``write``
    (``CODE_PATHS``: ``config``, ``hooks/``, ``info/``, the submodules' and the linked
    worktrees' own configuration, ``commondir``/``gitdir`` pointers, object alternates,
    legacy remotes, and the rebase and sequencer state whose to-do lists can ``exec``).

Nothing here runs git: the locations come from ``worktrees.locate`` (reading ``.git``).
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from lsp_bridge.core.settings import PathRule
from lsp_bridge.core.union import Candidate

if TYPE_CHECKING:
    from lsp_bridge.core.worktrees import GitLocation

GIT_RULE_IDS = ("git-read", "git-write", "git-code")
# Below the git directory: what git executes, or obeys to find code or other repositories.
CODE_PATHS = (
    "config", "config.worktree", "hooks/**", "info/**", "commondir", "gitdir",
    "worktrees/*/config.worktree", "worktrees/*/commondir", "worktrees/*/gitdir",
    "modules/**/config", "modules/**/config.worktree", "modules/**/hooks/**", "modules/**/info/**",
    "modules/**/commondir", "modules/**/gitdir", "modules/**/objects/info/alternates",
    "objects/info/alternates", "objects/info/http-alternates", "remotes/**", "branches/**",
    "rebase-merge/**", "rebase-apply/**", "sequencer/**", "worktrees/*/rebase-merge/**",
    "worktrees/*/rebase-apply/**", "worktrees/*/sequencer/**",
)
HOW_TO_GRANT = 'set [workspace] git = "read" (or "write") in the user file'


@dataclass(frozen=True)
class GitGrant:
    """One checkout whose repository's git directory the session grants."""

    mode: str  # "none" | "read" | "write"
    common_dir: str  # canonical: the directory the rules sit on (and the union entry)
    git_dir: str  # this checkout's admin directory (the common dir, or <common>/worktrees/<name>)
    toplevel: str | None  # the checkout's top level (None: a bare repository)

    @property
    def native(self) -> bool:
        """Whether git finds the repository by itself from inside the checkout: ``<toplevel>/.git``
        is the git directory (a linked worktree's ``.git`` is a file outside the grant)."""
        return self.toplevel is not None and self.git_dir == os.path.join(self.toplevel, ".git")


def grants(mode: str, locations: Iterable[GitLocation]) -> tuple[GitGrant, ...]:
    """The roots' checkouts and their git directories under ``git = mode`` (``none`` included: the
    sandbox then tells git why it finds no repository); ``candidates`` and ``rules`` grant only
    ``read`` and ``write``."""
    found: dict[str, GitGrant] = {}
    for location in locations:
        common = os.path.realpath(location.common_dir)
        git_dir = os.path.realpath(location.git_dir)
        key = git_dir
        if key not in found and os.path.isdir(common):
            found[key] = GitGrant(mode, common, git_dir, location.toplevel)
    return tuple(found.values())


def candidates(granted: Iterable[GitGrant], user_file: str | None) -> list[Candidate]:
    """Each granted git directory as a proposed root (the union keeps it only when no root contains it)."""
    where = f"in {user_file}" if user_file else "in the configuration"
    seen: dict[str, Candidate] = {}
    for grant in granted:
        if grant.mode in ("read", "write") and grant.common_dir not in seen:
            reason = f'[workspace] git = "{grant.mode}" {where}: the git directory of {grant.toplevel or grant.common_dir}'
            seen[grant.common_dir] = Candidate(grant.common_dir, "git", reason)
    return list(seen.values())


def rules(granted: Iterable[GitGrant], file: str | None = None) -> tuple[PathRule, ...]:
    """The built-in rules (source ``git``) that decide each granted git directory (``file``: the
    configuration file that set ``[workspace] git``, shown in every decision's reason)."""
    made: list[PathRule] = []
    anchors: list[str] = []
    for grant in granted:
        if grant.mode not in ("read", "write") or grant.common_dir in anchors:
            continue
        anchors.append(grant.common_dir)
        path = grant.common_dir
        if grant.mode == "read":
            made.append(PathRule("git-read", path, path, read="allow", write="deny", delete="deny", source="git",
                                 file=file))
            continue
        made.append(PathRule("git-write", path, path, read="allow", write="allow", delete="allow", source="git",
                             file=file))
        made.append(PathRule("git-code", path, path, read="allow", write="deny", delete="deny",
                             includes=CODE_PATHS, source="git", file=file))
    return tuple(made)


def lifts_protection(rule: PathRule | None, anchor: str, key: str, need: str) -> bool:
    """Whether the winning ``rule`` (at folded ``anchor``) lifts the ``.git`` protection of folded ``key``:
    a ``git-write`` rule does below its git directory, and for writing (not deleting or renaming) the
    directory itself."""
    return (rule is not None and rule.source == "git" and rule.id == "git-write"
            and (key != anchor or need == "write"))


def not_granted_line(mode: str, user_file: str | None) -> str:
    """What git says inside ``rootguard run`` when the session grants no git access (one line)."""
    where = user_file or "the user file"
    return (f'/rootguard: git access is not granted ([workspace] git = "{mode}"); '
            f'to use git here set [workspace] git = "read" or "write" in {where}')


def read_only_line(mode: str, user_file: str | None) -> str:
    """What ``rootguard run`` adds when a git command that writes fails under ``git = mode`` (``none`` with the
    repository's top level as a root, or ``read``): the git directory is read-only, and how to commit (one line)."""
    where = user_file or "the user file"
    return (f'rootguard: the git directory is read-only in this sandbox ([workspace] git = "{mode}"); '
            f'to commit from it set [workspace] git = "write" in {where}')
