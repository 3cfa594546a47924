"""MCP client configurations: the bind mounts of container servers, and how each server is confined.

``mounts_from_mcp_configs`` reads the ``-v``/``--volume``/``--mount`` arguments of the
docker or podman servers in a folder's MCP client configs (``.vscode/mcp.json``,
``.mcp.json``, ``.cursor/mcp.json``), with their ``${...}`` variables resolved;
``mcp_server_confinement`` says how each stdio server runs (under ``rootguard run``,
in a container, or unconfined). Plain Python: no LSP, Qt or socket code.
"""

from __future__ import annotations

import os
import posixpath
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Literal

from lsp_bridge.core.diagnostics import Diagnostic, Range
from lsp_bridge.core.paths import canonical, fold, is_within
from lsp_bridge.core.settings import Mount
from lsp_bridge.inventory.docker_args import Unresolved, split_mount, split_volume, volume_arguments
from lsp_bridge.inventory.jsonc import load_json, locate

# (file relative to the folder, dialect); the VS Code file may hold comments.
MCP_CONFIG_FILES = ((".vscode/mcp.json", "vscode"), (".mcp.json", "claude"), (".cursor/mcp.json", "cursor"))
SERVER_KEYS = ("servers", "mcpServers")
CONTAINER_COMMANDS = ("docker", "podman")
WRAPPER_COMMANDS = ("rootguard",)


# ---------------------------------------------------------------- variables


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
    """``text`` with its ``${...}`` variables replaced; raises ``Unresolved``."""
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
            raise Unresolved("${userHome} cannot be resolved: HOME is not set")
        return home
    if name in ("pathSeparator", "/"):
        return os.sep
    if name.startswith("env:"):
        return _env_value(name[4:], ctx, f"${{{name}}}")
    if name.startswith("workspaceFolder:"):
        return _named_folder(name[len("workspaceFolder:"):], ctx)
    raise Unresolved(f"unknown variable ${{{name}}}")


def _claude_variable(name: str, ctx: _Context) -> str:
    """Claude Code ``.mcp.json``: ``${NAME}`` and ``${NAME:-default}`` from the environment."""
    var, sep, default = name.partition(":-")
    if not _ENV_NAME.match(var):
        raise Unresolved(f"unknown variable ${{{name}}}")
    if sep and not ctx.env.get(var):
        return default
    return _env_value(var, ctx, f"${{{name}}}")


def _env_value(var: str, ctx: _Context, shown: str) -> str:
    if not _ENV_NAME.match(var):
        raise Unresolved(f"unknown variable {shown}")
    if var not in ctx.env:
        raise Unresolved(f"{shown} cannot be resolved: {var} is not set")
    return ctx.env[var]


def _named_folder(name: str, ctx: _Context) -> str:
    for folder in (ctx.folder, *ctx.folders):
        if os.path.basename(folder.rstrip(os.sep)) == name:
            return folder
    raise Unresolved(f"${{workspaceFolder:{name}}} names no open workspace folder")


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
        data, text, error = load_json(path, comments=dialect == "vscode")
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
    for index, kind, spec in volume_arguments(args, args.index("run") + 1):
        field_name = f"{where}.args[{index}]"
        try:
            mount, note = _mount_from_spec(kind, spec, ctx, origin, path)
        except Unresolved as exc:
            diagnostics.append(
                Diagnostic(
                    "error",
                    "mount-unresolved",
                    f"{field_name}: {exc}; this mount is ignored",
                    path,
                    locate(text, args[index]),
                )
            )
            continue
        if note:
            diagnostics.append(Diagnostic("warning", "mount-source", f"{field_name}: {note}", path, locate(text, args[index])))
        if mount:
            mounts.append(mount)


def _mount_from_spec(kind: str, spec: str, ctx: _Context, origin: str, path: str) -> tuple[Mount | None, str | None]:
    """(mount or None for a named/anonymous volume, a warning or None)."""
    parts = (split_volume if kind == "volume" else split_mount)(_substitute(spec, ctx))
    if parts is None:
        return None, None
    src, dst, opts = parts
    if not dst.startswith("/"):
        raise Unresolved(f"the container path {dst!r} is not absolute")
    note = None
    if src.startswith("~"):
        raise Unresolved("'~' is not expanded without a shell; use ${userHome}")
    if not os.path.isabs(src):
        if not (src in (".", "..") or src.startswith(("./", "../", ".\\", "..\\"))):
            return None, None  # a named volume, not a host path
        src = os.path.join(ctx.folder, src)
        note = "relative source resolved against the workspace folder (the server's working directory)"
    try:
        source = canonical(src)
    except ValueError as exc:
        raise Unresolved(str(exc)) from None
    if not os.path.exists(source):
        note = f"the mount source {source} does not exist"
    mode: Literal["ro", "rw"] = "ro" if opts & {"ro", "readonly"} else "rw"
    return Mount(source, posixpath.normpath(dst), mode, origin, path), note




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
        data, text, error = load_json(path, comments=dialect == "vscode")
        if error or not isinstance(data, dict):
            continue
        ctx = _Context(folder, env, tuple(workspace_folders), dialect)
        for key in SERVER_KEYS:
            servers = data.get(key)
            if not isinstance(servers, dict):
                continue
            for name, server in servers.items():
                if isinstance(server, dict):
                    at = locate(text, name)
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
        except (Unresolved, ValueError) as exc:
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
