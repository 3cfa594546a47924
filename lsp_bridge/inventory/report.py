"""Presenting a session: the JSON of ``rootguard roots`` and its readable form.

Shared by the CLI and the language server so both say the same thing.
"""

from __future__ import annotations

from lsp_bridge.core.diagnostics import Diagnostic


# Findings of the mount plan: worth a warning only when something is mounted.
MOUNT_FINDINGS = ("mount-unrescuable-link", "mount-file-outside-repository", "mount-scan-truncated")


def warnings_of(diagnostics) -> list[dict]:
    """Errors and warnings for a status: the message says where once, never the severity again."""
    return [
        {"severity": d.severity, "code": d.code, "message": _where(d) + d.message, "file": d.file}
        for d in diagnostics
        if d.severity in ("error", "warning")
    ]


def _where(d: Diagnostic) -> str:
    if not d.file or d.message.startswith(d.file):
        return ""
    where = d.file
    if d.range is not None:
        where += f":{d.range.start_line + 1}:{d.range.start_column + 1}"
    return where + ": "


def quiet_mount_findings(reconciliation) -> tuple[Diagnostic, ...]:
    """The reconciliation's diagnostics, mount-plan findings lowered to information when
    no mount or container is configured (they stay in the report, not in the warnings)."""
    if reconciliation.mounts:
        return tuple(reconciliation.diagnostics)
    from dataclasses import replace

    return tuple(
        replace(d, severity="information")
        if d.severity == "warning" and (d.code in MOUNT_FINDINGS or d.code.startswith("tsconfig-"))
        else d
        for d in reconciliation.diagnostics
    )


def roots_report(session, *, with_mounts: bool = True) -> dict:
    """The ``rootguard roots --json`` object (PRODUCT.md)."""
    scope = session.scope
    data = scope.to_json()
    mounts = mounts_report(session) if with_mounts else None
    data["mounts"] = mounts.to_json() if mounts is not None else None
    diags = list(session.diagnostics)
    if mounts is not None:
        diags += [d for d in quiet_mount_findings(mounts) if d not in diags]
    data["warnings"] = warnings_of(diags)
    return data


def mounts_report(session):
    """Mount reconciliation for the session's union (configured and MCP-config mounts)."""
    from lsp_bridge.core import worktrees
    from lsp_bridge.inventory.mounts import mounts_from_mcp_configs, reconcile

    configured = []
    diagnostics: list[Diagnostic] = []
    for folder, config in session.configs():
        configured += [m for m in config.mounts if m not in configured]
        found, diags = mounts_from_mcp_configs(folder, session.env)
        configured += [m for m in found if m not in configured]
        diagnostics += diags
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
