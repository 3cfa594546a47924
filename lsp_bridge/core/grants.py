"""Persistent grants: an "always allow" answer becomes a ``[[paths]]`` rule in the user file.

``always_rules`` maps the answer to rule fields (one rule per distinct path,
with the policies each target needs); ``write_always_rule`` writes one. Only
the user configuration file is ever written (seed 001: persistent grants
belong only in user-level configuration; a project file is refused). The file
is edited with tomlkit so the user's comments and formatting survive, checked
with the configuration validator before it replaces the old one, written
atomically (a temporary file in the same directory, then ``os.replace``) and
left with mode 0600. A missing file is created with ``version = 2``.
"""

from __future__ import annotations

import hashlib
import os
import time
from collections import Counter
from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING

import tomlkit
from tomlkit import TOMLDocument
from tomlkit.exceptions import TOMLKitError
from tomlkit.items import AoT

from lsp_bridge.core.atomic import atomic_write
from lsp_bridge.core.config import parse_text, user_config_path
from lsp_bridge.core.config_files import MAX_CONFIG_BYTES
from lsp_bridge.core.paths import read_regular
from lsp_bridge.core.settings import PROJECT_FILE_NAME, VERDICTS

if TYPE_CHECKING:
    from typing import Any

POLICY_NAMES = ("read", "write", "delete")
FIELDS = ("id", "path", "policies", "includes", "excludes", "follow_symlinks", "comment")


# What an "always" answer grants for each policy a target needs. A write grant
# keeps deletion asking: omitting ``delete`` would let it inherit ``allow``.
ALWAYS_POLICIES = {
    "read": {"read": "allow"},
    "write": {"write": "allow", "delete": "request"},
    "delete": {"delete": "allow"},
}


class GrantError(ValueError):
    """The rule was not written; the message names the file or field and why."""


def write_always_rule(user_config: str, rule_fields: Mapping[str, Any]) -> str:
    """Append one ``[[paths]]`` rule to the user configuration file; return its id.

    ``rule_fields``: ``path`` (absolute), ``policies`` (``{"read"|"write"|"delete":
    "allow"|"request"|"deny"}``, at least one), and optionally ``id``, ``includes``,
    ``excludes``, ``follow_symlinks`` and ``comment`` (written after the table
    header). An identical rule already present is not duplicated: its id is
    returned. Raises ``GrantError`` and leaves the file untouched otherwise.
    """
    target = _user_file(user_config)
    fields = _checked_fields(rule_fields)
    old_text = _read(target)
    rules = _paths_array(_parse(old_text, target), target) if old_text is not None else []
    same = _identical(rules, fields)
    if same is not None:
        return same
    ids = {str(r.get("id")) for r in rules}
    rule_id = fields.get("id") or _new_id(fields, ids)
    if rule_id in ids:
        raise GrantError(f"{target}: a [[paths]] rule with id {rule_id!r} already exists")
    new_text = _appended(old_text, _rule_text(rule_id, fields))
    _check_result(new_text, old_text, target, rule_id, fields)
    atomic_write(target, new_text, mode=0o600, dir_mode=0o700)
    return rule_id


def always_rules(targets: Iterable[tuple[str, str]], *, tool: str, client: str,
                 today: str | None = None) -> list[dict[str, Any]]:
    """The ``[[paths]]`` rule fields an "always" answer writes: one per distinct path.

    ``targets``: (canonical path, need) pairs, need one of read, write, delete.
    Each rule allows exactly the needs asked for (``ALWAYS_POLICIES``), never
    follows symbolic links, and says in its comment who asked and when.
    """
    needs: dict[str, set[str]] = {}
    for path, need in targets:
        if need not in ALWAYS_POLICIES:
            raise GrantError(f"{path}: cannot grant {need!r} for good (expected read, write or delete)")
        needs.setdefault(path, set()).add(need)
    note = (f"always allowed in the Root Guard tray on {today or time.strftime('%Y-%m-%d')}: "
            f"{tool} from {client}")
    rules = []
    for path, wanted in needs.items():
        policies: dict[str, str] = {}
        for need in POLICY_NAMES:
            if need in wanted:
                for name, verdict in ALWAYS_POLICIES[need].items():
                    if policies.get(name) != "allow":
                        policies[name] = verdict
        rules.append({"path": path, "policies": policies, "follow_symlinks": False, "comment": note})
    return rules


def default_user_config() -> str:
    """The user configuration file this user's grants go to."""
    return user_config_path()


# ---------------------------------------------------------------------------


def _user_file(given: str) -> str:
    """The real file behind ``given``, refusing anything but the user configuration."""
    if not isinstance(given, str) or not os.path.isabs(given):
        raise GrantError(f"user configuration path must be absolute, got {given!r}")
    expected = user_config_path()
    if os.path.basename(given) == PROJECT_FILE_NAME or os.path.realpath(given) != os.path.realpath(expected):
        raise GrantError(
            f"{given}: persistent grants are written only to the user configuration file ({expected})"
        )
    return os.path.realpath(given)  # a symlinked dotfile keeps its link


def _checked_fields(raw: Mapping[str, Any]) -> dict[str, Any]:
    if not isinstance(raw, Mapping):
        raise GrantError("rule fields must be a mapping")
    unknown = sorted(set(raw) - set(FIELDS))
    if unknown:
        raise GrantError(f"unknown rule field(s): {', '.join(map(str, unknown))}")
    path = raw.get("path")
    if not isinstance(path, str) or not (os.path.isabs(path) or path.startswith("~/")) or "\x00" in path:
        raise GrantError(f"rule field 'path' must be an absolute path (or ~/...), got {path!r}")
    policies = raw.get("policies")
    if not isinstance(policies, Mapping) or not policies:
        raise GrantError("rule field 'policies' must name at least one of read, write, delete")
    for name, verdict in policies.items():
        if name not in POLICY_NAMES or verdict not in VERDICTS:
            raise GrantError(f"rule field 'policies.{name}' must be one of {', '.join(VERDICTS)} for read, write or delete")
    fields: dict[str, Any] = {"path": path, "policies": {n: policies[n] for n in POLICY_NAMES if n in policies}}
    for name in ("includes", "excludes"):
        value = raw.get(name)
        if value is not None:
            if not isinstance(value, (list, tuple)) or not all(isinstance(p, str) and p for p in value):
                raise GrantError(f"rule field {name!r} must be a list of patterns")
            fields[name] = list(value)
    for name, kind in (("follow_symlinks", bool), ("id", str), ("comment", str)):
        value = raw.get(name)
        if value is not None:
            if not isinstance(value, kind) or (isinstance(value, str) and not value.strip()):
                raise GrantError(f"rule field {name!r} must be a {'boolean' if kind is bool else 'non-empty string'}")
            fields[name] = value
    if "\n" in fields.get("comment", "") or "\r" in fields.get("comment", ""):
        raise GrantError("rule field 'comment' must be one line")
    return fields


def _read(path: str) -> str | None:
    if not os.path.lexists(path):
        return None
    data = read_regular(path, MAX_CONFIG_BYTES + 1, follow=True)  # a FIFO put there is refused, never waited on
    if data is None or len(data) > MAX_CONFIG_BYTES:
        raise GrantError(f"{path}: cannot read the user configuration (not a readable regular file of at most "
                         f"{MAX_CONFIG_BYTES} bytes)")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        raise GrantError(f"{path}: cannot read the user configuration (UnicodeDecodeError)") from None


def _parse(text: str, path: str) -> tomlkit.TOMLDocument:
    try:
        return tomlkit.parse(text)
    except TOMLKitError:
        raise GrantError(f"{path}: invalid TOML; fix it before a rule can be added") from None


def _appended(old_text: str | None, rule_text: str) -> str:
    """The file with the rule added at its end: every existing byte stays as it was."""
    if old_text is None:
        return "# Root Guard user configuration\nversion = 2\n\n" + rule_text
    if old_text and not old_text.endswith("\n"):
        old_text += "\n"
    return old_text + ("\n" if old_text.strip() else "") + rule_text


def _paths_array(document: TOMLDocument, path: str) -> AoT | list[Any]:
    rules = document.get("paths")
    if rules is None:
        return []
    if not isinstance(rules, AoT):
        raise GrantError(f"{path}: 'paths' is not an array of tables ([[paths]]); cannot append a rule")
    return list(rules)


def _identical(rules: AoT | list[Any], fields: dict[str, Any]) -> str | None:
    wanted = {k: v for k, v in fields.items() if k not in ("id", "comment")}
    for rule in rules:
        plain = {k: v for k, v in rule.unwrap().items() if k != "id"}
        if plain == wanted and isinstance(rule.get("id"), str):
            return str(rule["id"])
    return None


def _new_id(fields: dict[str, Any], taken: set[str]) -> str:
    digest = hashlib.sha256(fields["path"].encode()).hexdigest()[:10]
    base = f"tray-{'-'.join(fields['policies'])}-{digest}"
    rule_id, n = base, 2
    while rule_id in taken:
        rule_id, n = f"{base}-{n}", n + 1
    return rule_id


def _rule_text(rule_id: str, fields: dict[str, Any]) -> str:
    """The rule as TOML, rendered by tomlkit: ``[[paths]] # note`` and its keys."""
    note = fields.get("comment") or f"added by the Root Guard tray on {time.strftime('%Y-%m-%d %H:%M')}"
    table = _rule_table(rule_id, {**fields, "comment": note})
    document = tomlkit.document()
    document["paths"] = tomlkit.aot()
    document["paths"].append(table)
    return tomlkit.dumps(document)


def _check_result(new_text: str, old_text: str | None, path: str, rule_id: str, fields: dict[str, Any]) -> None:
    """The new file must parse, end with exactly our rule, and add no configuration error."""
    rules = _paths_array(_parse(new_text, path), path)
    last = rules[-1].unwrap() if rules else {}
    expected = {k: v for k, v in fields.items() if k != "comment"} | {"id": rule_id}
    if last != expected:
        raise GrantError(f"{path}: the rule could not be appended cleanly; nothing written")
    _refuse_new_errors(new_text, old_text, path, "the new rule")


# ---------------------------------------------------------------------------
# merging a proposal (``rootguard trace --write``, the editor's "Add" button)


MOUNT_FIELDS = ("source", "target", "mode")


class MergeReport:
    """What a merge did: rule ids added, equal rules reused (proposed id -> existing id), mounts added."""

    def __init__(self) -> None:
        self.added: list[str] = []
        self.reused: dict[str, str] = {}
        self.mounts_added: list[dict[str, str]] = []
        self.mounts_present: int = 0
        self.changed = False

    def to_json(self) -> dict[str, Any]:
        return {"added": self.added, "reused": self.reused, "mounts_added": self.mounts_added,
                "mounts_present": self.mounts_present, "changed": self.changed}


def merge_rules(user_config: str, rules: Iterable[Mapping[str, Any]],
                mounts: Iterable[Mapping[str, Any]] = ()) -> MergeReport:
    """Merge ``[[paths]]`` rules and ``[[mounts]]`` into the user configuration file.

    One writer for every proposal: ids stay unique (a taken id with another rule gets
    ``-2``, ``-3``...), a rule equal to one already there (same path, policies,
    includes, excludes, follow_symlinks) is reused, not added; a rule for a path an
    existing rule already names is not added either (the person's rule stands); a mount
    already there is not added again. Comments and formatting survive (tomlkit); the
    result is validated before it atomically replaces the file; merging the same
    proposal twice changes nothing (the second time the file is not even rewritten).
    """
    target = _user_file(user_config)
    old_text = _read(target)
    new_text, report = merge_text(old_text, target, rules, mounts)
    if new_text is not None:
        atomic_write(target, new_text, mode=0o600, dir_mode=0o700)
        report.changed = True
    return report


def merge_text(old_text: str | None, target: str, rules: Iterable[Mapping[str, Any]],
               mounts: Iterable[Mapping[str, Any]] = ()) -> tuple[str | None, MergeReport]:
    """``merge_rules`` without the file: the merged text (None when nothing changes) and the report."""
    checked = [_checked_fields(r) for r in rules]
    wanted_mounts = [_checked_mount(m) for m in mounts]
    text = old_text if old_text is not None else "# Root Guard user configuration\nversion = 2\n"
    document = _parse(text, target)
    report = MergeReport()
    existing = _paths_array(document, target)
    ids = {str(r.get("id")) for r in existing}
    paths_taken = {str(r.get("path")) for r in existing}
    new_rules = []
    for fields in checked:
        same = _identical(existing, fields)
        proposed_id = fields.get("id") or _new_id(fields, ids)
        if same is not None:
            report.reused[proposed_id] = same
            continue
        if fields["path"] in paths_taken:
            holder = next(str(r.get("id")) for r in existing if str(r.get("path")) == fields["path"])
            report.reused[proposed_id] = holder
            continue
        rule_id, n = proposed_id, 2
        while rule_id in ids:
            rule_id, n = f"{proposed_id}-{n}", n + 1
        ids.add(rule_id)
        paths_taken.add(fields["path"])
        new_rules.append(_rule_table(rule_id, fields))
        report.added.append(rule_id)
    if new_rules:
        aot = document.get("paths")
        if aot is None:
            aot = tomlkit.aot()
            document["paths"] = aot
        for table in new_rules:
            aot.append(table)
    have = document.get("mounts")
    if have is not None and not isinstance(have, AoT):
        raise GrantError(f"{target}: 'mounts' is not an array of tables ([[mounts]]); cannot add a mount")
    present = [{k: str(m.get(k)) for k in MOUNT_FIELDS} for m in (have or [])]
    for mount in wanted_mounts:
        if mount in present:
            report.mounts_present += 1
            continue
        if have is None:
            have = tomlkit.aot()
            document["mounts"] = have
        table = tomlkit.table()
        table.update(mount)
        have.append(table)
        present.append(mount)
        report.mounts_added.append(mount)
    if not report.added and not report.mounts_added:
        return None, report  # nothing new: the file stays byte for byte
    new_text = tomlkit.dumps(document)
    _check_merged(new_text, old_text, target, report.added)
    return new_text, report


def _checked_mount(raw: Mapping[str, Any]) -> dict[str, str]:
    if not isinstance(raw, Mapping) or set(raw) - set(MOUNT_FIELDS):
        raise GrantError(f"mount fields must be {', '.join(MOUNT_FIELDS)}")
    mount = {k: raw.get(k) for k in MOUNT_FIELDS}
    if not all(isinstance(v, str) and v and "\x00" not in v for v in mount.values()) or mount["mode"] not in ("ro",):
        raise GrantError("a proposed mount needs source, target and mode = \"ro\"")
    return {k: str(v) for k, v in mount.items()}


def _rule_table(rule_id: str, fields: dict[str, Any]) -> Any:
    table = tomlkit.table()
    table["id"] = rule_id
    table["path"] = fields["path"]
    policies = tomlkit.inline_table()
    policies.update(fields["policies"])
    table["policies"] = policies
    for name in ("includes", "excludes", "follow_symlinks"):
        if name in fields:
            table[name] = fields[name]
    if fields.get("comment"):
        table.comment(fields["comment"])
    return table


def _check_merged(new_text: str, old_text: str | None, path: str, added: list[str]) -> None:
    """The merged file parses, holds every added id once, and adds no configuration error."""
    rules = _paths_array(_parse(new_text, path), path)
    counts = Counter(str(r.get("id")) for r in rules)
    if any(counts[i] != 1 for i in added):
        raise GrantError(f"{path}: the proposal could not be merged cleanly; nothing written")
    _refuse_new_errors(new_text, old_text, path, "the proposal")


def _refuse_new_errors(new_text: str, old_text: str | None, path: str, what: str) -> None:
    """GrantError when ``new_text`` has a configuration error ``old_text`` did not have."""

    def errors(text: str) -> Counter[tuple[str, str]]:
        parsed = parse_text(text, path, source="user", base_dir=None)
        return Counter((d.code, d.message) for d in parsed.diagnostics if d.severity == "error")

    added = errors(new_text) - (errors(old_text) if old_text is not None else Counter())
    if added:
        codes = ", ".join(sorted({code for code, _ in added}))
        raise GrantError(f"{path}: {what} would make the configuration invalid ({codes}); nothing written")
