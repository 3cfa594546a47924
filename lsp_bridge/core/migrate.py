"""``rootguard config migrate``: version 1 configuration files to version 2.

The translation keeps what a v1 file meant and everything else the user wrote
(comments, whitespace, key order, via tomlkit):

- ``version = 2`` is set (in place, or as the first line);
- ``[safety]`` is removed and each boolean translated:
  ``allow_temp_directory`` (true, or absent: the v1 default) becomes a
  ``temp-directory`` rule on the OS temporary directory; ``allow_any_path = true``
  becomes an ``any-path`` rule on ``/`` with a loud review comment;
  ``allow_external_roots`` has no v2 equivalent and is dropped with a comment;
  ``follow_symlinks`` (true, or absent) sets ``follow_symlinks = true`` on every
  rule that does not say.

The result is validated before anything is written; a file is replaced atomically
(temporary file in the same directory, then ``os.replace``) with its mode kept, and
the original is kept as ``FILE.v1.bak``.
"""

from __future__ import annotations

import argparse
import difflib
import os
import stat
import sys
import tempfile
from collections.abc import MutableMapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import tomlkit
from tomlkit import TOMLDocument
from tomlkit.items import AoT, Array, InlineTable, Table

from lsp_bridge.core.atomic import atomic_write
from lsp_bridge.core.config import V1_SAFETY_DEFAULTS, parse_text, parse_toml, read_config_text, user_config_path
from lsp_bridge.core.diagnostics import Diagnostic, has_errors
from lsp_bridge.core.paths import canonical

if TYPE_CHECKING:
    from typing import Any, NoReturn

TEMP_COMMENT = (
    "# migrated from [safety] allow_temp_directory: review; "
    "v2 never allows the temp dir implicitly"
)
ANY_PATH_COMMENT = (
    "# REVIEW: migrated from [safety] allow_any_path = true. This rule lets the agent read\n"
    "# and write EVERY path on this machine. Narrow it to what you need, or delete it."
)
EXTERNAL_ROOTS_COMMENT = (
    "# migrated from [safety] allow_external_roots = true: dropped, there is no version 2\n"
    "# equivalent (in version 2, workspace.roots may name any directory)."
)


@dataclass(frozen=True)
class MigrationResult:
    new_text: str
    changes: list[str]
    diagnostics: list[Diagnostic]
    original_text: str = ""
    backup: str | None = field(default=None)  # set by write_migration when it wrote one

    @property
    def ok(self) -> bool:
        return not has_errors(self.diagnostics)

    @property
    def changed(self) -> bool:
        return self.ok and self.new_text != self.original_text


def _version(data: dict[str, Any]) -> object:
    return data.get("version", 1)


def needs_migration(text: str) -> bool:
    """Whether ``text`` is a version 1 file. Raises ``ValueError`` if it is not TOML."""
    data, problem = parse_toml(text, "<input>")
    if problem is not None:
        raise ValueError(problem.message)
    assert data is not None  # parse_toml returns data or a problem
    version = _version(data)
    return version == 1 and not isinstance(version, bool)


def _validation_base(file: str) -> str | None:
    return os.path.dirname(file) if os.path.isabs(file) else None


def migrate_text(text: str, file: str) -> MigrationResult:
    """The version 2 text for ``text`` (unchanged when it is already v2 or invalid)."""
    parsed = parse_text(text, file, source="user", base_dir=_validation_base(file))
    diagnostics = list(parsed.diagnostics)
    if has_errors(diagnostics) or parsed.version != 1:
        return MigrationResult(text, [], diagnostics, text)
    newline = "\r\n" if "\r\n" in text else "\n"
    try:
        document = tomlkit.parse(text)
        data = document.unwrap()
    except Exception:  # noqa: BLE001 - the editing parser disagrees with the loader
        problem = Diagnostic("error", "migration-failed", "tomlkit cannot edit this file; nothing changed", file)
        return MigrationResult(text, [], diagnostics + [problem], text)
    written = data.get("safety", {})
    safety = {**V1_SAFETY_DEFAULTS, **written}
    changes: list[str] = []
    if not safety["follow_symlinks"]:
        said = "follow_symlinks = false" if "follow_symlinks" in written else "follow_symlinks absent (false in version 1)"
        problem = Diagnostic(
            "error", "migration-unfaithful",
            f"cannot translate [safety] {said}: version 1 never follows a symbolic link that no rule allows, "
            "version 2 follows links inside the workspace when no rule decides, so reads through links would "
            "widen. Nothing was written. Add follow_symlinks = true under [safety] if links should be "
            "followed, or keep this file at version 1",
            file,
        )
        return MigrationResult(text, [], diagnostics + [problem], text)

    if "safety" in document:
        del document["safety"]
        changes.append(f"removed [safety] ({len(written)} setting(s))")
    changes += _behaviour_changes(safety, written)
    if safety["follow_symlinks"]:
        changes += _follow_symlinks_on_rules(document)
    block, added = _new_rules(document, data, safety, written, newline)
    changes += added

    if "version" in document:
        document["version"] = 2
        body = document.as_string()
    else:
        body = f"version = 2{newline}" + document.as_string()
    changes.insert(0, "set version = 2")
    if block:
        separator = newline if body.endswith("\n") else newline * 2
        body += separator + block
    return _checked(MigrationResult(body, changes, diagnostics, text), file)


def _behaviour_changes(safety: dict[str, bool], written: dict[str, Any]) -> list[str]:
    """What decides differently after the migration, one line each (the preview lists them)."""
    lines = []
    if safety["allow_temp_directory"]:
        lines.append("behaviour: the OS temporary directory stays allowed only through the new "
                     "temp-directory rule (version 2 never allows it implicitly)")
    else:
        lines.append("behaviour: none for allow_temp_directory = false (version 2 never allows the temp directory)")
    if safety["allow_any_path"]:
        lines.append("behaviour: every path stays allowed only through the new any-path rule")
    if written.get("allow_external_roots"):
        lines.append("behaviour: workspace.roots outside the editor's folders no longer need "
                     "allow_external_roots (version 2 takes them from the user file and ROOTGUARD_ROOTS "
                     "as written; a project file still cannot widen)")
    else:
        lines.append("behaviour: workspace.roots from the user file or ROOTGUARD_ROOTS outside the editor's "
                     "folders are used (version 1 ignored them without allow_external_roots = true)")
    lines.append("behaviour: a rename across roots is decided by the rules (version 1 refused it)")
    lines.append("behaviour: symbolic links are followed where rules set follow_symlinks = true and inside "
                 "the workspace when no rule decides (follow_symlinks = true kept)")
    return lines


def _checked(result: MigrationResult, file: str) -> MigrationResult:
    """Refuse a translation that does not load cleanly as version 2."""
    again = parse_text(result.new_text, file, source="user", base_dir=_validation_base(file))
    if again.version == 2 and not has_errors(again.diagnostics):
        return result
    problem = Diagnostic("error", "migration-failed", "the translated file does not validate; nothing changed", file)
    return MigrationResult(result.original_text, [], result.diagnostics + [problem], result.original_text)


def _rule_tables(document: TOMLDocument) -> list[Any]:
    paths = document.get("paths")
    if isinstance(paths, (AoT, Array)):
        return [table for table in paths if isinstance(table, dict)]
    return []


def _follow_symlinks_on_rules(document: TOMLDocument) -> list[str]:
    """Set ``follow_symlinks = true`` on each rule that does not say."""
    changes = []
    for table in _rule_tables(document):
        if "follow_symlinks" in table:
            continue
        _add_after_last_value(table, "follow_symlinks", True)
        changes.append(f"set follow_symlinks = true on rule {table.get('id')!r} ([safety] follow_symlinks)")
    return changes


def _add_after_last_value(table: MutableMapping[str, Any], key: str, value: Any) -> None:
    """Add ``key`` right after the table's last plain key (before sub-tables and trailing comments)."""
    if not isinstance(table, Table):
        table[key] = value
        return
    last = None
    for name, item in table.value.body:
        if name is not None and not isinstance(item, (Table, AoT)):
            last = (name, item)
    if last is None:
        table[key] = value
        return
    item = tomlkit.item(value)
    item.trivia.indent = last[1].trivia.indent
    table.value._insert_after(last[0], key, item)


def _unique_id(wanted: str, taken: set[str]) -> str:
    candidate, number = wanted, 2
    while candidate in taken:
        candidate, number = f"{wanted}-{number}", number + 1
    taken.add(candidate)
    return candidate


def _new_rules(
    document: TOMLDocument, data: dict[str, Any], safety: dict[str, Any], written: dict[str, Any], newline: str
) -> tuple[str, list[str]]:
    """The text appended for translated booleans, and the change lines."""
    taken = {rule["id"] for rule in data.get("paths", []) if isinstance(rule, dict) and isinstance(rule.get("id"), str)}
    rules = []
    if safety["allow_temp_directory"]:
        rules.append((TEMP_COMMENT, _unique_id("temp-directory", taken), canonical(tempfile.gettempdir())))
    if safety["allow_any_path"]:
        rules.append((ANY_PATH_COMMENT, _unique_id("any-path", taken), "/"))
    pieces, changes = [], []
    inline = isinstance(document.get("paths"), Array)
    for comment, rule_id, path in rules:
        table: dict[str, Any] = {"id": rule_id, "path": path, "policies": {"read": "allow", "write": "allow"}}
        if safety["follow_symlinks"]:
            table["follow_symlinks"] = True
        if inline:
            document["paths"].append(_inline(table))
            pieces.append(comment + f" (rule {rule_id!r} in `paths`)")
        else:
            pieces.append(comment + "\n" + _rule_text(table))
        changes.append(f"added [[paths]] rule {rule_id!r} on {path} (read, write: allow)")
    if written.get("allow_external_roots"):
        pieces.append(EXTERNAL_ROOTS_COMMENT)
        changes.append("dropped allow_external_roots (no version 2 equivalent)")
    text = "\n\n".join(pieces)
    return (text + "\n").replace("\n", newline) if text else "", changes


def _inline(table: dict[str, Any]) -> InlineTable:
    item = tomlkit.inline_table()
    for key, value in table.items():
        item[key] = _inline(value) if isinstance(value, dict) else value
    return item


def _value_text(value: Any) -> str:
    if isinstance(value, dict):
        return "{ " + ", ".join(f"{key} = {_value_text(item)}" for key, item in value.items()) + " }"
    text: str = tomlkit.item(value).as_string()
    return text


def _rule_text(table: dict[str, Any]) -> str:
    return "\n".join(["[[paths]]"] + [f"{key} = {_value_text(value)}" for key, value in table.items()])


# --------------------------------------------------------------------------- writing


def _atomic_write(target: str, text: str, mode: int) -> None:
    atomic_write(target, text, mode=stat.S_IMODE(mode))


def _backup_path(path: str, text: str) -> tuple[str, bool]:
    """(backup path, whether it must be written); never overwrites a different backup."""
    candidate, number = f"{path}.v1.bak", 1
    while os.path.lexists(candidate):
        existing, problem = read_config_text(candidate)
        if problem is None and existing == text:
            return candidate, False
        candidate, number = f"{path}.v1.bak.{number}", number + 1
    return candidate, True


def write_migration(path: str) -> MigrationResult:
    """Migrate the file at ``path`` in place, keeping ``path.v1.bak``."""
    text, problem = read_config_text(path)
    if problem is not None:
        return MigrationResult("", [], [problem], "")
    assert text is not None  # read_config_text returns text or a problem
    result = migrate_text(text, path)
    if not result.changed:
        return result
    target = os.path.realpath(path)  # a linked config file is rewritten where it lives
    try:
        mode = os.stat(target).st_mode
        backup, needed = _backup_path(path, text)
        if needed:
            _atomic_write(backup, text, mode)
        _atomic_write(target, result.new_text, mode)
    except OSError as exc:
        failure = Diagnostic("error", "migration-write", f"cannot write {path}: {exc.strerror}", path)
        return MigrationResult(text, [], result.diagnostics + [failure], text)
    return MigrationResult(result.new_text, result.changes, result.diagnostics, text, backup)


# --------------------------------------------------------------------------- command line


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:  # bad input: one line, exit 2
        self.exit(2, f"{self.prog}: error: {message} (see {self.prog} --help)\n")


def _parser() -> argparse.ArgumentParser:
    parser = _Parser(
        prog="rootguard config migrate",
        description="Translate a version 1 configuration file to version 2 "
        "(preview by default). FILE defaults to the user configuration file.",
    )
    mode = parser.add_mutually_exclusive_group()
    mode.add_argument("--write", action="store_true", help="apply, keeping FILE.v1.bak")
    mode.add_argument(
        "--check", action="store_true", help="exit 0 if current, 1 if it needs migration, 2 if invalid"
    )
    parser.add_argument("file", nargs="?", metavar="FILE")
    return parser


def _say(message: str) -> None:
    print(message, file=sys.stderr)


def main_migrate(args: list[str]) -> int:
    """``rootguard config migrate [--write] [--check] [FILE]``; returns the exit code.

    0: written, previewed or already current; 1: needs migration (``--check``);
    2: bad input (usage, missing or unreadable file, invalid TOML or schema).
    """
    try:
        options = _parser().parse_args(args)
    except SystemExit as stop:
        return stop.code if isinstance(stop.code, int) else 2
    if options.file is not None and not options.file:
        _say("error: FILE is empty")
        return 2
    try:
        path = os.path.abspath(options.file) if options.file else user_config_path(os.environ)
    except ValueError as exc:
        _say(f"error: {exc}")
        return 2
    _say(f"configuration file: {path}")
    text, problem = read_config_text(path)
    if problem is not None:
        _say(problem.format())
        return 2
    assert text is not None  # read_config_text returns text or a problem
    result = migrate_text(text, path)
    for diagnostic in result.diagnostics:
        _say(diagnostic.format())
    if any(d.code == "migration-unfaithful" for d in result.diagnostics):
        if options.check:  # it is version 1, so it needs migrating; the refusal above says what first
            _say("needs migration to version 2 (refused as it stands: see above)")
            return 1
        return 2  # refused: a boolean cannot be translated faithfully; nothing written
    if not result.ok:
        return 2
    if options.check:
        _say("needs migration to version 2" if result.changed else "current: version 2")
        return 1 if result.changed else 0
    if not result.changed:
        _say("already version 2: nothing to do")
        return 0
    if options.write:
        return _apply(path)
    sys.stdout.writelines(
        difflib.unified_diff(
            text.splitlines(keepends=True),
            result.new_text.splitlines(keepends=True),
            fromfile=path,
            tofile=f"{path} (version 2)",
        )
    )
    for change in result.changes:
        _say(f"  {change}")
    _say("preview only: run with --write to apply")
    return 0


def _apply(path: str) -> int:
    written = write_migration(path)
    if not written.ok:
        for diagnostic in written.diagnostics:
            if diagnostic.severity == "error":
                _say(diagnostic.format())
        return 2
    for change in written.changes:
        _say(f"  {change}")
    _say(f"wrote {path} (original kept as {written.backup})")
    return 0
