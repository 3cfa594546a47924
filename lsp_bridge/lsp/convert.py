"""Our diagnostics and migrations, in lsprotocol's types (the LSP edge)."""

from __future__ import annotations

import os
import re
from collections import defaultdict

from lsprotocol import types

from lsp_bridge.core.diagnostics import Diagnostic
from lsp_bridge.core.settings import Source

_SEVERITY = {
    "error": types.DiagnosticSeverity.Error,
    "warning": types.DiagnosticSeverity.Warning,
    "information": types.DiagnosticSeverity.Information,
    "hint": types.DiagnosticSeverity.Hint,
}


def to_lsp(diag: Diagnostic) -> types.Diagnostic:
    r = diag.range
    rng = types.Range(
        start=types.Position(line=r.start_line, character=r.start_column) if r else types.Position(line=0, character=0),
        end=types.Position(line=r.end_line, character=r.end_column) if r else types.Position(line=0, character=1),
    )
    tags = [types.DiagnosticTag.Deprecated] if "deprecated" in diag.tags else None
    return types.Diagnostic(
        range=rng, message=diag.message, severity=_SEVERITY[diag.severity], code=diag.code, source="rootguard", tags=tags
    )


def group_by_file(diagnostics) -> dict[str, list[types.Diagnostic]]:
    grouped: dict[str, list[types.Diagnostic]] = defaultdict(list)
    for diag in diagnostics:
        if diag.file:
            grouped[diag.file].append(to_lsp(diag))
    return dict(grouped)


def buffer_diagnostics(tracker, path: str, text: str) -> list[types.Diagnostic]:
    """Diagnostics for an editor buffer holding a configuration file (saved or not)."""
    from lsp_bridge.core.config import diagnostics_for_text, parse_text

    is_user = path == tracker.user_config_path()
    source: Source = "user" if is_user else "project"
    base_dir = (tracker.session.scope.first_root if is_user else os.path.dirname(path)) or os.path.dirname(path)
    diags = list(diagnostics_for_text(text, path, source, base_dir))
    if not is_user and not any(d.severity == "error" for d in diags):
        diags += _reduced_allows(tracker, parse_text(text, path, source=source, base_dir=base_dir), text, path)
    return [to_lsp(d) for d in diags]


def disk_hints(tracker) -> list[Diagnostic]:
    """Information diagnostics for the project files on disk (rules reduced to request)."""
    from lsp_bridge.core.config import parse_text
    from lsp_bridge.core.config_files import read_config_text

    hints: list[Diagnostic] = []
    for path in {config.project_file for _, config in tracker.session.configs() if config.project_file}:
        text = read_config_text(path)[0]  # a regular file, never waited on (a FIFO swapped in)
        if text is None:
            continue
        parsed = parse_text(text, path, source="project", base_dir=os.path.dirname(path))
        hints += _reduced_allows(tracker, parsed, text, path)
    return hints


def _reduced_allows(tracker, parsed, text: str, path: str) -> list[Diagnostic]:
    """Information: a project rule that allows beyond the host baseline is reduced to request."""
    from lsp_bridge.core.diagnostics import Range
    from lsp_bridge.core.rules import reduced_to_request

    layer = getattr(parsed, "layer", None)
    rules = getattr(layer, "paths", ()) if layer is not None else ()
    union = tracker.session.scope.union
    found = []
    for rule in rules:
        allows = [op for op in ("read", "write", "delete") if getattr(rule, op) == "allow"]
        if not allows or not reduced_to_request(rule, rule.anchor, union):
            continue
        match = re.search(r'^\s*id\s*=\s*["\']' + re.escape(rule.id) + r'["\']', text, re.M)
        line = text.count("\n", 0, match.start()) if match else 0
        col = (match.start() - (text.rfind("\n", 0, match.start()) + 1)) if match else 0
        found.append(
            Diagnostic(
                "information",
                "project-allow-reduced",
                f"rule {rule.id!r} allows {', '.join(allows)} on {rule.anchor}, outside the host baseline: "
                "a project file cannot widen access, so these accesses need approval (request)",
                path,
                Range(line, col, line, col + len(match.group(0).strip()) if match else 1),
            )
        )
    return found


def migrate_edit(uri: str, path: str, text: str) -> types.WorkspaceEdit | None:
    """A whole-document edit with the ``rootguard config migrate`` result, or None."""
    from lsp_bridge.core.migrate import migrate_text, needs_migration

    try:
        if not needs_migration(text):
            return None
        result = migrate_text(text, path)
    except Exception:
        return None
    if getattr(result, "new_text", None) is None or not result.changed:
        return None  # refused (a boolean with no faithful translation), invalid, or nothing to do
    lines = text.split("\n")
    end = types.Position(line=len(lines) - 1, character=len(lines[-1]))
    edit = types.TextEdit(range=types.Range(start=types.Position(line=0, character=0), end=end), new_text=result.new_text)
    return types.WorkspaceEdit(changes={uri: [edit]})
