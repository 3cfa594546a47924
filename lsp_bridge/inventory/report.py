"""Presenting a session: the JSON of ``rootguard roots`` and its readable form.

Shared by the CLI and the language server so both say the same thing.
"""

from __future__ import annotations

from lsp_bridge.core.diagnostics import Diagnostic


def warnings_of(diagnostics) -> list[dict]:
    return [
        {"severity": d.severity, "code": d.code, "message": d.format() if d.file else d.message}
        for d in diagnostics
        if d.severity in ("error", "warning")
    ]


def roots_report(session, *, with_mounts: bool = True) -> dict:
    """The ``rootguard roots --json`` object (PRODUCT.md)."""
    scope = session.scope
    data = scope.to_json()
    mounts = mounts_report(session) if with_mounts else None
    data["mounts"] = mounts.to_json() if mounts is not None else None
    diags = list(session.diagnostics)
    if mounts is not None:
        diags += [d for d in mounts.diagnostics if d not in diags]
    data["warnings"] = warnings_of(diags)
    return data


def mounts_report(session):
    """Mount reconciliation for the session's union (configured and MCP-config mounts)."""
    from lsp_bridge.core import worktrees
    from lsp_bridge.inventory.mounts import mcp_server_confinement, mounts_from_mcp_configs, reconcile

    configured = []
    diagnostics: list[Diagnostic] = []
    for folder, config in session.configs():
        configured += [m for m in config.mounts if m not in configured]
        found, diags = mounts_from_mcp_configs(folder, session.env)
        configured += [m for m in found if m not in configured]
        diagnostics += diags
        diagnostics += mcp_server_confinement(folder, session.env, session.scope.union.paths,
                                              workspace_folders=session.folders)
    toplevel = None
    if session.scope.folders:
        toplevel = worktrees.locate(session.scope.folders[0]).toplevel
    result = reconcile(session.scope.union.paths, configured, repo_toplevel=toplevel)
    if diagnostics:
        from dataclasses import replace

        result = replace(result, diagnostics=tuple(diagnostics) + tuple(result.diagnostics))
    return result


def format_roots(data: dict) -> str:
    lines = [f"Effective union ({len(data['union'])} {'entry' if len(data['union']) == 1 else 'entries'}):"]
    for entry in data["entries"]:
        lines.append(f"  {entry['path']}    ({entry['reason']})")
    if not data["union"]:
        lines.append("  (empty: every access is denied)")
    if data["shadowed"]:
        lines.append("Shadowed (contained in another entry, so they add nothing):")
        for s in data["shadowed"]:
            lines.append(f"  {s['path']}    inside {s['by']}")
    if data["worktrees"]:
        lines.append("Linked worktrees:")
        for w in data["worktrees"]:
            flags = "".join([" locked" if w["locked"] else "", " prunable" if w["prunable"] else ""])
            lines.append(f"  {w['path']}    mode={w['mode']}{flags}")
    mounts = data.get("mounts")
    if mounts:
        text = format_mounts(mounts, heading=False)
        if text:
            lines.append("Mounts:")
            lines.append(text)
    if data["warnings"]:
        lines.append("Warnings:")
        lines += [f"  {w['severity']}: {w['message']}" for w in data["warnings"]]
    return "\n".join(lines)


def format_mounts(data: dict, *, heading: bool = True) -> str:
    lines = ["Mount reconciliation:"] if heading else []
    for m in data.get("mounts", []):
        lines.append(f"  {m['source']} -> {m['target']} ({m['mode']}, {m.get('origin', 'config')})")
    for root in data.get("roots_without_mount", []):
        lines.append(f"  ! root {root} has no mount behind it: the server will see nothing there")
    for m in data.get("mounts_outside_union", []):
        lines.append(f"  ! mount {m['source']} is outside the union: the kernel allows what the server refuses")
    if data.get("suggested"):
        lines.append("  Suggested narrow mount set:")
        for s in data["suggested"]:
            lines.append(f"    {s['source']} -> {s['target']}:{s['mode']}    ({s['reason']})")
    for item in data.get("first_party", []):
        lines.append(f"  first-party link {item['link']} -> {item['target']}: mount it only if you mean to hand it over")
    for item in data.get("unrescuable", []):
        lines.append(f"  absolute link {item['link']} -> {item['target']}: no mount can rescue it")
    for path in data.get("single_files", []):
        lines.append(f"  single file above the root to mount: {path}")
    return "\n".join(lines)
