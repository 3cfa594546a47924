"""What a write will change, for the person who approves it (plain Python).

A write prompt shows a unified diff of the file; for a Root Guard configuration
file it first says, in words, which rules and roots the change adds, changes or
removes, so ``path = "/"`` inside an innocuous-looking hunk cannot pass as a
comment. Everything here is text in, text out: the caller reads the file.
"""

from __future__ import annotations

import os
import tomllib
from typing import Any

MAX_PREVIEW = 64 * 1024  # characters sent to the tray
MAX_DIFF_LINES = 400
CONFIG_NAMES = (".rootguard.toml",)


def is_config_file(path: str, user_config: str | None = None) -> bool:
    return os.path.basename(path) in CONFIG_NAMES or (user_config is not None and path == user_config)


def write_preview(path: str, before: str | None, after: str, *, config: bool = False) -> str:
    """The text a write prompt shows: rule changes in words (config files), then the diff."""
    parts: list[str] = []
    if config:
        words = config_changes(before, after)
        parts.append("Configuration changes:\n" + "\n".join(f"  • {line}" for line in words))
    shown = os.path.basename(path)
    if before is None:
        diff = ["--- /dev/null\n", f"+++ b/{shown}\n"] + [f"+{line}" for line in after.splitlines(True)]
    else:
        import difflib  # only a write prompt shows a diff: not on every server's start

        diff = list(difflib.unified_diff(before.splitlines(True), after.splitlines(True), f"a/{shown}", f"b/{shown}"))
    if not diff:
        diff = ["(no change to the content)\n"]
    if len(diff) > MAX_DIFF_LINES:
        diff = diff[:MAX_DIFF_LINES] + [f"… {len(diff) - MAX_DIFF_LINES} more diff lines\n"]
    parts.append("".join(line if line.endswith("\n") else line + "\n" for line in diff).rstrip("\n"))
    text = "\n\n".join(parts)
    return text if len(text) <= MAX_PREVIEW else text[:MAX_PREVIEW] + "\n… (preview cut)"


def config_changes(before: str | None, after: str) -> list[str]:
    """Rules, roots, mounts and settings added, changed or removed, one sentence each."""
    try:
        new = tomllib.loads(after)
    except tomllib.TOMLDecodeError as err:
        return [f"the new file is not valid TOML ({err}): Root Guard would keep the last valid configuration"]
    try:
        old = tomllib.loads(before) if before else {}
    except tomllib.TOMLDecodeError:
        old = {}
    lines: list[str] = []
    lines += _rules(old.get("paths"), new.get("paths"))
    lines += _list_change("workspace root", _get(old, "workspace", "roots"), _get(new, "workspace", "roots"))
    lines += _mounts(old.get("mounts"), new.get("mounts"))
    for key, old_value, new_value in _settings(old, new):
        lines.append(f"changes {key}: {_show(old_value)} → {_show(new_value)}")
    return lines or ["no rule, root, mount or setting changes (comments or formatting only)"]


def _get(data: dict, table: str, key: str) -> Any:
    section = data.get(table)
    return section.get(key) if isinstance(section, dict) else None


def _rule_key(rule: dict, index: int) -> str:
    return str(rule.get("id")) if isinstance(rule.get("id"), str) else f"#{index + 1}"


def _rule_words(rule: dict) -> str:
    policies = rule.get("policies")
    verdicts = ", ".join(f"{k} {v}" for k, v in policies.items()) if isinstance(policies, dict) else "no policies"
    words = f"path {_show(rule.get('path'))}: {verdicts}"
    if rule.get("path") in ("/", "~", "~/") and isinstance(policies, dict) and "allow" in policies.values():
        words += " (the whole disk or home directory)"
    for key in ("includes", "excludes"):
        if rule.get(key):
            words += f"; {key} {_show(rule[key])}"
    if rule.get("follow_symlinks") is True:
        words += "; follows symbolic links"
    return words


def _rules(old: Any, new: Any) -> list[str]:
    old_rules = {_rule_key(r, i): r for i, r in enumerate(old or []) if isinstance(r, dict)}
    new_rules = {_rule_key(r, i): r for i, r in enumerate(new or []) if isinstance(r, dict)}
    lines = []
    for key, rule in new_rules.items():
        if key not in old_rules:
            lines.append(f"adds rule {key} — {_rule_words(rule)}")
        elif rule != old_rules[key]:
            lines.append(f"changes rule {key} — was {_rule_words(old_rules[key])}; now {_rule_words(rule)}")
    lines += [f"removes rule {key} — {_rule_words(rule)}" for key, rule in old_rules.items() if key not in new_rules]
    return lines


def _list_change(noun: str, old: Any, new: Any) -> list[str]:
    old_items = [x for x in old or [] if isinstance(x, str)] if isinstance(old, list) else []
    new_items = [x for x in new or [] if isinstance(x, str)] if isinstance(new, list) else []
    lines = [f"adds {noun} {_show(x)}" for x in new_items if x not in old_items]
    return lines + [f"removes {noun} {_show(x)}" for x in old_items if x not in new_items]


def _mounts(old: Any, new: Any) -> list[str]:
    def key(m: dict) -> str:
        return f"{m.get('source')} → {m.get('target')} ({m.get('mode', 'ro')})"

    old_m = [key(m) for m in old or [] if isinstance(m, dict)] if isinstance(old, list) else []
    new_m = [key(m) for m in new or [] if isinstance(m, dict)] if isinstance(new, list) else []
    return [f"adds mount {m}" for m in new_m if m not in old_m] + [f"removes mount {m}" for m in old_m if m not in new_m]


def _settings(old: dict, new: dict, prefix: str = ""):
    """Scalar settings that differ (tables walked; rule, mount and root arrays handled above)."""
    for key in sorted(set(old) | set(new)):
        name = f"{prefix}{key}"
        if name in ("paths", "mounts", "workspace.roots"):
            continue
        a, b = old.get(key), new.get(key)
        if isinstance(a, dict) or isinstance(b, dict):
            yield from _settings(a if isinstance(a, dict) else {}, b if isinstance(b, dict) else {}, name + ".")
        elif a != b:
            yield name, a, b


def _show(value: Any) -> str:
    if value is None:
        return "(unset)"
    if isinstance(value, str):
        return f'"{value}"'
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)
