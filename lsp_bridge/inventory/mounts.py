"""Mount reconciliation: what a container sees, against what the union allows.

Mounts come from ``[[mounts]]`` (already parsed into ``Mount``) and from the
``-v``/``--volume``/``--mount`` arguments of docker or podman servers in MCP
client configs (``mounts_from_mcp_configs``). ``reconcile`` reports both
directions -- roots with no mount behind them (the server sees nothing there,
quietly) and mounts outside the union (the kernel allows what the server
refuses) -- and suggests the narrow mount set of seed 000: the root at
``/workspace/<path in the repository>``, the pnpm store read-only where the link
text says, and the single files the ``tsconfig`` ``extends`` chain needs above
the root. Plain Python: no LSP, Qt or socket code.
"""

from __future__ import annotations

import os
import posixpath
import re
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from lsp_bridge.core.diagnostics import Diagnostic, Range
from lsp_bridge.core.json_read import loads
from lsp_bridge.core.paths import canonical, fold, is_within, read_regular, relative_to
from lsp_bridge.core.settings import Mount

if TYPE_CHECKING:
    from typing import Literal

CONTAINER_ROOT = "/workspace"
STORE_PARTS = ("node_modules", ".pnpm")
MANIFESTS = ("package.json", "pyproject.toml", "Cargo.toml", "go.mod")
MAX_SCAN_ENTRIES = 200_000
MAX_EXTENDS_DEPTH = 32

# (file relative to the folder, dialect); the VS Code file may hold comments.
MCP_CONFIG_FILES = ((".vscode/mcp.json", "vscode"), (".mcp.json", "claude"), (".cursor/mcp.json", "cursor"))
SERVER_KEYS = ("servers", "mcpServers")
CONTAINER_COMMANDS = ("docker", "podman")


# ---------------------------------------------------------------- data


@dataclass(frozen=True)
class MountSuggestion:
    """One mount of the suggested narrow set."""

    source: str
    target: str
    mode: str  # "ro" | "rw"
    reason: str
    beyond_acknowledged: bool = False  # hands over something outside the acknowledged union

    def to_json(self) -> dict:
        return {"source": self.source, "target": self.target, "mode": self.mode, "reason": self.reason,
                "beyond_acknowledged": self.beyond_acknowledged}


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
        }

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
    import csv
    import io

    buffer = io.StringIO()
    csv.writer(buffer, lineterminator="").writerow(fields)
    return buffer.getvalue()


# ---------------------------------------------------------------- JSON with comments


def strip_jsonc(text: str) -> str:
    """JSONC -> JSON: comments and trailing commas blanked, positions unchanged.

    Raises ``json.JSONDecodeError`` for an unterminated ``/*`` comment.
    """
    out = list(text)
    i, n = 0, len(text)
    in_string = False
    pending_comma: int | None = None

    def blank(start: int, end: int) -> None:
        for k in range(start, end):
            if out[k] not in "\r\n":
                out[k] = " "

    while i < n:
        c = text[i]
        if in_string:
            if c == "\\":
                i += 2
                continue
            in_string = c != '"'
        elif text.startswith("//", i):
            end = text.find("\n", i)
            end = n if end < 0 else end
            blank(i, end)
            i = end
            continue
        elif text.startswith("/*", i):
            end = text.find("*/", i + 2)
            if end < 0:
                import json

                raise json.JSONDecodeError("unterminated /* comment", text, i)
            blank(i, end + 2)
            i = end + 2
            continue
        elif c == '"':
            in_string, pending_comma = True, None
        elif c == ",":
            pending_comma = i
        elif c in "]}":
            if pending_comma is not None:
                out[pending_comma] = " "
            pending_comma = None
        elif not c.isspace():
            pending_comma = None
        i += 1
    return "".join(out)


_MAX_CONFIG_BYTES = 8 << 20  # an MCP configuration is a few KB


def _load_json(path: str, *, comments: bool) -> tuple[object | None, str | None, Diagnostic | None]:
    """(data, raw text, error) for a JSON(C) file; data None with no error = absent."""
    if not os.path.exists(path):  # absent, or a link to nothing: no configuration here, as before
        return None, None, None
    data = read_regular(path, _MAX_CONFIG_BYTES + 1, follow=True)  # a FIFO here would block the reader
    if data is None:
        return None, None, Diagnostic("error", "mcp-config-unreadable", "cannot read: not a readable regular file", path)
    if len(data) > _MAX_CONFIG_BYTES:
        return None, None, Diagnostic("error", "mcp-config-unreadable",
                                      f"cannot read: larger than {_MAX_CONFIG_BYTES // (1 << 20)} MiB", path)
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        return None, None, Diagnostic("error", "mcp-config-unreadable", f"cannot read: {exc.__class__.__name__}", path)
    try:
        return loads(strip_jsonc(text) if comments else text), text, None
    except ValueError as exc:  # json.JSONDecodeError, or a number past the interpreter's digit limit
        line, column = getattr(exc, "lineno", None), getattr(exc, "colno", None)
        where = Range.point(line - 1, column - 1) if line is not None and column is not None else None
        message = getattr(exc, "msg", None) or str(exc).split(";")[0]
        return None, text, Diagnostic("error", "mcp-config-invalid", f"invalid JSON: {message}", path, where)
    except RecursionError:  # a repository's file nested past the parser's depth: refused, named
        return None, text, Diagnostic("error", "mcp-config-invalid", "invalid JSON: nested too deep to read", path)


def _locate(text: str | None, value: str) -> Range | None:
    """The position of the string literal ``value`` in ``text`` when it is unique."""
    if text is None:
        return None
    if value.isprintable() and '"' not in value and "\\" not in value:
        needle = f'"{value}"'  # what json.dumps writes for it (json, and re with it, stay unloaded)
    else:
        import json

        needle = json.dumps(value, ensure_ascii=False)
    at = text.find(needle)
    if at < 0 or text.find(needle, at + 1) >= 0:
        return None
    line = text.count("\n", 0, at)
    column = at - (text.rfind("\n", 0, at) + 1)
    return Range.point(line, column, len(needle))


# ---------------------------------------------------------------- variables


class _Unresolved(ValueError):
    """A ``${...}`` that cannot be substituted; the mount is dropped."""


_VARIABLE = re.compile(r"\$\{([^}]*)\}")
_ENV_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


@dataclass(frozen=True)
class _Context:
    """What ``${...}`` variables resolve against."""

    folder: str
    env: Mapping[str, str]
    folders: tuple[str, ...]
    dialect: str  # "vscode" | "cursor" | "claude"


def _substitute(text: str, ctx: _Context) -> str:
    """``text`` with its ``${...}`` variables replaced; raises ``_Unresolved``."""
    resolve = _claude_variable if ctx.dialect == "claude" else _editor_variable
    return _VARIABLE.sub(lambda match: resolve(match.group(1), ctx), text)


def _editor_variable(name: str, ctx: _Context) -> str:
    """VS Code / Cursor variables."""
    if name == "workspaceFolder":
        return ctx.folder
    if name == "workspaceFolderBasename":
        return os.path.basename(ctx.folder.rstrip(os.sep))
    if name == "userHome":
        home = ctx.env.get("HOME") or ctx.env.get("USERPROFILE")
        if not home:
            raise _Unresolved("${userHome} cannot be resolved: HOME is not set")
        return home
    if name in ("pathSeparator", "/"):
        return os.sep
    if name.startswith("env:"):
        return _env_value(name[4:], ctx, f"${{{name}}}")
    if name.startswith("workspaceFolder:"):
        return _named_folder(name[len("workspaceFolder:"):], ctx)
    raise _Unresolved(f"unknown variable ${{{name}}}")


def _claude_variable(name: str, ctx: _Context) -> str:
    """Claude Code ``.mcp.json``: ``${NAME}`` and ``${NAME:-default}`` from the environment."""
    var, sep, default = name.partition(":-")
    if not _ENV_NAME.match(var):
        raise _Unresolved(f"unknown variable ${{{name}}}")
    if sep and not ctx.env.get(var):
        return default
    return _env_value(var, ctx, f"${{{name}}}")


def _env_value(var: str, ctx: _Context, shown: str) -> str:
    if not _ENV_NAME.match(var):
        raise _Unresolved(f"unknown variable {shown}")
    if var not in ctx.env:
        raise _Unresolved(f"{shown} cannot be resolved: {var} is not set")
    return ctx.env[var]


def _named_folder(name: str, ctx: _Context) -> str:
    for folder in (ctx.folder, *ctx.folders):
        if os.path.basename(folder.rstrip(os.sep)) == name:
            return folder
    raise _Unresolved(f"${{workspaceFolder:{name}}} names no open workspace folder")


# ---------------------------------------------------------------- docker arguments

_BOOL_LONG = frozenset(
    ["--rm", "--interactive", "--tty", "--detach", "--init", "--privileged", "--read-only", "--publish-all",
     "--no-healthcheck", "--oom-kill-disable", "--sig-proxy", "--quiet", "--disable-content-trust", "--help",
     "--replace", "--rmi"]
)
_BOOL_SHORT = frozenset("itdPq")


def _volume_arguments(args: Sequence[str], start: int) -> Iterator[tuple[int, str, str]]:
    """(index, "volume"|"mount", spec) for each mount option between ``run`` and the image."""
    i = start
    while i < len(args):
        arg = args[i]
        takes_next = i + 1 < len(args) and not args[i + 1].startswith("-")
        if arg == "--" or not arg.startswith("-") or arg == "-":
            return  # the image: what follows belongs to the container's command
        if arg.startswith("--"):
            name, eq, value = arg.partition("=")
            kind = {"--volume": "volume", "--mount": "mount"}.get(name)
            if eq:
                if kind:
                    yield i, kind, value
                i += 1
            elif kind:
                if i + 1 < len(args):
                    yield i + 1, kind, args[i + 1]
                i += 2
            else:
                i += 1 if name in _BOOL_LONG or not takes_next else 2
            continue
        letters = arg[1:]
        while letters and letters[0] in _BOOL_SHORT:
            letters = letters[1:]
        if not letters:
            i += 1
            continue
        attached = letters[1:].removeprefix("=")
        if attached:
            if letters[0] == "v":
                yield i, "volume", attached
            i += 1
        else:
            if letters[0] == "v" and i + 1 < len(args):
                yield i + 1, "volume", args[i + 1]
                i += 2
            else:
                i += 2 if letters[0] == "v" or takes_next else 1


_DRIVE = re.compile(r"^[A-Za-z]:[\\/]")


def _split_volume(spec: str) -> tuple[str, str, set[str]] | None:
    """``src:dst[:opts]`` -> (src, dst, opts); None for an anonymous volume."""
    cut = spec.find(":", 2 if _DRIVE.match(spec) else 0)
    if cut < 0:
        return None
    src, rest = spec[:cut], spec[cut + 1:]
    dst, _, opts = rest.partition(":")
    return src, dst, {o.strip() for o in opts.split(",") if o.strip()}


def _split_mount(spec: str) -> tuple[str, str, set[str]] | None:
    """``type=bind,source=..,target=..[,readonly]`` -> (src, dst, opts); None unless a bind."""
    import csv

    fields = next(csv.reader([spec]), [])
    values: dict[str, str] = {}
    for item in fields:
        key, eq, value = item.partition("=")
        values[key.strip().lower()] = value if eq else "true"
    if values.get("type", "volume") != "bind":
        return None
    src = values.get("source", values.get("src", ""))
    dst = values.get("target", values.get("destination", values.get("dst", "")))
    if not src or not dst:
        raise _Unresolved("a bind --mount needs both source= and target=")
    readonly = values.get("readonly", values.get("ro", "false")).lower() in ("true", "1", "yes")
    return src, dst, ({"ro"} if readonly else set())


# ---------------------------------------------------------------- MCP configs


def mounts_from_mcp_configs(
    folder: str, env: Mapping[str, str], *, workspace_folders: Sequence[str] = ()
) -> tuple[list[Mount], list[Diagnostic]]:
    """Bind mounts of the docker/podman servers in the folder's MCP client configs.

    ``env`` resolves ``${env:NAME}`` (and ``${NAME}`` in ``.mcp.json``);
    ``workspace_folders`` resolves ``${workspaceFolder:name}``. A mount whose
    variables cannot all be resolved is dropped with an error naming the file
    and the field.
    """
    mounts: list[Mount] = []
    diagnostics: list[Diagnostic] = []
    if not os.path.isabs(folder):
        return [], [Diagnostic("error", "mount-bad-root", f"not an absolute folder: {folder!r}")]
    for relative, dialect in MCP_CONFIG_FILES:
        path = os.path.join(folder, *relative.split("/"))
        data, text, error = _load_json(path, comments=dialect == "vscode")
        if error:
            diagnostics.append(error)
            continue
        if data is None:
            continue
        ctx = _Context(folder, env, tuple(workspace_folders), dialect)
        _servers_mounts(data, relative, path, text, ctx, mounts, diagnostics)
    return mounts, diagnostics


def _servers_mounts(data, relative, path, text, ctx, mounts, diagnostics) -> None:
    if not isinstance(data, dict):
        diagnostics.append(Diagnostic("error", "mcp-config-invalid", "the top level must be an object", path))
        return
    for key in SERVER_KEYS:
        servers = data.get(key)
        if servers is None:
            continue
        if not isinstance(servers, dict):
            diagnostics.append(Diagnostic("error", "mcp-config-invalid", f"{key} must be an object", path))
            continue
        for name, server in servers.items():
            where = f"{key}.{name}"
            if isinstance(server, dict) and _is_container_run(server):
                _server_mounts(server["args"], where, f"{relative} {where}", path, text, ctx, mounts, diagnostics)


def _is_container_run(server: dict) -> bool:
    command = server.get("command")
    if not isinstance(command, str):
        return False
    args = server.get("args")
    return _program(command) in CONTAINER_COMMANDS and isinstance(args, list) and "run" in args


def _server_mounts(args, where, origin, path, text, ctx, mounts, diagnostics) -> None:
    bad = [i for i, a in enumerate(args) if not isinstance(a, str)]
    if bad:
        diagnostics.append(
            Diagnostic("error", "mcp-config-invalid", f"{where}.args[{bad[0]}] must be a string", path)
        )
        return
    for index, kind, spec in _volume_arguments(args, args.index("run") + 1):
        field_name = f"{where}.args[{index}]"
        try:
            mount, note = _mount_from_spec(kind, spec, ctx, origin, path)
        except _Unresolved as exc:
            diagnostics.append(
                Diagnostic(
                    "error",
                    "mount-unresolved",
                    f"{field_name}: {exc}; this mount is ignored",
                    path,
                    _locate(text, args[index]),
                )
            )
            continue
        if note:
            diagnostics.append(Diagnostic("warning", "mount-source", f"{field_name}: {note}", path, _locate(text, args[index])))
        if mount:
            mounts.append(mount)


def _mount_from_spec(kind: str, spec: str, ctx: _Context, origin: str, path: str) -> tuple[Mount | None, str | None]:
    """(mount or None for a named/anonymous volume, a warning or None)."""
    parts = (_split_volume if kind == "volume" else _split_mount)(_substitute(spec, ctx))
    if parts is None:
        return None, None
    src, dst, opts = parts
    if not dst.startswith("/"):
        raise _Unresolved(f"the container path {dst!r} is not absolute")
    note = None
    if src.startswith("~"):
        raise _Unresolved("'~' is not expanded without a shell; use ${userHome}")
    if not os.path.isabs(src):
        if not (src in (".", "..") or src.startswith(("./", "../", ".\\", "..\\"))):
            return None, None  # a named volume, not a host path
        src = os.path.join(ctx.folder, src)
        note = "relative source resolved against the workspace folder (the server's working directory)"
    try:
        source = canonical(src)
    except ValueError as exc:
        raise _Unresolved(str(exc)) from None
    if not os.path.exists(source):
        note = f"the mount source {source} does not exist"
    mode: Literal["ro", "rw"] = "ro" if opts & {"ro", "readonly"} else "rw"
    return Mount(source, posixpath.normpath(dst), mode, origin, path), note


# ---------------------------------------------------------------- confinement of MCP servers

WRAPPER_COMMANDS = ("rootguard",)


def mcp_server_confinement(
    folder: str, env: Mapping[str, str], union: Sequence[str], *, workspace_folders: Sequence[str] = ()
) -> list[Diagnostic]:
    """How each stdio MCP server in the folder's MCP configs is confined.

    ``rootguard run --root R... -- cmd`` servers are recognised: their roots are
    compared with the union (information when they match or are narrower, a
    warning when a root reaches outside it). Container servers are left to the
    mount reconciliation; remote servers (``url``) and Root Guard's own guarded
    server (``rootguard mcp``) are not file-system processes to confine. Every
    other stdio server runs unconfined: a warning says so and how to wrap it.
    Unreadable or invalid files are reported by ``mounts_from_mcp_configs``.
    """
    found: list[Diagnostic] = []
    if not os.path.isabs(folder):
        return found
    folded = [fold(entry) for entry in union]
    for relative, dialect in MCP_CONFIG_FILES:
        path = os.path.join(folder, *relative.split("/"))
        data, text, error = _load_json(path, comments=dialect == "vscode")
        if error or not isinstance(data, dict):
            continue
        ctx = _Context(folder, env, tuple(workspace_folders), dialect)
        for key in SERVER_KEYS:
            servers = data.get(key)
            if not isinstance(servers, dict):
                continue
            for name, server in servers.items():
                if isinstance(server, dict):
                    at = _locate(text, name)
                    diag = _server_confinement(server, f"{relative} {key}.{name}", path, at, ctx, folded)
                    if diag is not None:
                        found.append(diag)
    return found


def _program(command: str) -> str:
    """The program's name without directory or ``.exe``, lower-cased."""
    return command.replace("\\", "/").rsplit("/", 1)[-1].lower().removesuffix(".exe")


def _server_confinement(
    server: dict, where: str, path: str, at: Range | None, ctx: _Context, union: Sequence[str]
) -> Diagnostic | None:
    command = server.get("command")
    if not isinstance(command, str) or server.get("url") or server.get("type") in ("http", "sse", "streamable-http"):
        return None
    raw = server.get("args")
    args: list[str] = [a for a in raw if isinstance(a, str)] if isinstance(raw, list) else []
    program = _program(command)
    if _is_container_run(server):
        return None
    if program in WRAPPER_COMMANDS and args[:1] == ["mcp"]:
        return None  # Root Guard's own guarded file server: the same policy engine decides its tools
    if program in WRAPPER_COMMANDS and args[:1] == ["run"]:
        roots: list[str] = []
        i = 1
        while i < len(args) and args[i] != "--":
            if args[i] == "--root" and i + 1 < len(args):
                roots.append(args[i + 1])
                i += 2
                continue
            if args[i].startswith("--root="):
                roots.append(args[i][len("--root="):])
            i += 1
        try:
            resolved = [canonical(_substitute(r, ctx)) for r in roots]
        except (_Unresolved, ValueError) as exc:
            return Diagnostic("warning", "mcp-server-confinement-unresolved",
                              f"{where}: rootguard run --root cannot be resolved ({exc})", path, at)
        wider = [r for r in resolved if not any(is_within(fold(r), u) for u in union)]
        if wider:
            return Diagnostic(
                "warning", "mcp-server-confined-wider",
                f"{where} runs under rootguard run with --root {', '.join(wider)}, outside the union: the kernel "
                "allows what the server refuses, so the boundary fails in two places", path, at)
        shown = ", ".join(resolved) if resolved else "no root (it sees only the system directories)"
        return Diagnostic("information", "mcp-server-confined",
                          f"{where} runs confined by rootguard run to {shown}, inside the union", path, at)
    return Diagnostic(
        "warning", "mcp-server-unconfined",
        f"{where} runs unconfined ({command}): it can read the whole disk whatever the union says; run it "
        "under rootguard run (\"command\": \"rootguard\", \"args\": [\"run\", \"--root\", "
        "\"${workspaceFolder}\", \"--\", ...]) or use the command Root Guard: Run MCP Server Confined",
        path, at)


# ---------------------------------------------------------------- layout


@dataclass(frozen=True)
class _Layout:
    """Where a repository's paths appear inside the container."""

    toplevel: str
    base: str

    def container(self, host: str) -> str | None:
        if not is_within(host, self.toplevel):
            return None
        rel = relative_to(host, self.toplevel)
        return posixpath.join(self.base, rel) if rel else self.base


def _find_toplevel(root: str, given: str | None) -> str:
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


def _layouts(roots: Sequence[str], given: str | None) -> dict[str, _Layout]:
    """One layout per root; several repositories get ``/workspace/<name>`` each."""
    tops = {root: _find_toplevel(root, given) for root in roots}
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
    return {root: _Layout(top, bases[top]) for root, top in tops.items()}


# ---------------------------------------------------------------- link scan


def _scan_links(root: str, budget: list[int]) -> Iterator[str]:
    """Symbolic links under ``root``, bounded: ``.git`` skipped, ``node_modules``
    read one level deep (two for ``@scope`` and ``.bin``), stores never entered,
    linked directories never followed."""
    stack = [root]
    while stack:
        for entry in _entries(stack.pop(), budget):
            if entry.is_symlink():
                yield entry.path
            elif entry.name == "node_modules" and _is_dir(entry):
                yield from _scan_node_modules(entry.path, budget)
            elif entry.name != ".git" and _is_dir(entry):
                stack.append(entry.path)


def _scan_node_modules(directory: str, budget: list[int]) -> Iterator[str]:
    for entry in _entries(directory, budget):
        if entry.is_symlink():
            yield entry.path
        elif (entry.name.startswith("@") or entry.name == ".bin") and _is_dir(entry):
            yield from (e.path for e in _entries(entry.path, budget) if e.is_symlink())


def _layout_links(root: str, packages: Sequence[str], budget: list[int]) -> Iterator[str]:
    """Symbolic links the package manager made for ``root``, found without walking it:
    the links in ``root/node_modules`` and in the ``node_modules`` of every workspace
    package inside ``root`` (pnpm links each package's dependencies there)."""
    yield from _scan_node_modules(os.path.join(root, "node_modules"), budget)
    for package in packages:
        if package != root and is_within(package, root):
            yield from _scan_node_modules(os.path.join(package, "node_modules"), budget)


WORKSPACE_FILE = "pnpm-workspace.yaml"


def workspace_packages(toplevel: str, budget: list[int]) -> list[str]:
    """Directories of the workspace packages the repository's manifest names: the
    ``packages`` of ``pnpm-workspace.yaml``, else the ``workspaces`` of ``package.json``
    (npm, yarn). Patterns are expanded on directory names (``*``, ``?``, ``[...]``, ``**``);
    ``!pattern`` removes what it matches. ``node_modules`` and dot directories are never entered."""
    patterns = _pnpm_workspace_patterns(os.path.join(toplevel, WORKSPACE_FILE))
    if patterns is None:
        data, _, _ = _load_json(os.path.join(toplevel, "package.json"), comments=False)
        found = data.get("workspaces") if isinstance(data, dict) else None
        if isinstance(found, dict):
            found = found.get("packages")
        patterns = [p for p in found if isinstance(p, str)] if isinstance(found, list) else []
    keep: dict[str, None] = {}
    drop: set[str] = set()
    for pattern in patterns:
        negated = pattern.startswith("!")
        for directory in _expand_workspace_pattern(toplevel, pattern[1:] if negated else pattern, budget):
            if negated:
                drop.add(directory)
            else:
                keep[directory] = None
    return [d for d in keep if d not in drop]


def _pnpm_workspace_patterns(path: str) -> list[str] | None:
    """The ``packages:`` list of a ``pnpm-workspace.yaml`` (block or flow style); None without the file.

    Only that one key is read, so a small reader does instead of a YAML parser."""
    data = read_regular(path, 1 << 20, follow=True)  # a FIFO here is no workspace file, and is not waited on
    if data is None:
        return None
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        return None
    patterns: list[str] = []
    inside = False
    for raw in text.splitlines():
        line = raw.split(" #", 1)[0].rstrip()
        stripped = line.strip()
        if not stripped or stripped.startswith("#"):
            continue
        if not raw[:1].isspace():  # a top-level key
            key, _, rest = stripped.partition(":")
            inside = key.strip("'\"") == "packages"
            rest = rest.strip()
            if inside and rest.startswith("["):
                patterns += [_unquote(item) for item in rest.strip("[]").split(",") if item.strip()]
                inside = False
            continue
        if inside and stripped.startswith("-"):
            patterns.append(_unquote(stripped[1:]))
    return [p for p in patterns if p]


def _unquote(text: str) -> str:
    text = text.strip()
    return text[1:-1] if len(text) >= 2 and text[0] == text[-1] and text[0] in "'\"" else text


def _expand_workspace_pattern(toplevel: str, pattern: str, budget: list[int]) -> list[str]:
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
                following += _subdirectories(directory, budget, deep=True)
                following.append(directory)
            elif part == "*":  # the usual pattern (packages/*): every name, fnmatch not needed
                following += _subdirectories(directory, budget)
            elif any(c in part for c in "*?["):
                import fnmatch

                following += [d for d in _subdirectories(directory, budget)
                              if fnmatch.fnmatchcase(os.path.basename(d), part)]
            elif os.path.isdir(os.path.join(directory, part)):
                following.append(os.path.join(directory, part))
        current = list(dict.fromkeys(following))
    return sorted(current)


def _subdirectories(directory: str, budget: list[int], *, deep: bool = False) -> list[str]:
    """Subdirectories (not links, not ``node_modules``, not dot directories); all below with ``deep``."""
    found: list[str] = []
    stack = [directory]
    while stack:
        for entry in _entries(stack.pop(), budget):
            if entry.name.startswith(".") or entry.name == "node_modules" or not _is_dir(entry):
                continue
            found.append(entry.path)
            if deep:
                stack.append(entry.path)
        if not deep:
            break
    return found


def _entries(directory: str, budget: list[int]) -> list[os.DirEntry]:
    if budget[0] <= 0:
        return []
    try:
        with os.scandir(directory) as it:
            entries = sorted(it, key=lambda e: e.name)
    except OSError:
        return []
    budget[0] -= len(entries)
    return entries


def _is_dir(entry: os.DirEntry) -> bool:
    try:
        return entry.is_dir(follow_symlinks=False)
    except OSError:
        return False


def _store_of(target: str, toplevel: str) -> str | None:
    """The ``node_modules/.pnpm`` directory ``target`` lies in, if any."""
    parts = relative_to(target, toplevel).split("/")
    for i in range(len(parts) - 1):
        if (parts[i], parts[i + 1]) == STORE_PARTS:
            return os.path.join(toplevel, *parts[: i + 2])
    return None


def _is_package(target: str, toplevel: str) -> bool:
    """Whether ``target`` or a directory above it (below the toplevel) has a manifest."""
    d = target if os.path.isdir(target) else os.path.dirname(target)
    while is_within(d, toplevel) and d != toplevel:
        if any(os.path.isfile(os.path.join(d, m)) for m in MANIFESTS):
            return True
        d = os.path.dirname(d)
    return False


# ---------------------------------------------------------------- tsconfig


def _named_tsconfig(name: str) -> bool:
    """``tsconfig.<something>.json``, as ``re.fullmatch(r"tsconfig\\..+\\.json", name)`` reads it."""
    if not (name.startswith("tsconfig.") and name.endswith(".json")):
        return False
    middle = name[len("tsconfig."):-len(".json")]
    return bool(middle) and "\n" not in middle


def _tsconfig_starts(root: str) -> list[str]:
    try:
        names = sorted(n for n in os.listdir(root) if n == "tsconfig.json" or _named_tsconfig(n))
    except OSError:
        return []
    return [os.path.join(root, n) for n in names if os.path.isfile(os.path.join(root, n))]


def _extends_chain(root: str, diagnostics: list[Diagnostic]) -> list[tuple[str, str]]:
    """(path the toolchain opens, canonical path) of every config the root's
    tsconfig files use, themselves included, following ``extends`` (string or
    array) through relative paths and ``node_modules`` packages."""
    reached: list[tuple[str, str]] = []
    done: set[str] = set()

    def visit(opened: str, ts_path: str, stack: tuple[str, ...]) -> None:
        real = os.path.realpath(opened)
        if real in stack:
            diagnostics.append(Diagnostic("warning", "tsconfig-extends-cycle", f"extends cycle through {real}", stack[-1]))
            return
        if real in done or len(stack) > MAX_EXTENDS_DEPTH:
            return
        done.add(real)
        reached.append((opened, real))
        data, _, error = _load_json(real, comments=True)
        if error or not isinstance(data, dict):
            if error:
                diagnostics.append(Diagnostic("warning", "tsconfig-invalid", error.message, real, error.range))
            return
        extends = data.get("extends")
        for spec in extends if isinstance(extends, list) else [extends] if extends is not None else []:
            found = _resolve_extends(spec, ts_path)
            if found is None:
                diagnostics.append(
                    Diagnostic("warning", "tsconfig-extends-missing", f"extends {spec!r} resolves to no file", real)
                )
                continue
            visit(*found, stack + (real,))

    for start in _tsconfig_starts(root):
        visit(start, start, ())
    return reached


def _resolve_extends(spec: object, ts_path: str) -> tuple[str, str] | None:
    """(path opened, path TypeScript continues from) for one ``extends`` value."""
    if not isinstance(spec, str) or not spec:
        return None
    base = os.path.dirname(ts_path)
    if spec.startswith(("./", "../")) or spec in (".", "..") or os.path.isabs(spec):
        path = os.path.normpath(os.path.join(base, spec))
        for candidate in (path, path + ".json") if not path.endswith(".json") else (path,):
            if os.path.isfile(candidate):
                return candidate, candidate
        return None
    d = base
    while True:
        found = _package_config(os.path.join(d, "node_modules", *spec.split("/")))
        if found:
            return found, os.path.realpath(found)  # TypeScript realpaths packages
        parent = os.path.dirname(d)
        if parent == d:
            return None
        d = parent


def _package_config(candidate: str) -> str | None:
    for path in (candidate, candidate + ".json"):
        if os.path.isfile(path):
            return path
    if not os.path.isdir(candidate):
        return None
    data, _, _ = _load_json(os.path.join(candidate, "package.json"), comments=False)
    named = data.get("tsconfig") if isinstance(data, dict) else None
    path = os.path.join(candidate, named if isinstance(named, str) else "tsconfig.json")
    return path if os.path.isfile(path) else None


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
    layouts = _layouts(entries, top)
    packages: dict[str, list[str]] = {}  # toplevel -> workspace package directories (walk=False)
    for root, layout in layouts.items():
        if walk:
            links: Iterable[str] = _scan_links(root, budget)
        else:
            if layout.toplevel not in packages:
                packages[layout.toplevel] = workspace_packages(layout.toplevel, budget)
            links = _layout_links(root, packages[layout.toplevel], budget)
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
    )


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


def _plan_root(root: str, layout: _Layout, plan: _Plan, budget: list[int], links: Iterable[str]) -> None:
    target = layout.container(root) or layout.base
    if _store_of(root, layout.toplevel):
        plan.roots.append(MountSuggestion(root, target, "ro", "pnpm store (a root)"))
        return
    plan.roots.append(MountSuggestion(root, target, "rw", "workspace root"))
    for link in links:
        _plan_link(link, layout, plan)
    _plan_package_modules(root, layout, plan, budget)
    _plan_package_manifest(root, layout, plan)
    chain = _extends_chain(root, plan.diagnostics)
    for opened, real in chain:
        _plan_config_file(opened, real, layout, plan)
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


def _add_modules(directory: str, reason: str, layout: _Layout, plan: _Plan, budget: list[int]) -> bool:
    """Suggest ``directory`` (a node_modules folder outside the union) read-only; scan its links."""
    if plan.inside_union(directory) or not os.path.isdir(directory):
        return False
    target = layout.container(directory)
    if target is None:
        return False
    if directory not in plan.modules:
        plan.modules[directory] = MountSuggestion(os.path.realpath(directory), target, "ro", reason)
        for link in _scan_node_modules(directory, budget):
            _plan_link(link, layout, plan)
    return True


def _plan_package_modules(root: str, layout: _Layout, plan: _Plan, budget: list[int]) -> None:
    """The node_modules of the packages above a narrow root (``packages/vite`` for
    ``packages/vite/src/node``): Node resolves the root's imports there."""
    for directory in _ancestors_below(root, layout.toplevel):
        if directory == layout.toplevel:
            return  # the repository's own node_modules: only when something needs it (types)
        modules = os.path.join(directory, "node_modules")
        reason = (f"node_modules of the package {relative_to(directory, layout.toplevel)} above the root: "
                  "Node resolves the root's imports from here")
        _add_modules(modules, reason, layout, plan, budget)


def _plan_package_manifest(root: str, layout: _Layout, plan: _Plan) -> None:
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
        if target is not None:
            where = relative_to(directory, layout.toplevel) or "the repository root"
            plan.files[manifest] = MountSuggestion(
                os.path.realpath(manifest), target, "ro",
                f"package.json of the package {where} above the root: Node and TypeScript read its "
                "type, imports and exports for the root's files (one file, not its directory)")
        return


_TSCONFIG_INPUTS = ("include", "files")


def _plan_tsconfig_inputs(chain: list[tuple[str, str]], root: str, plan: _Plan) -> None:
    """Source a tsconfig of the root asks for outside the union (``"include": ["../types"]``):
    first-party, never suggested, but said, so a failing type-check in the sandbox is explained."""
    for opened, real in chain:
        if not plan.inside_union(opened):
            continue  # a config above the root: its paths are relative to it, not the root's concern
        data, text, _ = _load_json(real, comments=True)
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
                real, _locate(text, item)))


def _type_package(name: str) -> tuple[str, ...]:
    """Folder names under node_modules a ``types`` entry can resolve to, in TypeScript's order."""
    parts = name.split("/")
    package = parts[:2] if name.startswith("@") else parts[:1]
    at_types = "@types/" + ("__".join(p.lstrip("@") for p in package) if name.startswith("@") else package[0])
    return (at_types, "/".join(package))


def _plan_types(chain: list[tuple[str, str]], layout: _Layout, plan: _Plan, budget: list[int]) -> None:
    """``compilerOptions.types`` of the root's tsconfig files: where each resolves, and that it is mounted."""
    needs: dict[str, list[tuple[str, str]]] = {}  # node_modules dir -> [(type, tsconfig)]
    for opened, real in chain:
        data, text, _ = _load_json(real, comments=True)
        options = data.get("compilerOptions") if isinstance(data, dict) else None
        types = options.get("types") if isinstance(options, dict) else None
        if not isinstance(types, list):
            continue
        for name in (t for t in types if isinstance(t, str) and t and not t.startswith((".", "/"))):
            found = _resolve_type(name, os.path.dirname(opened))
            if found is None:
                plan.diagnostics.append(Diagnostic(
                    "warning", "tsconfig-types-missing",
                    f"types entry {name!r} resolves to no package from {os.path.dirname(opened)}",
                    real, _locate(text, name)))
                continue
            if not plan.inside_union(found):
                needs.setdefault(found, []).append((name, real))
    for modules, users in needs.items():
        names = ", ".join(dict.fromkeys(repr(name) for name, _ in users))
        files = ", ".join(dict.fromkeys(tsconfig for _, tsconfig in users))
        reason = f"tsconfig types {names} resolve here (needed by {files})"
        if modules in plan.modules:
            continue
        if not _add_modules(modules, reason, layout, plan, budget):
            plan.diagnostics.append(Diagnostic(
                "warning", "mount-types-outside-repository",
                f"tsconfig types {names} resolve from {modules}, outside the repository {layout.toplevel}: "
                f"no mount under {layout.base} can hold it", users[0][1]))
            continue
        for name, tsconfig in users:
            plan.diagnostics.append(Diagnostic(
                "warning", "mount-types-from-above",
                f"types entry {name!r} resolves from {modules}, above the root: mounted read-only "
                "in the suggested set", tsconfig, _locate(_load_json(tsconfig, comments=True)[1], name)))


def _resolve_type(name: str, start: str) -> str | None:
    """The node_modules folder a ``types`` entry resolves from, walking up from ``start``."""
    candidates = _type_package(name)
    directory = start
    while True:
        modules = os.path.join(directory, "node_modules")
        if any(os.path.exists(os.path.join(modules, *c.split("/"))) for c in candidates):
            return modules
        parent = os.path.dirname(directory)
        if parent == directory:
            return None
        directory = parent


def _plan_store_backlinks(layout: _Layout, plan: _Plan, budget: list[int]) -> None:
    """Store entries that link back into first-party packages (pnpm's ``x@1_vite@packages+vite``):
    flagged, as any link to first-party source outside the union."""
    stores = [s for s in plan.stores if is_within(s, layout.toplevel)]
    stores += [os.path.join(m, ".pnpm") for m in plan.modules if is_within(m, layout.toplevel)
               and os.path.isdir(os.path.join(m, ".pnpm"))]
    for store in dict.fromkeys(stores):
        for entry in _entries(store, budget):
            if entry.name.startswith(".") or not _is_dir(entry):
                continue
            modules = os.path.join(entry.path, "node_modules")
            for link in _scan_node_modules(modules, budget):
                before = len(plan.first_party)
                _plan_link(link, layout, plan)
                if len(plan.first_party) > before:
                    plan.first_party[link]["via"] = "store"


def _uncovered(stores: dict[str, MountSuggestion], modules: dict[str, MountSuggestion]) -> list[MountSuggestion]:
    """Store suggestions not already inside a suggested node_modules mount."""
    return [s for path, s in stores.items() if not any(is_within(path, m) for m in modules)]


def _plan_link(link: str, layout: _Layout, plan: _Plan) -> None:
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
    store = _store_of(target, layout.toplevel)
    if store:
        if store not in plan.stores:
            reason = f"pnpm store, read off the link text of {relative_to(link, layout.toplevel)}"
            inside = layout.container(store)
            assert inside is not None  # the store lies below the toplevel
            plan.stores[store] = MountSuggestion(os.path.realpath(store), inside, "ro", reason)
        return
    plan.first_party.setdefault(link, {"link": link, "target": target, "package": _is_package(target, layout.toplevel)})


def _add_unrescuable(plan: _Plan, link: str, target: str, reason: str) -> None:
    if link not in plan.unrescuable:
        plan.unrescuable[link] = {"link": link, "target": target, "reason": reason}
        plan.diagnostics.append(Diagnostic("warning", "mount-unrescuable-link", reason, link))


def _plan_config_file(opened: str, real: str, layout: _Layout, plan: _Plan) -> None:
    """Name the single file a config above (or linked out of) the root needs."""
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
    plan.files[host] = MountSuggestion(real, target, "ro", "tsconfig extends chain: one file, not its directory")


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
