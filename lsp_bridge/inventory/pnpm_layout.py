"""A repository's package-manager layout: where its paths appear in a container, its links, its workspace.

``Layout`` places a repository under ``/workspace``; ``scan_links`` and ``layout_links``
find the symbolic links the package manager made (a bounded walk, or only the
``node_modules`` of the root and its workspace packages); ``workspace_packages`` reads
``pnpm-workspace.yaml`` (PyYAML's ``safe_load``) or the ``workspaces`` of ``package.json``;
``store_of`` names the pnpm store a path lies in. Every directory read counts against a
budget (``budget[0]`` entries). Plain Python: no LSP, Qt or socket code.
"""

from __future__ import annotations

import fnmatch
import os
import posixpath
from collections.abc import Iterator, Sequence
from dataclasses import dataclass

from lsp_bridge.core.paths import is_within, read_regular, relative_to
from lsp_bridge.inventory.jsonc import load_json

CONTAINER_ROOT = "/workspace"
STORE_PARTS = ("node_modules", ".pnpm")
MANIFESTS = ("package.json", "pyproject.toml", "Cargo.toml", "go.mod")
MAX_WORKSPACE_BYTES = 1 << 20


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


def workspace_packages(toplevel: str, budget: list[int]) -> list[str]:
    """Directories of the workspace packages the repository's manifest names: the
    ``packages`` of ``pnpm-workspace.yaml``, else the ``workspaces`` of ``package.json``
    (npm, yarn). Patterns are expanded on directory names (``*``, ``?``, ``[...]``, ``**``);
    ``!pattern`` removes what it matches. ``node_modules`` and dot directories are never entered."""
    patterns = _pnpm_workspace_patterns(os.path.join(toplevel, WORKSPACE_FILE))
    if patterns is None:
        data, _, _ = load_json(os.path.join(toplevel, "package.json"), comments=False)
        found = data.get("workspaces") if isinstance(data, dict) else None
        if isinstance(found, dict):
            found = found.get("packages")
        patterns = [p for p in found if isinstance(p, str)] if isinstance(found, list) else []
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


def expand_workspace_pattern(toplevel: str, pattern: str, budget: list[int]) -> list[str]:
    """Directories under ``toplevel`` matching ``pattern`` component by component."""
    current = [toplevel]
    for part in pattern.strip().strip("/").split("/"):
        if part in ("", "."):
            continue
        if part == "..":
            return []  # a workspace package outside the repository: nothing to read here
        following: list[str] = []
        for directory in current:
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
        current = list(dict.fromkeys(following))
    return sorted(current)


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
