"""What a trace found and proposes (``TraceResult``, ``Grant``), and the proposal as data and TOML.

The TOML is rendered by tomlkit; every comment is one escaped line (``one_line``, ``lsp_bridge.core.terminal_text``):
a command line holding a newline cannot end a comment and become live TOML.
"""

from __future__ import annotations

import hashlib
import os
import re
from dataclasses import dataclass, field

from lsp_bridge.core.paths import is_within
from lsp_bridge.core.terminal_text import one_line


@dataclass
class Grant:
    id: str
    path: str  # absolute
    kind: str  # file | directory
    group: str
    files: int = 1
    mount: bool = False
    note: str = ""
    excludes: tuple[str, ...] = ()
    denies: tuple[str, ...] = ()  # the deny globs of the rules in force, relative to path (probed by validate)


@dataclass
class TraceResult:
    roots: list[str]
    union: list[str]
    command: list[str]
    exit_code: int
    outside: list[dict] = field(default_factory=list)  # {"path", "ops", "group"}
    grants: list[Grant] = field(default_factory=list)
    refused: list[dict] = field(default_factory=list)  # {"path", "reason"}
    left_out: list[dict] = field(default_factory=list)  # {"path", "reason"}: new every run, never proposed
    packages: list[dict] = field(default_factory=list)  # sibling workspace packages offered as roots
    quiet_failures: list[dict] = field(default_factory=list)  # {"path", "name", ...}
    rounds: int = 1
    timed_out: bool = False
    mode: str = "one-pass"
    user_file: str = ""
    output: str | None = None  # the command's output (its tail), when captured

    def to_json(self) -> dict:
        base = self.roots[0] if self.roots else "/"
        return {
            "command": self.command,
            "exit_code": self.exit_code,
            "mode": self.mode,
            "rounds": self.rounds,
            "timed_out": self.timed_out,
            "roots": self.roots,
            "union": self.union,
            "outside": self.outside,
            "proposed": {
                "paths": [_rule_json(g, base) for g in self.grants],
                "mounts": [{"source": _shown(g.path, base), "target": g.path, "mode": "ro"}
                           for g in self.grants if g.mount],
            },
            "refused": self.refused,
            "left_out": self.left_out,
            "packages": self.packages,
            "quiet_failures": self.quiet_failures,
            "user_file": self.user_file,
            **({"output": self.output} if self.output is not None else {}),
            "snippet": snippet(self),
        }


def _rule_json(grant: Grant, base: str) -> dict:
    rule: dict[str, object] = {"id": grant.id, "path": _shown(grant.path, base), "policies": {"read": "allow", "write": "deny"},
            "kind": grant.kind, "group": grant.group}
    if grant.kind == "directory":
        rule["files_read"] = grant.files
    if grant.excludes:
        rule["excludes"] = list(grant.excludes)
    return rule


def _shown(path: str, base: str = "") -> str:
    """How a grant's path is written: '~/...' in the home, else absolute.

    Grants belong in the user file (a project file's allow outside the editor's
    folders is reduced to request), which is shared by every project: no relative paths."""
    home = os.path.realpath(os.path.expanduser("~"))
    if home not in ("/", "") and is_within(path, home) and path != home:
        return "~/" + os.path.relpath(path, home)
    return path


# ---------------------------------------------------------------- the proposal as data and TOML

DESCRIPTIONS = {"store": "package store", "git": "git state of the worktree", "config": "configuration file",
                "workspace": "first-party workspace package"}


def stable_id(group: str, path: str) -> str:
    """The same path always gets the same id; two paths never share one (a digest of the path)."""
    name = re.sub(r"[^A-Za-z0-9_.-]+", "-", os.path.basename(path.rstrip("/")) or "root").strip("-.") or "root"
    digest = hashlib.sha256(path.encode("utf-8", "surrogateescape")).hexdigest()[:8]
    return f"trace-{group}-{name[:40]}-{digest}"


def describe(grant: Grant) -> str:
    desc = DESCRIPTIONS.get(grant.group, grant.group)
    if grant.kind == "directory":
        desc += f", {grant.files} file{'s' if grant.files != 1 else ''} read in it"
    if grant.note:
        desc += f"; {grant.note}"
    return desc


def rules(result: TraceResult) -> list[dict]:
    """The ``[[paths]]`` rules (fields of ``core.grants.merge``), in proposal order."""
    out = []
    for grant in result.grants:
        rule: dict = {"id": grant.id, "path": _shown(grant.path), "policies": {"read": "allow", "write": "deny"}}
        if grant.excludes:
            rule["excludes"] = list(grant.excludes)
        rule["comment"] = one_line(describe(grant))
        out.append(rule)
    return out


def mounts(result: TraceResult) -> list[dict]:
    return [{"source": _shown(g.path), "target": g.path, "mode": "ro"} for g in result.grants if g.mount]


def snippet(result: TraceResult) -> str:
    """The proposal as TOML, rendered by tomlkit (every comment one escaped line)."""
    import shlex

    import tomlkit

    doc = tomlkit.document()
    doc.add(tomlkit.comment("Proposed by `rootguard trace` for: "
                            + one_line(" ".join(shlex.quote(a) for a in result.command))))
    doc.add(tomlkit.comment("Read-only grants of the named files the command used outside its roots."))
    doc.add(tomlkit.comment("Merge them into your user file (" + one_line(_shown(result.user_file))
                            + ") with `rootguard trace --write`."))
    for item in result.left_out[:20]:
        doc.add(tomlkit.comment(one_line(f"left out: {item['path']} ({item['reason']})")))
    if len(result.left_out) > 20:
        doc.add(tomlkit.comment(f"left out: {len(result.left_out) - 20} more (see the report)"))
    for package in result.packages:
        doc.add(tomlkit.comment(one_line(package_line(package))))
    if not result.grants:
        doc.add(tomlkit.comment("(nothing to grant)"))
        return tomlkit.dumps(doc)
    paths = tomlkit.aot()
    for rule in rules(result):
        table = tomlkit.table()
        for key in ("id", "path"):
            table[key] = rule[key]
        policies = tomlkit.inline_table()
        policies.update(rule["policies"])
        table["policies"] = policies
        if "excludes" in rule:
            table["excludes"] = rule["excludes"]
        table.comment(rule["comment"])
        paths.append(table)
    doc["paths"] = paths
    found = mounts(result)
    if found:
        aot = tomlkit.aot()
        for mount in found:
            table = tomlkit.table()
            table.update(mount)
            aot.append(table)
        doc["mounts"] = aot
    text = tomlkit.dumps(doc)
    tomlkit.parse(text)  # what we print must parse (and does: every value went through tomlkit)
    return text


def package_line(package: dict) -> str:
    creds = package.get("credentials", [])
    cost = (f"{package['files']} files, {package['bytes'] // 1024} KiB, {len(creds)} credential file"
            f"{'s' if len(creds) != 1 else ''}")
    if creds:
        cost += " (kept out: " + ", ".join(c.split(": ", 1)[0] for c in creds[:5]) + ")"
    if package.get("status") == "refused":
        return f"first-party package {package['path']} NOT offered: {package.get('reason', '')}"
    return f"first-party package {package['path']} offered read-only: {cost}"


