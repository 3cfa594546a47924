"""A repository's package-manager layout: where its paths appear in a container, its links, its workspace.

``Layout`` places a repository under ``/workspace``; ``scan_links`` and ``layout_links``
find the symbolic links the package manager made (a bounded walk, or only the
``node_modules`` of the root and its workspace packages); ``workspace_packages`` reads
``pnpm-workspace.yaml`` (PyYAML's ``safe_load``) or the ``workspaces`` of ``package.json``;
``store_of`` names the pnpm store a path lies in. Every directory read, and every step of
expanding a workspace pattern, counts against a budget (``budget[0]``). A workspace manifest
with more than ``MAX_WORKSPACE_PATTERNS`` patterns, or a pattern of more than
``MAX_PATTERN_PARTS`` parts (a run of ``**`` counts as one), is refused whole, as is one
whose expansion runs out of budget: no workspace package is read, and a warning
(``workspace-packages-refused``) names the file. Plain Python: no LSP, Qt or socket code.
"""

from __future__ import annotations

import fnmatch
import os
import posixpath
from collections.abc import Iterator, Sequence
from dataclasses import dataclass

from lsp_bridge.core.diagnostics import Diagnostic
from lsp_bridge.core.paths import is_within, read_regular, relative_to
from lsp_bridge.inventory.jsonc import load_json

CONTAINER_ROOT = "/workspace"
STORE_PARTS = ("node_modules", ".pnpm")
MANIFESTS = ("package.json", "pyproject.toml", "Cargo.toml", "go.mod")
MAX_WORKSPACE_BYTES = 1 << 20
MAX_WORKSPACE_PATTERNS = 256  # a real monorepo names a few dozen
MAX_PATTERN_PARTS = 32  # after a run of ** is taken as one: packages/*/libs/** has four


@dataclass(frozen=True)
class Layout:
    """Where a repository's paths appear inside the container."""

    toplevel: str
    base: str

    def container(self, host: str) -> str | None:
        if not is_within(host, self.toplevel):
            return None
        rel = relative_to(host, self.toplevel)
        return posixpath.join(self.base, rel) if rel else self.base


def find_toplevel(root: str, given: str | None) -> str:
    """The repository holding ``root``: ``given`` when it does, else the nearest
    ancestor with ``.git``, else with ``pnpm-workspace.yaml``, else ``root``."""
    if given and is_within(root, given):
        return given
    for marker in (".git", "pnpm-workspace.yaml"):
        d = root
        while True:
            if os.path.lexists(os.path.join(d, marker)):
                return d
            parent = os.path.dirname(d)
            if parent == d:
                break
            d = parent
    return root


def layouts(roots: Sequence[str], given: str | None) -> dict[str, Layout]:
    """One layout per root; several repositories get ``/workspace/<name>`` each."""
    tops = {root: find_toplevel(root, given) for root in roots}
    distinct = list(dict.fromkeys(tops.values()))
    bases: dict[str, str] = {}
    for top in distinct:
        if len(distinct) == 1:
            bases[top] = CONTAINER_ROOT
            continue
        name = os.path.basename(top) or "root"
        candidate, n = name, 2
        while posixpath.join(CONTAINER_ROOT, candidate) in bases.values():
            candidate, n = f"{name}-{n}", n + 1
        bases[top] = posixpath.join(CONTAINER_ROOT, candidate)
    return {root: Layout(top, bases[top]) for root, top in tops.items()}


# ---------------------------------------------------------------- link scan


def scan_links(root: str, budget: list[int]) -> Iterator[str]:
    """Symbolic links under ``root``, bounded: ``.git`` skipped, ``node_modules``
    read one level deep (two for ``@scope`` and ``.bin``), stores never entered,
    linked directories never followed."""
    stack = [root]
    while stack:
        for entry in entries(stack.pop(), budget):
            if entry.is_symlink():
                yield entry.path
            elif entry.name == "node_modules" and is_dir(entry):
                yield from scan_node_modules(entry.path, budget)
            elif entry.name != ".git" and is_dir(entry):
                stack.append(entry.path)


def scan_node_modules(directory: str, budget: list[int]) -> Iterator[str]:
    for entry in entries(directory, budget):
        if entry.is_symlink():
            yield entry.path
        elif (entry.name.startswith("@") or entry.name == ".bin") and is_dir(entry):
            yield from (e.path for e in entries(entry.path, budget) if e.is_symlink())


def layout_links(root: str, packages: Sequence[str], budget: list[int]) -> Iterator[str]:
    """Symbolic links the package manager made for ``root``, found without walking it:
    the links in ``root/node_modules`` and in the ``node_modules`` of every workspace
    package inside ``root`` (pnpm links each package's dependencies there)."""
    yield from scan_node_modules(os.path.join(root, "node_modules"), budget)
    for package in packages:
        if package != root and is_within(package, root):
            yield from scan_node_modules(os.path.join(package, "node_modules"), budget)


WORKSPACE_FILE = "pnpm-workspace.yaml"


class WorkspaceRefused(Exception):
    """A workspace manifest too large to expand: why (the caller names the file)."""


def workspace_packages(toplevel: str, budget: list[int], diagnostics: list[Diagnostic] | None = None) -> list[str]:
    """Directories of the workspace packages the repository's manifest names: the
    ``packages`` of ``pnpm-workspace.yaml``, else the ``workspaces`` of ``package.json``
    (npm, yarn). Patterns are expanded on directory names (``*``, ``?``, ``[...]``, ``**``);
    ``!pattern`` removes what it matches. ``node_modules`` and dot directories are never entered.
    A manifest over a limit names no package; the warning naming it goes to ``diagnostics``."""
    manifest = os.path.join(toplevel, WORKSPACE_FILE)
    patterns = _pnpm_workspace_patterns(manifest)
    if patterns is None:
        manifest = os.path.join(toplevel, "package.json")
        data, _, _ = load_json(manifest, comments=False)
        found = data.get("workspaces") if isinstance(data, dict) else None
        if isinstance(found, dict):
            found = found.get("packages")
        patterns = [p for p in found if isinstance(p, str)] if isinstance(found, list) else []
    try:
        return _expand_all(toplevel, patterns, budget)
    except WorkspaceRefused as refused:
        if diagnostics is not None:
            diagnostics.append(Diagnostic("warning", "workspace-packages-refused",
                                          f"{manifest}: {refused}: no workspace package is read", manifest))
        return []


def _expand_all(toplevel: str, patterns: Sequence[str], budget: list[int]) -> list[str]:
    if len(patterns) > MAX_WORKSPACE_PATTERNS:
        raise WorkspaceRefused(f"it has {len(patterns)} patterns, more than {MAX_WORKSPACE_PATTERNS} patterns")
    keep: dict[str, None] = {}
    drop: set[str] = set()
    for pattern in patterns:
        negated = pattern.startswith("!")
        for directory in expand_workspace_pattern(toplevel, pattern[1:] if negated else pattern, budget):
            if negated:
                drop.add(directory)
            else:
                keep[directory] = None
    return [d for d in keep if d not in drop]


def _pnpm_workspace_patterns(path: str) -> list[str] | None:
    """The ``packages`` list of a ``pnpm-workspace.yaml`` (PyYAML ``safe_load``); None without the file.

    A file that is not YAML, or whose ``packages`` is not a list of strings, names no package
    (the workspace then has none; nothing is mounted for it)."""
    data = read_regular(path, MAX_WORKSPACE_BYTES, follow=True)  # a FIFO here is not waited on
    if data is None:
        return None
    import yaml

    try:
        document = yaml.safe_load(data.decode("utf-8"))
    except (UnicodeDecodeError, yaml.YAMLError, RecursionError):
        return []
    packages = document.get("packages") if isinstance(document, dict) else None
    if not isinstance(packages, list):
        return []
    return [p for p in packages if isinstance(p, str) and p]


def pattern_parts(pattern: str) -> list[str] | None:
    """The parts of a workspace pattern, a run of ``**`` taken as one; None when it leaves the repository.

    Raises ``WorkspaceRefused`` past ``MAX_PATTERN_PARTS``."""
    parts: list[str] = []
    for part in pattern.strip().strip("/").split("/"):
        if part in ("", ".") or (part == "**" and parts and parts[-1] == "**"):
            continue
        if part == "..":
            return None  # a workspace package outside the repository: nothing to read here
        parts.append(part)
        if len(parts) > MAX_PATTERN_PARTS:
            raise WorkspaceRefused(f"a pattern of more than {MAX_PATTERN_PARTS} parts ({pattern[:60]!r}...)")
    return parts


def expand_workspace_pattern(toplevel: str, pattern: str, budget: list[int]) -> list[str]:
    """Directories under ``toplevel`` matching ``pattern`` component by component. Each directory
    considered costs one unit of ``budget`` besides the entries read; raises ``WorkspaceRefused``
    when the budget runs out (a partial expansion would be a silent guess)."""
    parts = pattern_parts(pattern)
    if parts is None:
        return []
    current = [toplevel]
    for part in parts:
        following: list[str] = []
        # ** lists everything below: a directory below another already listed adds nothing.
        starts = _outermost(current) if part == "**" else current
        for directory in starts:
            budget[0] -= 1
            if budget[0] <= 0:
                raise WorkspaceRefused(f"expanding {pattern[:60]!r} reads too many directories")
            if part == "**":
                following += subdirectories(directory, budget, deep=True)
                following.append(directory)
            elif part == "*":  # the usual pattern (packages/*): every name, fnmatch not needed
                following += subdirectories(directory, budget)
            elif any(c in part for c in "*?["):
                following += [d for d in subdirectories(directory, budget)
                              if fnmatch.fnmatchcase(os.path.basename(d), part)]
            elif os.path.isdir(os.path.join(directory, part)):
                following.append(os.path.join(directory, part))
        if budget[0] <= 0:
            raise WorkspaceRefused(f"expanding {pattern[:60]!r} reads too many directories")
        current = list(dict.fromkeys(following))
    return sorted(current)


def _outermost(directories: Sequence[str]) -> list[str]:
    """``directories`` less those inside another of them."""
    kept: list[str] = []
    for directory in sorted(directories):
        if not kept or not is_within(directory, kept[-1]):
            kept.append(directory)
    return kept


def subdirectories(directory: str, budget: list[int], *, deep: bool = False) -> list[str]:
    """Subdirectories (not links, not ``node_modules``, not dot directories); all below with ``deep``."""
    found: list[str] = []
    stack = [directory]
    while stack:
        for entry in entries(stack.pop(), budget):
            if entry.name.startswith(".") or entry.name == "node_modules" or not is_dir(entry):
                continue
            found.append(entry.path)
            if deep:
                stack.append(entry.path)
        if not deep:
            break
    return found


def entries(directory: str, budget: list[int]) -> list[os.DirEntry]:
    if budget[0] <= 0:
        return []
    try:
        with os.scandir(directory) as it:
            entries = sorted(it, key=lambda e: e.name)
    except OSError:
        return []
    budget[0] -= len(entries)
    return entries


def is_dir(entry: os.DirEntry) -> bool:
    try:
        return entry.is_dir(follow_symlinks=False)
    except OSError:
        return False


def store_of(target: str, toplevel: str) -> str | None:
    """The ``node_modules/.pnpm`` directory ``target`` lies in, if any."""
    parts = relative_to(target, toplevel).split("/")
    for i in range(len(parts) - 1):
        if (parts[i], parts[i + 1]) == STORE_PARTS:
            return os.path.join(toplevel, *parts[: i + 2])
    return None


def is_package(target: str, toplevel: str) -> bool:
    """Whether ``target`` or a directory above it (below the toplevel) has a manifest."""
    d = target if os.path.isdir(target) else os.path.dirname(target)
    while is_within(d, toplevel) and d != toplevel:
        if any(os.path.isfile(os.path.join(d, m)) for m in MANIFESTS):
            return True
        d = os.path.dirname(d)
    return False
