"""Mount reconciliation: what a container sees, against what the union allows.

Mounts come from ``[[mounts]]`` (already parsed into ``Mount``) and from the
``-v``/``--volume``/``--mount`` arguments of docker or podman servers in MCP
client configs (``inventory.mcp_configs``). ``reconcile`` reports both
directions -- roots with no mount behind them (the server sees nothing there,
quietly) and mounts outside the union (the kernel allows what the server
refuses) -- and suggests the narrow mount set of seed 000: the root at
``/workspace/<path in the repository>``, the pnpm store read-only where the link
text says, and the single files the ``tsconfig`` ``extends`` chain needs above
the root (``inventory.tsconfig``, which refuses anything but a configuration file).
Everything but the roots is the *toolchain* set (``Reconciliation.toolchain``) that
``rootguard run`` hands to the engine as rules (``core.toolchain``). Plain Python:
no LSP, Qt or socket code.
"""

from __future__ import annotations

import csv
import io
import os
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field, replace

from lsp_bridge.core.diagnostics import Diagnostic
from lsp_bridge.core.paths import canonical, fold, is_within, relative_to
from lsp_bridge.core.settings import Mount
from lsp_bridge.core.toolchain import Refusal, ToolchainMount
from lsp_bridge.inventory import pnpm_layout
from lsp_bridge.inventory.jsonc import load_json, locate, strip_jsonc
from lsp_bridge.inventory.mcp_configs import mcp_server_confinement, mounts_from_mcp_configs
from lsp_bridge.inventory.pnpm_layout import CONTAINER_ROOT, Layout, store_of, workspace_packages
from lsp_bridge.inventory.tsconfig import MAX_TSCONFIG_BYTES, ChainFile, extends_chain, path_refusal, resolve_type

__all__ = [  # what callers imported from here before the split
    "CONTAINER_ROOT", "MountSuggestion", "Reconciliation", "mcp_server_confinement", "mounts_from_mcp_configs",
    "enable_toolchain", "reconcile", "strip_jsonc", "toolchain_set", "workspace_packages",
]

MAX_SCAN_ENTRIES = 200_000


# ---------------------------------------------------------------- data


@dataclass(frozen=True)
class MountSuggestion:
    """One mount of the suggested narrow set; ``kind``: "root", or the toolchain kind ("store",
    "modules", "file"); ``cause``: the file whose content asked for it."""

    source: str
    target: str
    mode: str  # "ro" | "rw"
    reason: str
    beyond_acknowledged: bool = False  # hands over something outside the acknowledged union
    # What it is and what asked for it: metadata, not part of the mount (equal mounts compare equal).
    kind: str = field(default="root", compare=False)
    cause: str | None = field(default=None, compare=False)

    def to_json(self) -> dict:
        return {"source": self.source, "target": self.target, "mode": self.mode, "reason": self.reason,
                "beyond_acknowledged": self.beyond_acknowledged, "kind": self.kind, "cause": self.cause}


@dataclass(frozen=True)
class Reconciliation:
    """Configured mounts against the union, and the narrow mount set it needs."""

    mounts: tuple[Mount, ...] = ()
    roots_without_mount: tuple[str, ...] = ()
    mounts_outside_union: tuple[Mount, ...] = ()
    suggested: tuple[MountSuggestion, ...] = ()
    unrescuable: tuple[dict, ...] = ()  # {"link", "target", "reason"}
    first_party: tuple[dict, ...] = ()  # {"link", "target"}
    single_files: tuple[str, ...] = ()
    diagnostics: tuple[Diagnostic, ...] = field(default=())
    suggested_for: tuple[str, ...] = ()  # the roots the suggested set is made for
    refused: tuple[Refusal, ...] = ()  # what a toolchain file asked for that is never mounted
    held: tuple[ToolchainMount, ...] = ()  # toolchain mounts waiting for approval: never suggested (``without_held``)

    def to_json(self) -> dict:
        """The ``mounts`` object of ``rootguard/status`` and ``rootguard mounts --json``."""
        return {
            "mounts": [
                {"source": m.source, "target": m.target, "mode": m.mode, "origin": m.origin} for m in self.mounts
            ],
            "roots_without_mount": list(self.roots_without_mount),
            "mounts_outside_union": [{"source": m.source, "target": m.target} for m in self.mounts_outside_union],
            "suggested": [s.to_json() for s in self.suggested],
            "suggested_for": list(self.suggested_for),
            "docker_args": self.docker_args(),
            "unrescuable": [dict(item) for item in self.unrescuable],
            "first_party": [dict(item) for item in self.first_party],
            "single_files": list(self.single_files),
            "refused": [r.to_json() for r in self.refused],
            "held": [m.to_json() for m in self.held],
        }

    def without_held(self, held: Sequence[ToolchainMount]) -> Reconciliation:
        """The suggested set less the toolchain mounts held until the person approves them
        (``Session.toolchain``): ``run`` does not mount those, so no suggestion may; they are listed in ``held``."""
        paths = {m.path for m in held}
        if not paths:
            return self
        return replace(self, held=tuple(held),
                       suggested=tuple(s for s in self.suggested if s.kind == "root" or s.source not in paths),
                       single_files=tuple(f for f in self.single_files if f not in paths))

    def toolchain(self) -> tuple[ToolchainMount, ...]:
        """What the toolchain reads outside the roots: the suggested mounts other than the roots, and the held ones."""
        return (*(ToolchainMount(s.source, s.kind, s.reason, s.cause) for s in self.suggested if s.kind != "root"),
                *self.held)

    def docker_args(self) -> list[str]:
        """``docker run`` volume arguments for the suggested set (roots rw, the rest ro)."""
        args: list[str] = []
        for s in self.suggested:
            if ":" in s.source or ":" in s.target:
                args += ["--mount", _mount_option(s)]
            else:
                args += ["-v", f"{s.source}:{s.target}:{s.mode}"]
        return args

def _mount_option(s: MountSuggestion) -> str:
    """A ``--mount`` value, CSV-quoted as docker parses it (for paths holding ':')."""
    fields = ["type=bind", f"source={s.source}", f"target={s.target}"] + (["readonly"] if s.mode == "ro" else [])
    buffer = io.StringIO()
    csv.writer(buffer, lineterminator="").writerow(fields)
    return buffer.getvalue()


# ---------------------------------------------------------------- reconcile


@dataclass
class _Plan:
    """What ``reconcile`` accumulates while it walks the roots."""

    union: tuple[str, ...]
    roots: list[MountSuggestion] = field(default_factory=list)
    stores: dict[str, MountSuggestion] = field(default_factory=dict)  # by lexical store path
    modules: dict[str, MountSuggestion] = field(default_factory=dict)  # node_modules above a root
    files: dict[str, MountSuggestion] = field(default_factory=dict)  # by host path
    unrescuable: dict[str, dict] = field(default_factory=dict)
    first_party: dict[str, dict] = field(default_factory=dict)
    diagnostics: list[Diagnostic] = field(default_factory=list)
    refused: list[Refusal] = field(default_factory=list)
    folded: tuple[str, ...] = field(init=False)

    def __post_init__(self) -> None:
        self.folded = tuple(fold(entry) for entry in self.union)

    def inside_union(self, path: str) -> bool:
        key = fold(path)
        return any(is_within(key, entry) for entry in self.folded)

    def in_store(self, path: str) -> bool:
        return any(is_within(path, store) for store in (*self.stores, *self.modules))


def reconcile(union: Sequence[str], mounts: Sequence[Mount], *, repo_toplevel: str | None = None,
              walk: bool = True) -> Reconciliation:
    """Configured mounts against the union, and the narrow mount set it needs.

    ``walk=True`` (``rootguard mounts``, ``rootguard run``, the language server) looks
    for symbolic links anywhere under each root. ``walk=False`` (``rootguard roots``)
    reads them from the package manager's layout only -- each root's ``node_modules``
    and those of the workspace packages inside it, and the pnpm store -- so its cost
    does not grow with the tree: a link elsewhere in the sources is left to ``mounts``.
    """
    diagnostics: list[Diagnostic] = []
    entries = _canonical_entries(union, diagnostics)
    top = _canonical_entries([repo_toplevel], diagnostics)[0] if repo_toplevel else None
    plan = _Plan(tuple(entries), diagnostics=diagnostics)
    budget = [MAX_SCAN_ENTRIES]
    layouts = pnpm_layout.layouts(entries, top)
    packages: dict[str, list[str]] = {}  # toplevel -> workspace package directories (walk=False)
    for root, layout in layouts.items():
        if walk:
            links: Iterable[str] = pnpm_layout.scan_links(root, budget)
        else:
            if layout.toplevel not in packages:
                packages[layout.toplevel] = workspace_packages(layout.toplevel, budget, diagnostics)
            links = pnpm_layout.layout_links(root, packages[layout.toplevel], budget)
        _plan_root(root, layout, plan, budget, links)
    for layout in {layout.toplevel: layout for layout in layouts.values()}.values():
        _plan_store_backlinks(layout, plan, budget)
    if budget[0] <= 0:
        diagnostics.append(
            Diagnostic("information", "mount-scan-truncated", f"symlink scan stopped after {MAX_SCAN_ENTRIES} entries")
        )
    without = _roots_without_mount(entries, mounts) if mounts else []
    outside = [m for m in mounts if not plan.inside_union(m.source)]
    diagnostics += [_root_without_mount_warning(root) for root in without]
    diagnostics += [_outside_union_warning(m) for m in outside]
    first_party = [item for item in plan.first_party.values() if item["target"] not in plan.files]
    diagnostics += [_first_party_note(item) for item in first_party]
    first_party = [{"link": item["link"], "target": item["target"], "via": item.get("via", "link")}
                   for item in first_party]
    return Reconciliation(
        mounts=tuple(mounts),
        roots_without_mount=tuple(without),
        mounts_outside_union=tuple(outside),
        suggested=tuple(plan.roots + sorted(plan.modules.values(), key=_by_target)
                        + sorted(_uncovered(plan.stores, plan.modules), key=_by_target)
                        + sorted(plan.files.values(), key=_by_target)),
        unrescuable=tuple(plan.unrescuable.values()),
        first_party=tuple(first_party),
        single_files=tuple(sorted(plan.files)),
        diagnostics=tuple(diagnostics),
        suggested_for=tuple(entries),
        refused=tuple(plan.refused),
    )


def toolchain_set(union: Sequence[str], repo_toplevel: str | None = None
                  ) -> tuple[tuple[ToolchainMount, ...], tuple[Refusal, ...], tuple[Diagnostic, ...]]:
    """What the roots' toolchain reads outside them (``core.toolchain``: it becomes rules of the
    engine), what a toolchain file asked for that is refused, and the findings. Read from the
    package manager's layout (``walk=False``), so ``roots``, ``run`` and ``config held`` find the same set."""
    found = reconcile(union, [], repo_toplevel=repo_toplevel, walk=False)
    return found.toolchain(), found.refused, found.diagnostics


def enable_toolchain(session) -> tuple[Diagnostic, ...]:
    """Find the toolchain set of ``session``'s union and give it to the session as engine rules
    (``Session.set_toolchain``: a new mount an agent-writable file asked for is held). The findings."""
    from lsp_bridge.core import worktrees

    toplevel = worktrees.locate(session.scope.folders[0]).toplevel if session.scope.folders else None
    found, refused, diagnostics = toolchain_set(session.scope.union.paths, toplevel)
    session.set_toolchain(found, refused)
    return diagnostics


def _by_target(s: MountSuggestion) -> str:
    return s.target


def _canonical_entries(paths: Sequence[str], diagnostics: list[Diagnostic]) -> list[str]:
    entries: list[str] = []
    for path in paths:
        try:
            entries.append(canonical(path))
        except ValueError as exc:
            diagnostics.append(Diagnostic("error", "mount-bad-root", f"ignored: {exc}"))
    return list(dict.fromkeys(entries))


def _plan_root(root: str, layout: Layout, plan: _Plan, budget: list[int], links: Iterable[str]) -> None:
    target = layout.container(root) or layout.base
    if store_of(root, layout.toplevel):
        plan.roots.append(MountSuggestion(root, target, "ro", "pnpm store (a root)"))
        return
    plan.roots.append(MountSuggestion(root, target, "rw", "workspace root"))
    for link in links:
        _plan_link(link, layout, plan)
    _plan_package_modules(root, layout, plan, budget)
    _plan_package_manifest(root, layout, plan)
    chain = extends_chain(root, plan.diagnostics, plan.refused)
    for item in chain:
        _plan_config_file(item, layout, plan)
    _plan_types(chain, layout, plan, budget)
    _plan_tsconfig_inputs(chain, root, plan)


def _ancestors_below(path: str, top: str) -> Iterator[str]:
    """``path``'s parent, its parent... up to and including ``top`` (nothing when outside it)."""
    current = os.path.dirname(path)
    while is_within(current, top):
        yield current
        if current == top:
            return
        parent = os.path.dirname(current)
        if parent == current:
            return
        current = parent


def _add_modules(directory: str, reason: str, layout: Layout, plan: _Plan, budget: list[int],
                 cause: str | None = None) -> bool:
    """Suggest ``directory`` (a node_modules folder outside the union) read-only; scan its links."""
    if plan.inside_union(directory) or not os.path.isdir(directory):
        return False
    target = layout.container(directory)
    if target is None:
        return False
    if directory not in plan.modules:
        plan.modules[directory] = MountSuggestion(os.path.realpath(directory), target, "ro", reason, kind="modules",
                                                  cause=cause)
        for link in pnpm_layout.scan_node_modules(directory, budget):
            _plan_link(link, layout, plan)
    return True


def _plan_package_modules(root: str, layout: Layout, plan: _Plan, budget: list[int]) -> None:
    """The node_modules of the packages above a narrow root (``packages/vite`` for
    ``packages/vite/src/node``): Node resolves the root's imports there."""
    for directory in _ancestors_below(root, layout.toplevel):
        if directory == layout.toplevel:
            return  # the repository's own node_modules: only when something needs it (types)
        modules = os.path.join(directory, "node_modules")
        reason = (f"node_modules of the package {relative_to(directory, layout.toplevel)} above the root: "
                  "Node resolves the root's imports from here")
        _add_modules(modules, reason, layout, plan, budget)


def _plan_package_manifest(root: str, layout: Layout, plan: _Plan) -> None:
    """The ``package.json`` of the package a narrow root lies in (``packages/vite`` for
    ``packages/vite/src/node``): Node and TypeScript read its ``type``, ``imports``
    (``#dep``) and ``exports`` for every file below it, so it is suggested as one file."""
    if os.path.lexists(os.path.join(root, "package.json")):
        return
    for directory in _ancestors_below(root, layout.toplevel):
        manifest = os.path.join(directory, "package.json")
        if not os.path.isfile(manifest):
            continue
        if plan.inside_union(manifest) or manifest in plan.files:
            return
        target = layout.container(manifest)
        refused = path_refusal(manifest)
        if refused is not None:
            plan.refused.append(Refusal(os.path.realpath(manifest), refused, None))
            return
        if target is not None:
            where = relative_to(directory, layout.toplevel) or "the repository root"
            plan.files[manifest] = MountSuggestion(
                os.path.realpath(manifest), target, "ro",
                f"package.json of the package {where} above the root: Node and TypeScript read its "
                "type, imports and exports for the root's files (one file, not its directory)", kind="file")
        return


_TSCONFIG_INPUTS = ("include", "files")


def _plan_tsconfig_inputs(chain: list[ChainFile], root: str, plan: _Plan) -> None:
    """Source a tsconfig of the root asks for outside the union (``"include": ["../types"]``):
    first-party, never suggested, but said, so a failing type-check in the sandbox is explained."""
    for opened, real, _ in chain:
        if not plan.inside_union(opened):
            continue  # a config above the root: its paths are relative to it, not the root's concern
        data, text, _ = load_json(real, comments=True, limit=MAX_TSCONFIG_BYTES)
        if not isinstance(data, dict):
            continue
        base = os.path.dirname(opened)
        entries = [(key, item) for key in _TSCONFIG_INPUTS if isinstance(data.get(key), list)
                   for item in data[key] if isinstance(item, str) and item]
        references = data.get("references")
        if isinstance(references, list):
            entries += [("references", ref["path"]) for ref in references
                        if isinstance(ref, dict) and isinstance(ref.get("path"), str) and ref["path"]]
        for key, item in entries:
            literal = item.split("*", 1)[0]  # the directory a glob starts from
            path = os.path.normpath(os.path.join(base, literal)) if literal else base
            if plan.inside_union(path):
                continue
            plan.diagnostics.append(Diagnostic(
                "warning", "tsconfig-input-outside-root",
                f"{key} entry {item!r} reaches {path}, outside the union: first-party source left out "
                "of the suggested mounts, so a type-check of this tsconfig in the sandbox fails; "
                "add it as a root only if you mean to hand it over",
                real, locate(text, item)))


def _plan_types(chain: list[ChainFile], layout: Layout, plan: _Plan, budget: list[int]) -> None:
    """``compilerOptions.types`` of the root's tsconfig files: where each resolves, and that it is mounted."""
    needs: dict[str, list[tuple[str, str]]] = {}  # node_modules dir -> [(type, tsconfig)]
    for opened, real, _ in chain:
        data, text, _ = load_json(real, comments=True, limit=MAX_TSCONFIG_BYTES)
        options = data.get("compilerOptions") if isinstance(data, dict) else None
        types = options.get("types") if isinstance(options, dict) else None
        if not isinstance(types, list):
            continue
        for name in (t for t in types if isinstance(t, str) and t and not t.startswith((".", "/"))):
            found = resolve_type(name, os.path.dirname(opened))
            if found is None:
                plan.diagnostics.append(Diagnostic(
                    "warning", "tsconfig-types-missing",
                    f"types entry {name!r} resolves to no package from {os.path.dirname(opened)}",
                    real, locate(text, name)))
                continue
            if not plan.inside_union(found):
                needs.setdefault(found, []).append((name, real))
    for modules, users in needs.items():
        names = ", ".join(dict.fromkeys(repr(name) for name, _ in users))
        files = ", ".join(dict.fromkeys(tsconfig for _, tsconfig in users))
        reason = f"tsconfig types {names} resolve here (needed by {files})"
        if modules in plan.modules:
            continue
        if not _add_modules(modules, reason, layout, plan, budget, cause=users[0][1]):
            plan.diagnostics.append(Diagnostic(
                "warning", "mount-types-outside-repository",
                f"tsconfig types {names} resolve from {modules}, outside the repository {layout.toplevel}: "
                f"no mount under {layout.base} can hold it", users[0][1]))
            continue
        for name, tsconfig in users:
            plan.diagnostics.append(Diagnostic(
                "warning", "mount-types-from-above",
                f"types entry {name!r} resolves from {modules}, above the root: mounted read-only "
                "in the suggested set", tsconfig, locate(load_json(tsconfig, comments=True, limit=MAX_TSCONFIG_BYTES)[1], name)))


def _plan_store_backlinks(layout: Layout, plan: _Plan, budget: list[int]) -> None:
    """Store entries that link back into first-party packages (pnpm's ``x@1_vite@packages+vite``):
    flagged, as any link to first-party source outside the union."""
    stores = [s for s in plan.stores if is_within(s, layout.toplevel)]
    stores += [os.path.join(m, ".pnpm") for m in plan.modules if is_within(m, layout.toplevel)
               and os.path.isdir(os.path.join(m, ".pnpm"))]
    for store in dict.fromkeys(stores):
        for entry in pnpm_layout.entries(store, budget):
            if entry.name.startswith(".") or not pnpm_layout.is_dir(entry):
                continue
            modules = os.path.join(entry.path, "node_modules")
            for link in pnpm_layout.scan_node_modules(modules, budget):
                before = len(plan.first_party)
                _plan_link(link, layout, plan)
                if len(plan.first_party) > before:
                    plan.first_party[link]["via"] = "store"


def _uncovered(stores: dict[str, MountSuggestion], modules: dict[str, MountSuggestion]) -> list[MountSuggestion]:
    """Store suggestions not already inside a suggested node_modules mount."""
    return [s for path, s in stores.items() if not any(is_within(path, m) for m in modules)]


def _plan_link(link: str, layout: Layout, plan: _Plan) -> None:
    """Classify one link by its text: store, first-party, or unrescuable."""
    try:
        text = os.readlink(link)
    except OSError:
        return
    if os.path.isabs(text):
        reason = (
            "absolute link: the container has no such path, and no mount under "
            f"{CONTAINER_ROOT} can rescue it (make it relative, or run this work outside the sandbox)"
        )
        _add_unrescuable(plan, link, os.path.normpath(text), reason)
        return
    target = os.path.normpath(os.path.join(os.path.dirname(link), text))
    if plan.inside_union(target):
        return
    if layout.container(target) is None:
        reason = f"relative link leaves the repository {layout.toplevel}: no mount under {layout.base} reproduces it"
        _add_unrescuable(plan, link, target, reason)
        return
    store = store_of(target, layout.toplevel)
    if store:
        if ".git" in relative_to(store, layout.toplevel).split("/"):
            plan.refused.append(Refusal(store, f"{store} is inside a .git directory: never a package store", link))
            return
        if store not in plan.stores:
            reason = f"pnpm store, read off the link text of {relative_to(link, layout.toplevel)}"
            inside = layout.container(store)
            assert inside is not None  # the store lies below the toplevel
            plan.stores[store] = MountSuggestion(os.path.realpath(store), inside, "ro", reason, kind="store",
                                                 cause=link)
        return
    package = pnpm_layout.is_package(target, layout.toplevel)
    plan.first_party.setdefault(link, {"link": link, "target": target, "package": package})


def _add_unrescuable(plan: _Plan, link: str, target: str, reason: str) -> None:
    if link not in plan.unrescuable:
        plan.unrescuable[link] = {"link": link, "target": target, "reason": reason}
        plan.diagnostics.append(Diagnostic("warning", "mount-unrescuable-link", reason, link))


def _plan_config_file(item: ChainFile, layout: Layout, plan: _Plan) -> None:
    """Name the single file a config above (or linked out of) the root needs."""
    opened, real, referrer = item
    if not plan.inside_union(opened):
        host = opened
    elif not plan.inside_union(real):
        host = real  # reached through a relative link inside the root
    else:
        return
    if plan.in_store(host) or host in plan.files:
        return
    target = layout.container(host)
    if target is None:
        plan.diagnostics.append(
            Diagnostic(
                "warning",
                "mount-file-outside-repository",
                f"the toolchain reads {host}, outside the repository {layout.toplevel}: it cannot be placed under {layout.base}",
                host,
            )
        )
        return
    plan.files[host] = MountSuggestion(real, target, "ro", "tsconfig extends chain: one file, not its directory",
                                       kind="file", cause=referrer or opened)


def _roots_without_mount(entries: Sequence[str], mounts: Sequence[Mount]) -> list[str]:
    sources = [fold(m.source) for m in mounts]
    return [root for root in entries if not any(is_within(fold(root), s) for s in sources)]


def _root_without_mount_warning(root: str) -> Diagnostic:
    return Diagnostic(
        "warning",
        "root-without-mount",
        f"no mount exposes {root}: inside the container the server sees nothing there, and tools "
        "searching for their configuration fall back to defaults without saying so",
    )


def _outside_union_warning(mount: Mount) -> Diagnostic:
    return Diagnostic(
        "warning",
        "mount-outside-union",
        f"mount {mount.source} -> {mount.target} ({mount.origin}) is outside the union: the kernel allows "
        "what the server refuses, so the boundary fails in two places with two error messages",
        mount.file,
    )


def _first_party_note(item: dict) -> Diagnostic:
    what = "a workspace sibling package" if item["package"] else "repository content outside the root"
    where = "a package-store entry links back to" if item.get("via") == "store" else "points at"
    return Diagnostic(
        "information",
        "mount-first-party-link",
        f"{item['link']}: {where} {what} ({item['target']}): first-party source, left out of the "
        "suggested mounts; add it as a root only if you would hand it over on purpose",
        item["link"],
    )
