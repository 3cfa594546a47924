"""The tools' I/O, reached only after an allow: one runner per tool, through the race-safe ``safe_io``."""

from __future__ import annotations

import stat
from datetime import UTC, datetime
from itertools import compress
from typing import Any, Protocol

from lsp_bridge.core.globs import GlobError, GlobSet
from lsp_bridge.core.resolver import (
    Resolved,
)
from lsp_bridge.mcp import safe_batch, safe_io, safe_listing
from lsp_bridge.mcp.tool_checks import canonical_rel, check_size, decided, encode, io, refuse_outside
from lsp_bridge.mcp.tool_model import SKIP_DIRS, Limits, Plan, ToolError


class ToolHost(Protocol):
    """What a runner asks of ``FileTools`` (a Protocol, so that this module does not import it)."""

    limits: Limits
    listings: safe_listing.KeptListings

    def listing_needs_stats(self, device: int) -> bool | frozenset[int]: ...

    def peek(self, root: str, relative: str, need: str = "read") -> tuple[str, Resolved | None]: ...

    def peek_listing(self, directory: Resolved, listing: safe_listing.Listing, need: str = "read") -> list[str]: ...


def _text_of(data: bytes) -> str | None:
    if b"\x00" in data[:8192]:
        return None
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        return None


def _resolved(resolved: Resolved | None) -> Resolved:
    """A decided access's resolved path: only resolved targets reach the I/O."""
    assert resolved is not None  # an unresolved target is denied before any run_* call
    return resolved


def _read_text(tools: ToolHost, resolved: Resolved) -> str:
    data = safe_io.read_file(*io(resolved), limit=tools.limits.read_bytes, decided=decided(resolved))
    text = _text_of(data)
    if text is None:
        raise ToolError("binary_file", f"{resolved.relative} is a binary file; it cannot be edited as text")
    return text


def run_read_file(tools: ToolHost, plan: Plan) -> dict:
    resolved = _resolved(plan.accesses[0].resolved)
    data = safe_io.read_file(*io(resolved), limit=tools.limits.read_bytes, decided=decided(resolved))
    text = _text_of(data)
    return {"project_id": plan.project_id, "relative_path": resolved.relative, "size": len(data),
            "binary": text is None, "text": text}


LISTING_KINDS = (("directory", "directories"), ("file", "files"), ("symlink", "links"), ("other", "other"))


def run_list_directory(tools: ToolHost, plan: Plan) -> dict:
    """The entries the policy shows, by kind, in name order; denied ones only counted (``hidden``).

    ``directories``, ``files``, ``links``, ``other``: names; ``needs_approval``: the names
    among them whose read needs an approval. A name's own path is the listing's
    ``relative_path``, ``/`` and the name (a ``%`` in it written ``%25``).
    """
    resolved = _resolved(plan.accesses[0].resolved)
    refuse_outside(resolved, "list_directory")
    listing = safe_listing.list_columns(*io(resolved), file_stats=tools.listing_needs_stats, kept=tools.listings)
    verdicts = tools.peek_listing(resolved, listing)
    names, kinds = listing.names, listing.kinds
    most = tools.limits.list_entries
    hidden, truncated = 0, False
    asks: list[str] = []
    if len(names) > most or "deny" in verdicts or "request" in verdicts:
        shown_names: list[str] = []
        shown_kinds: list[str] = []
        for name, kind, verdict in zip(names, kinds, verdicts, strict=True):
            if verdict == "deny":
                hidden += 1
                continue
            if len(shown_names) >= most:
                truncated = True
                break
            shown_names.append(name)
            shown_kinds.append(kind)
            if verdict == "request":
                asks.append(name)
        names, kinds = shown_names, shown_kinds
    result: dict[str, Any] = {"project_id": plan.project_id, "relative_path": resolved.relative}
    for kind, key in LISTING_KINDS:
        count = kinds.count(kind)
        result[key] = ([] if not count else names if count == len(names)
                       else list(compress(names, map(kind.__eq__, kinds))))
    result.update(needs_approval=asks, hidden=hidden, truncated=truncated)
    return result


def run_search_files(tools: ToolHost, plan: Plan) -> dict:
    resolved = _resolved(plan.accesses[0].resolved)
    args = plan.args
    pattern = args.get("pattern") or "*"
    query = args.get("query") or None
    fold = not args.get("case_sensitive", False)
    most = args.get("max_results", tools.limits.search_results)
    refuse_outside(resolved, "search_files")
    start = canonical_rel(resolved)
    if ".git" in start.split("/") or ".git" in resolved.relative.split("/"):
        raise ToolError("invalid_arguments", "search_files never searches inside .git")
    try:
        matcher = GlobSet([pattern.lower() if fold else pattern])
    except GlobError as err:
        raise ToolError("invalid_arguments", f"pattern {pattern!r} is not a valid glob: {err}") from None
    if not stat.S_ISDIR(safe_io.file_info(resolved.root, start).st_mode):
        raise ToolError("not_a_directory", f"{resolved.relative} is not a directory; search_files searches below one")
    found: list[dict] = []
    counts = {"needs_approval": 0, "binary_skipped": 0}  # nothing counted about names it may not show
    truncated = False
    scanned = 0
    for path in safe_listing.walk_files(resolved.root, start, skip_dirs=SKIP_DIRS, limit=tools.limits.search_files):
        scanned += 1
        below = path[len(start) + 1:] if start else path
        if not matcher.matches(below.lower() if fold else below):
            continue
        verdict, target = tools.peek(resolved.root, path)
        if verdict == "deny":
            continue
        if verdict == "request":
            counts["needs_approval"] += 1
            if query is None:
                found.append({"relative_path": encode(path), "needs_approval": True})
        elif query is None:
            found.append({"relative_path": encode(path)})
        else:
            found.extend(_grep(tools, _resolved(target), path, query, fold, most - len(found), counts))
        if len(found) >= most:
            truncated = True
            found = found[:most]
            break
    else:
        truncated = scanned >= tools.limits.search_files
    return {"project_id": plan.project_id, "relative_path": resolved.relative, "pattern": pattern,
            "matches": found, "truncated": truncated, **counts}


def _grep(tools: ToolHost, target: Resolved, shown: str, query: str, fold: bool, room: int, counts: dict) -> list[dict]:
    try:
        data = safe_io.read_file(*io(target), limit=tools.limits.read_bytes, decided=decided(target))
    except safe_io.SafeIOError:
        return []
    text = _text_of(data)
    if text is None:
        counts["binary_skipped"] += 1
        return []
    needle = query.lower() if fold else query
    hits = []
    for number, line in enumerate(text.splitlines(), 1):
        if needle in (line.lower() if fold else line):
            hits.append({"relative_path": encode(shown), "line": number, "text": line[:240]})
            if len(hits) >= room:
                break
    return hits


def run_get_file_info(tools: ToolHost, plan: Plan) -> dict:
    resolved = _resolved(plan.accesses[0].resolved)
    info = safe_io.file_info(*io(resolved))
    safe_io.require_decided(info, decided(resolved), resolved.relative)
    kind = ("directory" if stat.S_ISDIR(info.st_mode) else "file" if stat.S_ISREG(info.st_mode)
            else "symlink" if stat.S_ISLNK(info.st_mode) else "other")
    modified = datetime.fromtimestamp(info.st_mtime, UTC).isoformat(timespec="seconds").replace("+00:00", "Z")
    return {"project_id": plan.project_id, "relative_path": resolved.relative, "type": kind, "size": info.st_size,
            "modified": modified, "permissions": oct(stat.S_IMODE(info.st_mode)),
            "through_symlink": resolved.traversed_symlink, "canonical_relative_path": encode(canonical_rel(resolved))}


def run_write_file(tools: ToolHost, plan: Plan) -> dict:
    resolved = _resolved(plan.accesses[0].resolved)
    data = plan.args["content"].encode("utf-8")
    created = safe_io.write_file(*io(resolved), data)
    return {"project_id": plan.project_id, "relative_path": resolved.relative, "created": created, "size": len(data)}


def apply_edits(text: str, edits: list[dict], shown: str) -> str:
    """Exact-match replacements, in order; each ``old_text`` must occur exactly once."""
    for index, edit in enumerate(edits):
        count = text.count(edit["old_text"])
        if count == 0:
            raise ToolError("edit_not_found", f"{shown}: edit {index + 1}: old_text was not found; nothing was changed")
        if count > 1:
            raise ToolError("edit_ambiguous", f"{shown}: edit {index + 1}: old_text occurs {count} times; "
                                              "include more surrounding text; nothing was changed")
        text = text.replace(edit["old_text"], edit["new_text"], 1)
    return text


def unified_diff(before: str, after: str, shown: str) -> str:
    import difflib  # only edits show a diff: not on every server's start

    return "".join(difflib.unified_diff(before.splitlines(True), after.splitlines(True), f"a/{shown}", f"b/{shown}"))


def run_edit_file(tools: ToolHost, plan: Plan) -> dict:
    resolved = _resolved(plan.accesses[0].resolved)
    before = _read_text(tools, resolved)
    after = apply_edits(before, plan.args["edits"], resolved.relative)
    check_size(len(after.encode("utf-8")), resolved.relative, tools.limits)
    dry_run = plan.args.get("dry_run", False)
    if not dry_run:
        safe_io.write_file(*io(resolved), after.encode("utf-8"))
    return {"project_id": plan.project_id, "relative_path": resolved.relative, "edits": len(plan.args["edits"]),
            "dry_run": dry_run, "diff": unified_diff(before, after, resolved.relative)}


def run_move_file(tools: ToolHost, plan: Plan) -> dict:
    access = plan.accesses[0]
    src, dst = _resolved(access.resolved), _resolved(access.dest)
    safe_io.move_file(*io(src), *io(dst))
    return {"project_id": plan.project_id, "source": src.relative, "destination": dst.relative}


def run_delete_file(tools: ToolHost, plan: Plan) -> dict:
    resolved = _resolved(plan.accesses[0].resolved)
    safe_io.delete_file(*io(resolved))
    return {"project_id": plan.project_id, "relative_path": resolved.relative, "deleted": True}


def run_apply_patch(tools: ToolHost, plan: Plan) -> dict:
    """Every change is prepared (read, matched) before the first write; then applied in order."""
    prepared = []
    for change, access in zip(plan.args["changes"], plan.accesses, strict=False):
        resolved = _resolved(access.resolved)
        try:
            prepared.append(_prepare_change(tools, change, resolved))
        except safe_io.SafeIOError as err:
            raise ToolError(err.code, f"{resolved.relative}: {err.message}; nothing was changed") from None
    done: list[dict] = []
    with safe_batch.Batch() as batch:
        try:
            for resolved, action, data, diff in prepared:  # every file staged before the first rename
                if action == "deleted":
                    batch.stage_delete(*io(resolved))
                else:
                    created = batch.stage_write(*io(resolved), data)
                    action = "created" if created and action == "written" else action
                item = {"relative_path": resolved.relative, "action": action}
                if diff is not None:
                    item["diff"] = diff
                done.append(item)
            batch.commit()
        except safe_io.SafeIOError as err:
            raise ToolError(err.code, f"{err.message}; nothing was changed") from None
    return {"project_id": plan.project_id, "changes": done}


def _prepare_change(tools: ToolHost, change: dict, resolved: Resolved):
    if "delete" in change:
        info = safe_io.file_info(*io(resolved))
        if not stat.S_ISREG(info.st_mode):
            raise ToolError("not_found", f"{resolved.relative} is not a regular file; nothing was changed")
        return resolved, "deleted", None, None
    if "content" in change:
        return resolved, "written", change["content"].encode("utf-8"), None
    before = _read_text(tools, resolved)
    after = apply_edits(before, change["edits"], resolved.relative)
    check_size(len(after.encode("utf-8")), resolved.relative, tools.limits)
    return resolved, "edited", after.encode("utf-8"), unified_diff(before, after, resolved.relative)


RUNNERS = {
    "read_file": run_read_file,
    "list_directory": run_list_directory,
    "search_files": run_search_files,
    "get_file_info": run_get_file_info,
    "write_file": run_write_file,
    "edit_file": run_edit_file,
    "move_file": run_move_file,
    "delete_file": run_delete_file,
    "apply_patch": run_apply_patch,
}
