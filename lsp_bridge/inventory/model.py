"""The widening report: what a union exposes beyond another, as data and as lines a person reads.

Built by ``scan.InventoryCache``; shown by the CLI, the demo and the language
server. Every list goes through ``text.shorten`` and every path through
``text.show_path``, so they all read the same way.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass, field

from lsp_bridge.core.paths import is_within
from lsp_bridge.inventory.text import LIST_LIMIT, one_line, plural, shorten, show_path

# Store kinds a repository has one of; every other store is a plain node_modules folder.
_REPOSITORY_STORES = (".pnpm", ".pnpm-store", "cache", "unplugged")


@dataclass(frozen=True)
class CredentialFile:
    """A credential-bearing file and how many credentials it holds."""

    path: str
    count: int

    def to_json(self) -> dict:
        return {"path": self.path, "count": self.count}


@dataclass(frozen=True)
class Renamed:
    """A credential-named file moved in history: ``source`` is gone from HEAD."""

    source: str
    dest: str
    dest_in_tree: bool  # the content is still in the tree under ``dest``
    dest_is_credential_name: bool  # False: renamed away from a credential name

    def to_json(self) -> dict:
        return {"from": self.source, "to": self.dest, "in_tree": self.dest_in_tree,
                "credential_name": self.dest_is_credential_name}


@dataclass(frozen=True)
class GitDir:
    """A repository's (common) git directory, reached from ``via`` checkouts."""

    path: str
    bytes: int
    commits: int | None  # None when git could not tell
    deleted_sensitive: tuple[str, ...] | None = ()  # None when git could not tell
    via: tuple[str, ...] = ()
    renamed_sensitive: tuple[Renamed, ...] = ()

    def to_json(self) -> dict:
        return {"path": self.path, "bytes": self.bytes, "size": size_text(self.bytes), "commits": self.commits,
                "deleted_sensitive": None if self.deleted_sensitive is None
                else list(self.deleted_sensitive), "via": list(self.via),
                "renamed_sensitive": [r.to_json() for r in self.renamed_sensitive]}


@dataclass(frozen=True)
class CiIdentity:
    """A cloud identity a CI file names (not a secret)."""

    cloud: str  # "aws" | "azure" | "gcp"
    kind: str  # "role", "client-id", "workload identity provider", "service account"
    value: str

    def to_json(self) -> dict:
        return {"cloud": self.cloud, "kind": self.kind, "value": self.value}

    def describe(self) -> str:
        return f"{_CLOUD_NAMES[self.cloud]} {self.kind} {one_line(self.value)}"


_CLOUD_NAMES = {"aws": "AWS", "azure": "Azure", "gcp": "GCP"}


@dataclass(frozen=True)
class CiRoles:
    """The cloud identities one CI file names."""

    path: str
    identities: tuple[CiIdentity, ...]
    capped: bool = False  # more identities than were kept

    @property
    def roles(self) -> tuple[str, ...]:
        return tuple(i.value for i in self.identities)

    def to_json(self) -> dict:
        return {"path": self.path, "roles": list(self.roles),
                "identities": [i.to_json() for i in self.identities], "capped": self.capped}


@dataclass(frozen=True)
class Store:
    """A package store and its file count (third-party, not counted with the files)."""

    path: str
    files: int

    def to_json(self) -> dict:
        return {"path": self.path, "files": self.files}

    @property
    def repository_store(self) -> bool:
        """A package manager's store (pnpm's ``.pnpm``, yarn's cache), not a plain node_modules."""
        return os.path.basename(self.path) in _REPOSITORY_STORES


@dataclass(frozen=True)
class InventoryReport:
    """What the after-union exposes that the before-union did not."""

    before: tuple[str, ...]
    after: tuple[str, ...]
    added_roots: tuple[str, ...]
    widens: bool
    files_before: int
    files_after: int
    credentials: tuple[CredentialFile, ...] = ()
    git: tuple[GitDir, ...] = ()
    siblings: tuple[str, ...] = ()
    ci_roles: tuple[CiRoles, ...] = ()
    stores: tuple[Store, ...] = ()
    errors: tuple[str, ...] = field(default=())
    notes: tuple[str, ...] = field(default=())  # why the union did not follow the folders given
    added_files: tuple[tuple[str, int], ...] = field(default=())  # (added root, files it adds)

    @property
    def ratio(self) -> float:
        return round(self.files_after / max(self.files_before, 1), 1)

    def to_json(self) -> dict:
        return {
            "widens": self.widens,
            "files_before": self.files_before,
            "files_after": self.files_after,
            "ratio": self.ratio,
            "credentials": [c.to_json() for c in self.credentials],
            "git": [g.to_json() for g in self.git],
            "siblings": list(self.siblings),
            "ci_roles": [r.to_json() for r in self.ci_roles],
            "stores": [s.to_json() for s in self.stores],
            "added_roots": list(self.added_roots),
            "before": list(self.before),
            "after": list(self.after),
            "errors": list(self.errors),
            "notes": list(self.notes),
            "added_files": [{"path": p, "files": n} for p, n in self.added_files],
        }

    def part(self, roots: Sequence[str]) -> str:
        """What the added ``roots`` (some of ``added_roots``) hand over, without a ratio:
        ``+3,509 files, 3 secrets files, .git (43 commits)``. Everything inside those roots is theirs."""
        def mine(path: str) -> bool:
            return any(is_within(path, r) for r in roots)

        files = sum(n for p, n in self.added_files if p in roots)
        parts = [f"+{plural(files, 'file')}"]
        credentials = [c for c in self.credentials if mine(c.path)]
        if credentials:
            parts.append(plural(len(credentials), "secrets file"))
        for git in self.git:
            if mine(git.path) or any(mine(v) for v in git.via):
                parts.append(_git_part(git))
        return ", ".join(parts)

    def summary_line(self) -> str:
        """One line for a status bar, e.g. ``×180: +60,660 files, 3 secrets files, .git (53 commits)``."""
        if not self.widens:
            return "no widening"
        parts = [f"+{self.files_after - self.files_before:,} files"]
        if self.credentials:
            parts.append(plural(len(self.credentials), "secrets file"))
        parts += [_git_part(git) for git in self.git]
        return f"{self._growth()}: " + ", ".join(parts)

    def _growth(self) -> str:
        if self.files_before == 0:
            return "from no files"
        return f"×{_ratio_text(self.ratio)}"

    def describe(self) -> list[str]:
        """Human lines for the widening warning (names and counts only)."""
        if not self.widens:
            why = "; ".join(self.notes) if self.notes else "every new folder is already inside it"
            return [f"The union does not widen: {why}."]
        show = self._display
        added = ", ".join(show_path(r) for r in self.added_roots)
        if self.files_after == self.files_before:
            head = (f"The union widens with {added} ({plural(len(self.added_roots), 'folder')}) "
                    f"but no files ({plural(self.files_after, 'file')} before and after).")
        elif self.files_before == 0:
            head = f"The union widens with {added}: from no files to {plural(self.files_after, 'file')}."
        else:
            head = (f"The union widens with {added}: {self.files_before:,} → "
                    f"{plural(self.files_after, 'file')} (×{_ratio_text(self.ratio)}).")
        lines = [head, *self.notes]
        if self.credentials:
            total = sum(c.count for c in self.credentials)
            items = shorten(f"{show(c.path)} ({c.count})" for c in self.credentials)
            lines.append(f"{plural(total, 'credential')} in {plural(len(self.credentials), 'file')}: {items}")
        for git in self.git[:LIST_LIMIT]:
            commits = "unknown number of commits" if git.commits is None else plural(git.commits, "commit")
            line = f"Git history {show(git.path)}: {size_text(git.bytes)}, {commits}"
            if git.deleted_sensitive is None:
                line += "; could not list the files deleted from history"
            elif git.deleted_sensitive:
                line += "; deleted but still in history: " + shorten(git.deleted_sensitive)
            away = [r for r in git.renamed_sensitive if not r.dest_is_credential_name]
            kept = [r for r in git.renamed_sensitive if r.dest_is_credential_name]
            if away:
                line += "; renamed away from a credential name (old content in history): " + shorten(
                    f"{r.source} → {r.dest}" for r in away)
            if kept:
                line += "; renamed (content kept under the new name): " + shorten(
                    f"{r.source} → {r.dest}" for r in kept)
            lines.append(line)
        if len(self.git) > LIST_LIMIT:
            rest = self.git[LIST_LIMIT:]
            total = sum(g.commits or 0 for g in rest)
            lines.append(f"{plural(len(rest), 'other git history', 'other git histories')}: "
                         f"{size_text(sum(g.bytes for g in rest))}, {plural(total, 'commit')} in all: "
                         + shorten((show(g.path) for g in rest), 3))
        if self.siblings:
            lines.append(f"{plural(len(self.siblings), 'first-party package')} "
                         f"now readable: {shorten(show(s) for s in self.siblings)}")
        for ci in self.ci_roles[:LIST_LIMIT]:
            lines.append(f"CI workflow {show(ci.path)} names cloud "
                         f"{'identities' if len(ci.identities) > 1 else 'identity'}: "
                         + shorten((i.describe() for i in ci.identities),
                                   total=len(ci.identities) + (1 if ci.capped else 0))
                         + (" (capped: more not read)" if ci.capped else ""))
        if len(self.ci_roles) > LIST_LIMIT:
            lines.append(f"{plural(len(self.ci_roles) - LIST_LIMIT, 'other CI workflow')} naming cloud identities: "
                         + shorten((show(ci.path) for ci in self.ci_roles[LIST_LIMIT:]), 3))
        lines += self._store_lines(show)
        if self.errors:
            lines.append(f"Not inventoried ({plural(len(self.errors), 'place')}): {shorten(self.errors)}")
        return lines

    def _store_lines(self, show) -> list[str]:
        own = [s for s in self.stores if s.repository_store]
        other = [s for s in self.stores if not s.repository_store]
        lines = [f"Package store {show(s.path)}: {plural(s.files, 'file')} (third-party, not counted above)"
                 for s in own[:3]]
        if len(own) > 3:
            rest = own[3:]
            lines.append(f"{plural(len(rest), 'other package store')} "
                         f"({plural(sum(s.files for s in rest), 'file')}, not counted above)")
        if other:
            lines.append(f"{plural(len(other), 'other node_modules folder')} "
                         f"({plural(sum(s.files for s in other), 'file')}, not counted above): "
                         + shorten((show(s.path) for s in other), 3))
        return lines

    def _display(self, path: str) -> str:
        """``path`` as <root label>/<relative>, relative to the after-root holding it.

        The label is the root's name, with as many parent folders as it takes to tell
        roots of the same name apart (``worktrees = "include"`` adds ``packages/a`` of
        every checkout: ``shop/packages/a`` and ``shop-hotfix/packages/a``).
        """
        labels = _root_labels(self.after)
        for root in sorted(self.after, key=len, reverse=True):
            if is_within(path, root):
                rel = os.path.relpath(path, root).replace(os.sep, "/")
                name = labels[root]
                return show_path(name if rel == "." else f"{name}/{rel}")
        return show_path(path)


def _root_labels(roots: tuple[str, ...]) -> dict[str, str]:
    """Each root's shortest trailing run of path components that no other root ends with."""
    parts = {root: [p for p in root.split(os.sep) if p] for root in roots}
    labels: dict[str, str] = {}
    for root, mine in parts.items():
        labels[root] = root  # the whole path when no shorter tail is unique
        for size in range(1, len(mine) + 1):
            if not any(other != root and theirs[-size:] == mine[-size:] for other, theirs in parts.items()):
                labels[root] = "/".join(mine[-size:])
                break
    return labels


def _git_part(git: GitDir) -> str:
    """``.git (12 commits)``, as the one-line summaries say it."""
    return ".git (? commits)" if git.commits is None else f".git ({plural(git.commits, 'commit')})"


def _ratio_text(ratio: float) -> str:
    return f"{ratio:,.0f}" if ratio >= 10 else f"{ratio:g}"


def size_text(count: int) -> str:
    """A size in decimal units (1 MB = 1,000,000 bytes), as every view shows it: the webview takes
    this text from the report (``InventoryReport.to_json``'s ``size``), never its own rounding."""
    size = float(count)
    for unit in ("B", "KB", "MB", "GB"):
        if size < 1000 or unit == "GB":
            return f"{size:.0f} {unit}" if unit == "B" else f"{size:.1f} {unit}"
        size /= 1000
    return f"{count} B"
