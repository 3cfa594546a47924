"""Presenting a session: the JSON of ``rootguard roots`` and its readable form.

Shared by the CLI and the language server so both say the same thing.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from lsp_bridge.core.diagnostics import Diagnostic
from lsp_bridge.inventory.text import LIST_LIMIT, one_line, plural, show_path

if TYPE_CHECKING:
    from lsp_bridge.inventory.mounts import Reconciliation

# Findings of the mount plan: worth a warning only when something is mounted.
MOUNT_FINDINGS = ("mount-unrescuable-link", "mount-file-outside-repository", "mount-scan-truncated")
# What a repository's toolchain file asked for and was refused, or too much of it: always a warning.
KEPT_FINDINGS = ("tsconfig-extends-refused", "tsconfig-extends-too-many", "tsconfig-extends-too-long",
                 "tsconfig-too-large", "workspace-packages-refused")


def warnings_of(diagnostics) -> list[dict]:
    """Errors and warnings as ``{"severity", "code", "message"}``; the message leads with
    file:line:column when there is one (and never repeats the severity)."""
    return [
        {"severity": d.severity, "code": d.code, "message": _located(d)}
        for d in diagnostics
        if d.severity in ("error", "warning")
    ]


def quiet_mount_findings(reconciliation) -> tuple[Diagnostic, ...]:
    """The reconciliation's diagnostics, mount-plan findings lowered to information when
    no mount or container is configured (they stay in the report, not in the warnings)."""
    if reconciliation.mounts:
        return tuple(reconciliation.diagnostics)
    from dataclasses import replace

    return tuple(
        replace(d, severity="information")
        if d.severity == "warning" and (d.code in MOUNT_FINDINGS or d.code.startswith("tsconfig-"))
        and d.code not in KEPT_FINDINGS
        else d
        for d in reconciliation.diagnostics
    )


def _located(d: Diagnostic) -> str:
    if not d.file:
        return d.message
    where = d.file
    if d.range is not None:
        where += f":{d.range.start_line + 1}:{d.range.start_column + 1}"
    return d.message if d.message.startswith(d.file) else f"{where}: {d.message}"


def roots_report(session, *, with_mounts: bool = True) -> dict:
    """The ``rootguard roots --json`` object (PRODUCT.md).

    Its mounts come from the package manager's layout, not a walk of the union
    (``mounts_report(walk=False)``): ``rootguard roots`` costs the same on any tree.
    """
    scope = session.scope
    data = scope.to_json()
    mounts = mounts_report(session, walk=False) if with_mounts else None
    if mounts is not None:
        mounts = settle_toolchain(session, mounts)  # the same set run mounts (walk=False)
    data["mounts"] = mounts.to_json() if mounts is not None else None
    data["toolchain"] = toolchain_report(session)
    diags = list(session.diagnostics)
    if mounts is not None:
        diags += [d for d in quiet_mount_findings(mounts) if d not in diags]
    data["warnings"] = warnings_of(diags)
    return data


def settle_toolchain(session, mounts: Reconciliation) -> Reconciliation:
    """Give ``session`` the toolchain set ``mounts`` found (unless it has one), as ``rootguard run`` does,
    and ``mounts`` without what that leaves held for the person's approval (never suggested)."""
    if session.toolchain() is None:
        session.set_toolchain(mounts.toolchain(), mounts.refused)
    state = session.toolchain()
    return mounts.without_held(state[1]) if state is not None else mounts


def toolchain_report(session) -> dict | None:
    """The toolchain rules of ``session`` (``core.toolchain``) and how the engine decides each one's path:
    ``rules`` in force (``decision``/``source``: the rule that decides, a configured one when it matches),
    ``held`` (new, asked for by a file the agent can write: not mounted until approved) and ``refused``."""
    state = session.toolchain()
    if state is None:
        return None
    in_force, held, refused = state
    rules = []
    for mount in in_force:
        decision = session.policy.decide("read", mount.path)
        rules.append({**mount.to_json(), "source": "toolchain", "decision": decision.decision,
                      "decided_by": decision.rule_source, "rule": decision.rule, "why": decision.reason})
    return {"rules": rules, "held": [m.to_json() for m in held], "refused": [r.to_json() for r in refused]}


def format_toolchain(data: dict) -> list[str]:
    lines = ["Toolchain rules (source toolchain: read-only, only where no configured rule decides):"]
    for rule in data["rules"]:
        by = "" if rule["decided_by"] == "toolchain" else f", decided by a {rule['decided_by'] or 'baseline'} rule"
        lines.append(f"  {rule['decision']}  {show_path(rule['path'])}    ({rule['kind']}{by}: {one_line(rule['reason'])})")
    if not data["rules"]:
        lines.append("  (none)")
    for mount in data["held"]:
        lines.append(f"  held  {show_path(mount['path'])}    (new, asked for by {show_path(mount['cause'] or '')}, "
                     "which the agent can write: not mounted until rootguard config approve)")
    for refusal in data["refused"]:
        asked = f", asked for by {show_path(refusal['cause'])}" if refusal["cause"] else ""
        lines.append(f"  refused  {show_path(refusal['path'])}    ({one_line(refusal['reason'])}{asked})")
    return lines


def mounts_report(session, *, walk: bool = True, narrow: Sequence[str] | None = None):
    """Mount reconciliation for the session's union (configured and MCP-config mounts).

    ``walk=False``: links from the package manager's layout only (``reconcile``).
    ``narrow``: the union the person acknowledged, when the session's union is wider: the
    suggested narrow mounts (and their docker arguments) are made for it, never for the widened
    union, and a suggestion reaching outside it says so (``beyond_acknowledged``)."""
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
    result = reconcile(session.scope.union.paths, configured, repo_toplevel=toplevel, walk=walk)
    if narrow is not None and tuple(narrow) != tuple(session.scope.union.paths):
        from dataclasses import replace

        suggestion = reconcile(narrow, [], repo_toplevel=toplevel, walk=walk) if narrow else None
        result = replace(result, suggested=suggestion.suggested if suggestion else (),
                         single_files=suggestion.single_files if suggestion else (), suggested_for=tuple(narrow))
    if narrow is not None:
        from dataclasses import replace

        from lsp_bridge.core.paths import is_within

        marked = tuple(replace(s, beyond_acknowledged=True,
                               reason=f"{s.reason} (outside the acknowledged union: this hands over more)")
                       if not any(is_within(s.source, r) for r in narrow) else s for s in result.suggested)
        result = replace(result, suggested=marked)
    if diagnostics:
        from dataclasses import replace

        result = replace(result, diagnostics=tuple(diagnostics) + tuple(result.diagnostics))
    state = session.toolchain()  # a held mount is never suggested (the language server's status too)
    return result.without_held(state[1] if state is not None else session.held_toolchain(result.toolchain()))


def union_notes(before, after) -> list[str]:
    """What a person should know about how the union followed the folders (sessions before and after).

    ``ROOTGUARD_ROOTS`` or ``workspace.roots`` replace the folders; ``worktrees = "include"``
    adds the same folder of every sibling checkout. Said where it happens, in true words.
    """
    configs = before.configs()
    config = configs[0][1] if configs else None
    if config is not None and config.roots is not None:
        if config.roots_source == "environment":
            return ["ROOTGUARD_ROOTS sets the roots, so the folders given here do not change the union"]
        return [f"workspace.roots in the {config.roots_source} configuration sets the roots, "
                "so the folders given here do not change the union"]
    old = set(before.scope.union.paths)
    added = [e for e in after.scope.union.entries if e.origin == "worktree" and e.path not in old]
    return [f"{show_path(e.path)} is there because worktrees = \"include\" adds the same folder of every "
            "checkout of the repository (set worktrees = \"request\" or \"ignore\" to change that)"
            for e in added]


def format_roots(data: dict) -> str:
    lines = [f"Effective union ({plural(len(data['union']), 'entry', 'entries')}):"]
    for entry in data["entries"]:
        lines.append(f"  {show_path(entry['path'])}    ({one_line(entry['reason'])})")
    if not data["union"]:
        lines.append("  (empty: every access is denied)")
    if data["shadowed"]:
        lines.append("Shadowed (contained in another entry, so they add nothing):")
        for s in data["shadowed"]:
            lines.append(f"  {show_path(s['path'])}    inside {show_path(s['by'])}")
    if data["worktrees"]:
        lines.append("Linked worktrees:")
        for w in data["worktrees"]:
            flags = "".join([" locked" if w["locked"] else "", " prunable" if w["prunable"] else ""])
            lines.append(f"  {show_path(w['path'])}    mode={w['mode']}{flags}")
        added = [e for e in data["entries"] if e.get("origin") == "worktree"]
        if added and data["worktrees"][0]["mode"] == "include":
            lines.append(f"  worktrees = \"include\" (the default) added {plural(len(added), 'folder')} "
                         "of the other checkouts to the union; set worktrees = \"request\" or \"ignore\" "
                         "in the configuration to change that")
    if data.get("toolchain"):
        lines += format_toolchain(data["toolchain"])
    mounts = data.get("mounts")
    if mounts:
        text = format_mounts(mounts, heading=False)
        if text:
            lines.append("Mounts:")
            lines.append(text)
    if data["warnings"]:
        lines.append("Warnings:")
        lines += [f"  {w['severity']}: {one_line(w['message'])}" for w in data["warnings"]]
    return "\n".join(lines)


def format_mounts(data: dict, *, heading: bool = True) -> str:
    lines = ["Mount reconciliation:"] if heading else []
    for m in data.get("mounts", []):
        lines.append(f"  {show_path(m['source'])} -> {one_line(m['target'])} ({m['mode']}, {m.get('origin', 'config')})")
    for root in data.get("roots_without_mount", []):
        lines.append(f"  ! root {show_path(root)} has no mount behind it: the server will see nothing there")
    for m in data.get("mounts_outside_union", []):
        lines.append(f"  ! mount {show_path(m['source'])} is outside the union: "
                     "the kernel allows what the server refuses")
    if data.get("suggested"):
        lines.append("  Suggested narrow mount set:")
        for s in data["suggested"]:
            lines.append(f"    {show_path(s['source'])} -> {one_line(s['target'])}:{s['mode']}    ({one_line(s['reason'])})")
    for m in data.get("held", []):
        lines.append(f"  held, not suggested: {show_path(m['path'])}    (new, asked for by {show_path(m['cause'] or '')}, "
                     "which the agent can write: not mounted until rootguard config approve)")
    first_party = data.get("first_party", [])
    for item in first_party[:LIST_LIMIT]:
        what = ("package-store entry links back to a workspace sibling package"
                if item.get("via") == "store" else "first-party link")
        lines.append(f"  {what} {show_path(item['link'])} -> {show_path(item['target'])}: "
                     "left out; mount it only if you mean to hand it over")
    if len(first_party) > LIST_LIMIT:
        lines.append(f"  (+{len(first_party) - LIST_LIMIT:,} more first-party links; --json lists them all)")
    unrescuable = data.get("unrescuable", [])
    for item in unrescuable[:LIST_LIMIT]:
        lines.append(f"  unrescuable link {show_path(item['link'])} -> {show_path(item['target'])}: "
                     "no mount can rescue it")
    if len(unrescuable) > LIST_LIMIT:
        lines.append(f"  (+{len(unrescuable) - LIST_LIMIT:,} more such links; --json lists them all)")
    for path in data.get("single_files", []):
        lines.append(f"  single file above the root to mount: {show_path(path)}")
    if heading:  # rootguard roots shows them with the toolchain rules
        for refusal in data.get("refused", []):
            asked = f" (asked for by {show_path(refusal['cause'])})" if refusal.get("cause") else ""
            lines.append(f"  refused {show_path(refusal['path'])}{asked}: {one_line(refusal['reason'])}")
    if data.get("warnings"):
        lines.append("Warnings:")
        lines += [f"  {w['severity']}: {one_line(w['message'])}" for w in data["warnings"]]
    if heading and len(lines) == 1:
        lines.append("  (nothing to mount or reconcile)")
    return "\n".join(lines)
