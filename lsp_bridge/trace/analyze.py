"""From traced file events to grants: what was used outside the union, what to grant, what never.

Pure decisions over events plus read-only looks at the host (does the file exist,
is it a directory, does it hold credentials). Groups:

* ``store``: package-manager stores (``node_modules/.pnpm``, yarn's cache);
* ``git``: the admin directory of a linked worktree and the repository's common
  directory, found with Root Guard's worktree model (``core.worktrees.locate``);
* ``config``: single files (``tsconfig.base.json``, ``~/.gitconfig``, ...);
* ``workspace``: a sibling workspace package's sources (``packages/db/src/...``),
  offered as a read-only root with its inventory cost (``trace.proposal``);
* ``system``: ``/usr``, ``/etc``, ... (reported, never proposed).

Proposals are read-only ``[[paths]]`` rules naming files. A directory is proposed
only where a tool reads by name inside it (a store package when ``DENSE`` of its
files were read, git's ``objects``/``refs``/``logs`` and a worktree's admin
directory), and only after it was enumerated: one credential or denied file in it
and the directory is refused (the files read are proposed one by one instead); it
carries ``excludes`` for credential names so a file created there later stays
out. A credential file (``inventory.secrets.credential_reason``) or a path a deny
rule covers is never proposed: it goes to ``refused`` with the reason. Files new
every run (logs, timestamped names, lock and temporary files) go to ``left_out``.
"""

from __future__ import annotations

import fnmatch
import os
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from lsp_bridge.core.paths import is_within
from lsp_bridge.trace.model import Grant, TraceResult, package_line, snippet, stable_id
from lsp_bridge.trace.proposal import SKIPPED_DIRS, check_directory, deny_excludes, left_out_reason, refusal
from lsp_bridge.trace.strace import Event, collect

CONFIG_NAMES = ("tsconfig*.json", ".npmrc", ".prettierrc*", ".eslintrc*", "eslint.config.*", "vitest.workspace.*",
                "turbo.json", ".env*", ".git")
SYSTEM = ("/usr", "/lib", "/lib32", "/lib64", "/libx32", "/bin", "/sbin", "/etc", "/opt", "/var", "/run",
          "/snap", "/nix", "/srv", "/boot")
PSEUDO = ("/proc", "/sys", "/dev")
STORE_MARKERS = ("node_modules/.pnpm", ".yarn/cache", ".pnpm-store")
DENSE = 16
USED = ("read", "exec", "stat")


def config_name(path: str) -> str | None:
    name = os.path.basename(path)
    for pattern in CONFIG_NAMES:
        if fnmatch.fnmatchcase(name, pattern):
            return pattern
    return None


def _inside(path: str, union: Sequence[str]) -> bool:
    return any(is_within(path, u) for u in union)


def _under(path: str, prefixes: Iterable[str]) -> bool:
    return any(path == p or path.startswith(p + "/") for p in prefixes)


def _store_root(path: str) -> str | None:
    for marker in STORE_MARKERS:
        i = path.find("/" + marker + "/")
        if i >= 0:
            return path[: i + len(marker) + 1]
    return None


@dataclass(frozen=True)
class GitDirs:
    """Admin and common directories of every checkout the union belongs to."""

    admin: tuple[tuple[str, str], ...]  # (admin dir, worktree path) of linked worktrees
    common: tuple[str, ...]

    @classmethod
    def of(cls, folders: Sequence[str]) -> GitDirs:
        from lsp_bridge.core.worktrees import locate

        admin: list[tuple[str, str]] = []
        common: list[str] = []
        for folder in folders:
            try:
                location = locate(folder).location
            except OSError:
                location = None
            if location is None:
                continue
            if location.common_dir not in common:
                common.append(location.common_dir)
            if location.git_dir != location.common_dir and location.toplevel:
                admin.append((location.git_dir, location.toplevel))
        return cls(tuple(admin), tuple(common))

    def grantable_dir(self, path: str) -> bool:
        """A git directory granted whole: a worktree's admin directory, the common objects/refs/logs."""
        return any(path == a for a, _ in self.admin) or any(
            path == os.path.join(c, top) for c in self.common for top in ("objects", "refs", "logs"))

    def group_of(self, path: str) -> tuple[str, str] | None:
        """(anchor, description) when ``path`` is git's own state for one of the checkouts."""
        for admin, tree in self.admin:
            if is_within(path, admin):
                return admin, f"admin directory of the linked worktree {tree}"
        for common in self.common:
            if is_within(path, common):
                rel = os.path.relpath(path, common)
                top = rel.split("/", 1)[0]
                if top in ("objects", "refs", "logs") and rel != top:
                    return os.path.join(common, top), f"git {top} of {common}"
                return path, f"git {top} of {common}"
        return None


def analyze(
    events: Iterable[Event],
    *,
    roots: Sequence[str],
    union: Sequence[str],
    command: Sequence[str],
    exit_code: int,
    policy=None,
    git: GitDirs | None = None,
    enforced: bool = False,
    started: float | None = None,
) -> TraceResult:
    result = TraceResult(list(roots), list(union), list(command), exit_code, mode="enforced" if enforced else "one-pass")
    git = git or GitDirs((), ())
    needed: dict[str, tuple[str, str]] = {}  # real path -> (group, anchor)
    looked_for: dict[str, str] = {}  # config-named paths looked for (lexical) -> pattern
    upward = _ancestors(roots)
    git_own = {a for a, _ in git.admin} | set(git.common)
    workspace = _workspace_top(roots)
    for item in collect(events):
        path, ops = item["path"], item["ops"]
        if _under(path, PSEUDO) or not os.path.lexists(path):
            continue  # looked for and absent on the host too: nothing to grant
        name = config_name(path)
        if name and not _inside(path, union) and os.path.dirname(path) in upward and path not in git_own:
            looked_for.setdefault(path, name)
        real = os.path.realpath(path)
        if _inside(real, union):
            continue
        group, anchor = _group(real, git, workspace, union)
        entry = {"path": real, "ops": ops, "group": group}
        if real != path:
            entry["via"] = path
        _merge_outside(result.outside, entry)
        used = USED + (("missing",) if enforced else ())  # enforced: not found in the sandbox, there on the host
        if group == "system" or not any(op in used for op in ops):
            continue
        if os.path.isdir(real) and not (group == "git" and git.grantable_dir(real)):
            continue  # directories are implied by the files below them (git's admin/objects/refs excepted)
        why = left_out_reason(real, started) if group != "git" else None
        if why:
            if not any(o["path"] == real for o in result.left_out):
                result.left_out.append({"path": real, "reason": why})
            continue
        needed[real] = (group, anchor)
    _propose(result, needed, policy, union)
    _quiet_failures(result, looked_for, policy, enforced)
    return result


def _merge_outside(outside: list[dict], entry: dict) -> None:
    for old in outside:
        if old["path"] == entry["path"]:
            old["ops"] = old["ops"] + [o for o in entry["ops"] if o not in old["ops"]]
            return
    outside.append(entry)


def _group(real: str, git: GitDirs, workspace: str | None = None, union: Sequence[str] = ()) -> tuple[str, str]:
    found = git.group_of(real)
    if found is not None:
        return "git", found[0]
    if os.path.basename(real) == ".git" or "/.git/" in real:
        return "git", real  # another repository's git state: file by file, never its whole .git
    store = _store_root(real)
    if store is not None:
        return "store", store
    if _under(real, SYSTEM):
        return "system", "/"
    package = _sibling_package(real, workspace, union) if workspace else None
    if package is not None:
        return "workspace", package
    return "config", os.path.dirname(real)


WORKSPACE_MARKERS = ("pnpm-workspace.yaml", "lerna.json", "turbo.json", "nx.json", ".git")
PACKAGE_MARKERS = ("package.json", "pyproject.toml", "Cargo.toml", "go.mod")


def _workspace_top(roots: Sequence[str]) -> str | None:
    """The monorepo the first root belongs to: the nearest folder above it with a workspace marker."""
    if not roots:
        return None
    d = os.path.dirname(os.path.realpath(roots[0]))
    while True:
        if any(os.path.lexists(os.path.join(d, m)) for m in WORKSPACE_MARKERS):
            return d
        if d == os.path.dirname(d):
            return None
        d = os.path.dirname(d)


def _sibling_package(real: str, top: str, union: Sequence[str]) -> str | None:
    """The workspace package (a folder below ``top`` with a package manifest, holding no root) ``real`` is in."""
    if not is_within(real, top) or real == top or "/node_modules/" in real[len(top):] + "/":
        return None
    d = os.path.dirname(real)
    while d != top and is_within(d, top):
        if any(os.path.isfile(os.path.join(d, m)) for m in PACKAGE_MARKERS):
            return None if any(is_within(u, d) for u in union) else d
        d = os.path.dirname(d)
    return None


def _ancestors(roots: Sequence[str]) -> set[str]:
    """Every directory above a root: where an upward search for configuration looks."""
    found: set[str] = set()
    for root in roots:
        d = os.path.dirname(root)
        while True:
            found.add(d)
            if d == os.path.dirname(d):
                break
            d = os.path.dirname(d)
    return found


def _propose(result: TraceResult, needed: dict[str, tuple[str, str]], policy, union: Sequence[str]) -> None:
    kept: dict[str, tuple[str, str]] = {}
    for path, (group, anchor) in needed.items():
        why = refusal(path, policy)
        if why:
            result.refused.append({"path": path, "reason": why})
        else:
            kept[path] = (group, anchor)
    proposal = _Proposal(result, policy, kept)
    proposal.add_git()
    proposal.add_packages()
    proposal.add_files(union)
    result.grants = proposal.grants()


class _Proposal:
    """The grants chosen for the paths a trace needed (each already checked by ``refusal``), by group."""

    def __init__(self, result: TraceResult, policy, kept: dict[str, tuple[str, str]]) -> None:
        self.result, self.policy, self.kept = result, policy, kept
        self.chosen: dict[str, Grant] = {}

    def whole(self, directory: str, group: str, files: int, *, content: bool) -> Grant | None:
        """``directory`` as one grant, enumerated: its credential and denied files excluded; None when it
        cannot be checked (the files read are then proposed one by one)."""
        check = check_directory(directory, self.policy, content=content)
        if check.problem:
            self.result.refused.append({"path": directory, "reason": f"directory not proposed whole: {check.problem}; "
                                                                     "the files read in it are proposed one by one"})
            return None
        denies = deny_excludes(self.policy, directory)
        grant = Grant(_id(group, directory), directory, "directory", group, files,
                      excludes=tuple(dict.fromkeys((*check.excludes, *denies))), denies=denies)
        if check.credentials or check.denied:
            grant.note = f"{len(check.credentials) + len(check.denied)} credential or denied file(s) excluded"
        return grant

    def add_git(self) -> None:
        """The admin directory and objects/refs/logs as directories (git's own layout), other git files singly."""
        kept, chosen = self.kept, self.chosen
        for path, (group, anchor) in kept.items():
            if group != "git":
                continue
            count = sum(1 for p, (g, a) in kept.items() if g == "git" and a == anchor and not os.path.isdir(p))
            if os.path.isdir(anchor):
                grant = chosen.get(anchor) or self.whole(anchor, "git", count, content=False)
                if grant is None:
                    if not os.path.isdir(path):
                        chosen.setdefault(path, Grant(_id("git", path), path, "file", "git"))
                    continue
                chosen[anchor] = grant
            else:
                chosen.setdefault(anchor, Grant(_id("git", anchor), anchor, "file", "git", count))

    def add_packages(self) -> None:
        """A sibling workspace package: offered whole, read-only, with its cost (``result.packages``)."""
        packages: dict[str, list[str]] = {}
        for path, (group, anchor) in self.kept.items():
            if group == "workspace":
                packages.setdefault(anchor, []).append(path)
        for package, files in packages.items():
            check = check_directory(package, self.policy, content=True, skip=SKIPPED_DIRS)
            entry = {"path": package, "name": _package_name(package), "files": check.files, "bytes": check.bytes,
                     "credentials": check.credentials, "denied": check.denied, "files_read": len(files)}
            if check.problem:
                entry |= {"status": "refused", "reason": check.problem}
                for path in files:
                    self.chosen.setdefault(path, Grant(_id("config", path), path, "file", "workspace"))
            else:
                entry["status"] = "offered"
                denies = deny_excludes(self.policy, package)
                grant = Grant(_id("workspace", package), package, "directory", "workspace", len(files),
                              excludes=tuple(dict.fromkeys((*check.excludes, *denies, *SKIPPED_DIRS))), denies=denies)
                grant.note = (f"the whole package: {check.files} files, {len(check.credentials)} credential file(s) "
                              "excluded")
                self.chosen[package] = grant
            self.result.packages.append(entry)

    def add_files(self, union: Sequence[str]) -> None:
        """Store and config: files singly; a store package (or the store) when DENSE files were read in it."""
        kept, chosen = self.kept, self.chosen
        for group in ("store", "config"):
            files = [p for p, (g, _) in kept.items() if g == group and os.path.isfile(p)]
            for path in files:
                anchor = kept[path][1]
                dense = _dense_dir(path, anchor, files, union) if group == "store" else None
                grant = None
                if dense and dense not in chosen:
                    count = sum(1 for f in files if is_within(f, dense))
                    grant = self.whole(dense, group, count, content=True)
                    if grant is not None:
                        grant.mount = True
                        chosen[dense] = grant
                if grant is None and dense in chosen:
                    continue
                if any(g.kind == "directory" and is_within(path, g.path) for g in chosen.values()):
                    continue
                chosen.setdefault(path, Grant(_id(group, path), path, "file", group))

    def grants(self) -> list[Grant]:
        """The chosen grants, those under a directory grant left out (redundant), in a stable order."""
        dirs = [g for g in self.chosen.values() if g.kind == "directory"]
        return sorted(
            (g for g in self.chosen.values() if not any(d is not g and is_within(g.path, d.path) for d in dirs)),
            key=lambda g: ({"store": 0, "config": 1, "workspace": 2, "git": 3}.get(g.group, 4), g.path))


def _package_name(directory: str) -> str:
    import json

    try:
        with open(os.path.join(directory, "package.json"), encoding="utf-8") as fh:
            name = json.load(fh).get("name")
        return name if isinstance(name, str) else os.path.basename(directory)
    except (OSError, ValueError, AttributeError):
        return os.path.basename(directory)


def _dense_dir(path: str, top: str, files: Sequence[str], union: Sequence[str]) -> str | None:
    """The highest directory from ``top`` down to the file's parent in which DENSE files were read.

    Never a directory that holds (or is) a union entry: that would hand over the roots' surroundings."""
    parent = os.path.dirname(path)
    chain = []
    d = parent
    while True:
        chain.append(d)
        if d == top or d == "/" or not is_within(d, top):
            break
        d = os.path.dirname(d)
    for d in reversed(chain):  # highest first
        if any(is_within(u, d) for u in union):
            continue
        if is_within(d, top) and sum(1 for f in files if is_within(f, d)) >= DENSE:
            return d
    return None


def _id(group: str, path: str) -> str:
    return stable_id(group, path)


def _quiet_failures(result: TraceResult, looked_for: dict[str, str], policy, enforced: bool) -> None:
    """Configuration names looked for outside the union that exist on the host but are not visible."""
    proposed = result.grants
    refused = {r["path"]: r["reason"] for r in result.refused}
    for path, name in looked_for.items():
        if not os.path.lexists(path):
            continue
        real = os.path.realpath(path)
        visible = False
        if policy is not None:
            try:
                visible = policy.decide("read", path).decision == "allow"
            except ValueError:
                visible = False
        if visible:
            continue
        entry: dict = {"path": path, "name": name}
        if real in refused or path in refused:
            entry["status"] = "refused"
            entry["reason"] = refused.get(real) or refused.get(path)
        elif any(g.path == real or (g.kind == "directory" and is_within(real, g.path)) for g in proposed):
            entry["status"] = "proposed"
        else:
            why = refusal(real, policy) if os.path.isfile(real) else None
            entry["status"] = "refused" if why else "not proposed"
            if why:
                entry["reason"] = why
        if not any(q["path"] == path for q in result.quiet_failures):
            result.quiet_failures.append(entry)


# ---------------------------------------------------------------------------
# presentation


def format_trace(result: TraceResult) -> str:
    lines = [f"rootguard trace ({result.mode}{f', {result.rounds} rounds' if result.rounds > 1 else ''}): "
             f"{' '.join(result.command)} exited {result.exit_code}"]
    groups = {"store": "Package store", "config": "Single files", "workspace": "First-party packages",
              "git": "Git internals", "system": "System"}
    for key, title in groups.items():
        items = [o for o in result.outside if o["group"] == key]
        if not items:
            continue
        if key == "system":
            lines.append(f"{title}: {len(items)} paths (readable in the sandbox; not proposed)")
            continue
        lines.append(f"{title} (outside the roots):")
        lines += [f"  {o['path']}  ({', '.join(o['ops'])})" for o in items]
    if result.refused:
        lines.append("Needed but refused (never proposed):")
        lines += [f"  {r['path']}: {r['reason']}" for r in result.refused]
    if result.left_out:
        lines.append("Left out (new every run, never proposed):")
        lines += [f"  {r['path']}: {r['reason']}" for r in result.left_out]
    if result.packages:
        lines.append("First-party packages (a reviewer's choice: the whole package, read-only):")
        lines += ["  " + package_line(p) for p in result.packages]
    if result.quiet_failures:
        lines.append("Quiet failures (looked for above the roots, exist on the host, not visible to the agent):")
        for q in result.quiet_failures:
            status = q.get("status", "")
            extra = f" — {q['reason']}" if q.get("reason") else ""
            lines.append(f"  {q['path']}  [{q['name']}] {status}{extra}")
    lines.append("")
    lines.append("Proposed grants:")
    lines.append(snippet(result).rstrip("\n"))
    return "\n".join(lines)
