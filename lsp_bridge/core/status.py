"""The typed contract of the language server's custom messages.

``rootguard/status`` (server → client notification) and the custom requests
``rootguard/explain``, ``rootguard/inventory`` and ``rootguard/access`` carry
these dataclasses as JSON (``to_json``). They are the one description of those
payloads: the JSON Schema in ``docs/rootguard-lsp.schema.json`` is generated
from them (``python -m lsp_bridge.core.status --write``), the VS Code
extension's TypeScript types are generated from that schema, and the tests
validate real server output against it. The tray reads the same status from
its socket.

Text meant for people (the one-line ``summary`` and the ``widening_lines``) is
rendered once, in Python (``lsp/tracker.py``); clients show it as it is.

Plain Python: no pygls, lsprotocol or Qt; the schema generator imports
pydantic only when it runs.
"""

from __future__ import annotations

import dataclasses
import sys
import types
import typing
from dataclasses import dataclass
from typing import Any, Literal, TypeVar, Union

from lsp_bridge.core.settings import Verdict, WorktreeMode

STATUS_VERSION = 1
Operation = Literal["read", "write", "delete", "rename", "metadata"]
Origin = Literal["folder", "worktree", "config", "environment", "temp", "any-path", "git"]
Approver = Literal["tray", "editor", "none"]
Severity = Literal["error", "warning"]
WideningKind = Literal["ancestor", "disjoint"]
Answer = Literal["allow_once", "allow_session", "always", "deny", "timeout", "no_approver"]  # approvals/protocol.py

# -- rootguard/status ----------------------------------------------------------


@dataclass
class UnionEntry:
    """One entry of the effective union, and why it is there."""

    path: str
    origin: Origin
    reason: str


@dataclass
class ShadowedEntry:
    """An entry inside another one: it adds nothing to the union."""

    path: str
    by: str
    origin: Origin
    reason: str


@dataclass
class WorktreeEntry:
    """A sibling checkout of a folder's repository and how it participates."""

    path: str
    checkout: str
    repository: str
    mode: WorktreeMode
    locked: bool
    prunable: bool


@dataclass
class WideningEntry:
    """One new union entry that made the union larger."""

    folder: str
    entry: str | None
    contains: list[str]
    kind: WideningKind


@dataclass
class StatusWarning:
    """An error or warning the window should show."""

    severity: Severity
    code: str
    message: str


@dataclass
class ConfiguredMount:
    """A bind mount found in the configuration or an MCP server's arguments."""

    source: str
    target: str
    mode: str
    origin: str


@dataclass
class MountOutsideUnion:
    """A mounted source that lies outside the union."""

    source: str
    target: str


@dataclass
class SuggestedMount:
    """One mount of the suggested narrow set."""

    source: str
    target: str
    mode: str
    reason: str
    beyond_acknowledged: bool  # the source lies outside the union the person acknowledged
    kind: Literal["root", "store", "modules", "file"] = "root"  # a root, or what the toolchain reads outside it
    cause: str | None = None  # the file whose content asked for it (a tsconfig's extends, a link); None: by place


@dataclass
class HeldMount:
    """A toolchain mount held until the person approves it (new, asked for by a file the agent can write)."""

    path: str
    kind: str
    reason: str
    cause: str | None  # the file that asked for it


@dataclass
class RefusedPath:
    """A path a repository's toolchain file asked for that is never mounted (a credential, ``.git``, a device...)."""

    path: str
    reason: str
    cause: str | None  # the file that asked for it


@dataclass
class UnrescuableLink:
    """A link whose target cannot be mounted narrowly."""

    link: str
    target: str
    reason: str


@dataclass
class FirstPartyLink:
    """A link into a first-party package of the repository."""

    link: str
    target: str
    via: Literal["link", "store"]  # a link in node_modules, or a package-store entry linking back


@dataclass
class Mounts:
    """Mount reconciliation: configured mounts against the union, and a narrow set."""

    mounts: list[ConfiguredMount]
    roots_without_mount: list[str]
    mounts_outside_union: list[MountOutsideUnion]
    suggested: list[SuggestedMount]
    suggested_for: list[str]  # the narrow roots the suggestion is made for (never a widened union)
    docker_args: list[str]
    unrescuable: list[UnrescuableLink]
    first_party: list[FirstPartyLink]
    single_files: list[str]
    refused: list[RefusedPath] = dataclasses.field(default_factory=list)
    held: list[HeldMount] = dataclasses.field(default_factory=list)  # never in ``suggested`` until approved


@dataclass
class CredentialFile:
    """A file holding credentials, and how many."""

    path: str
    count: int


@dataclass
class GitHistory:
    """A git directory newly exposed: its size, commits and deleted sensitive files."""

    path: str
    bytes: int
    size: str  # ``bytes`` as every view shows it (decimal units, rendered once by the server)
    commits: int | None
    deleted_sensitive: list[str] | None
    via: list[str]
    renamed_sensitive: list[dict[str, str | bool]]  # {"from", "to", "in_tree", "credential_name"}


@dataclass
class CiIdentity:
    """A cloud identity a CI file names."""

    cloud: Literal["aws", "azure", "gcp"]
    kind: str  # role, client-id, workload identity provider, service account
    value: str


@dataclass
class CiRoles:
    """A CI workflow naming cloud roles."""

    path: str
    roles: list[str]
    identities: list[CiIdentity]
    capped: bool  # more identities than were kept


@dataclass
class PackageStore:
    """A package-manager store, reported apart from the file count."""

    path: str
    files: int


@dataclass
class AddedFiles:
    """The files one added root adds (those of the narrow roots inside it not counted)."""

    path: str
    files: int


@dataclass
class Inventory:
    """What the union after the widening exposes that the one before did not."""

    widens: bool
    files_before: int
    files_after: int
    ratio: float
    credentials: list[CredentialFile]
    git: list[GitHistory]
    siblings: list[str]
    ci_roles: list[CiRoles]
    stores: list[PackageStore]
    added_roots: list[str]
    before: list[str]
    after: list[str]
    errors: list[str]
    notes: list[str]  # why the union did not follow the folders given
    added_files: list[AddedFiles]  # per added root: the files it adds


@dataclass
class ConfigPaths:
    """Where this session's configuration lives (the user file may not exist yet)."""

    user: str | None  # None when ROOTGUARD_CONFIG is invalid (a diagnostic says why)
    project: list[str]


@dataclass
class AgentEntry:
    """An agent present for the window's folders, and whether Root Guard's hook guards it."""

    agent: str  # claude | codex | gemini | copilot
    label: str
    present: bool
    config_dirs: list[str]  # where it was found (project files, the user-level home)
    guarded: bool
    hooks: list[str]  # the settings files holding Root Guard's hook
    note: str  # why it is not guarded ("" when it is)


@dataclass
class Status:
    """The ``rootguard/status`` notification: what one editor window exposes."""

    version: int
    session: str
    roots: list[str]
    union: list[str]
    entries: list[UnionEntry]
    shadowed: list[ShadowedEntry]
    worktrees: list[WorktreeEntry]
    mounts: Mounts | None
    widened: bool  # unacknowledged widenings, or a workspace folder inside another
    acknowledged: bool  # nothing is wider than what the person last acknowledged for these folders
    withdrawable: bool  # an acknowledgement of these folders can be withdrawn (rootguard.withdrawAcknowledgement)
    reference: list[str]  # the union the person last acknowledged for these folders
    widening: list[WideningEntry]
    inventory: Inventory | None
    inventory_pending: bool
    summary: str  # one line, for a status bar or a menu
    widening_lines: list[str]  # the widening, line by line (empty when not widened)
    warning_line: str  # the one-line widening warning as the editor shows it ("" when nothing is unacknowledged)
    warnings: list[StatusWarning]
    approver: Approver
    config: ConfigPaths
    watch_limit: str | None = None  # set when the deep rescan's budget is exhausted: what is not watched
    agents: list[AgentEntry] | None = None  # the agents present (docs/agents.md); unguarded ones also warn


# -- rootguard/explain -----------------------------------------------------------


@dataclass
class ExplainParams:
    """``rootguard/explain`` parameters."""

    path: str  # an absolute path or a file: URI
    op: Operation | None = None  # absent: read, write and delete


@dataclass
class ExplainDecision:
    """The decision for one operation."""

    op: Operation
    decision: Verdict
    rule: str | None
    reason: str


@dataclass
class ExplainResult:
    """``rootguard/explain`` result."""

    path: str
    decisions: list[ExplainDecision]


@dataclass
class RequestError:
    """A custom request that could not be answered."""

    error: str


# -- rootguard/access --------------------------------------------------------------


@dataclass
class AccessParams:
    """``rootguard/access`` parameters: a tool asks for an access."""

    path: str
    op: Operation = "read"
    dest: str | None = None  # rename only
    tool: str | None = None  # who asks, shown in the prompt


@dataclass
class AccessResult:
    """The answer: ``decision`` is final (a person answered request-level accesses)."""

    decision: Verdict
    path: str | None
    rule: str | None
    reason: str
    op: Operation | None = None
    rule_source: str | None = None
    dest: AccessResult | None = None
    policy_decision: Verdict | None = None  # the engine's verdict before a person answered
    approval: Answer | None = None  # the answer given to a request-level access
    approver: str | None = None  # who gave it (the tray, the editor, a session grant...)


# -- rootguard/inventory: no params; the result is ``Inventory | None``. -------------------

MESSAGES: dict[str, dict[str, Any]] = {
    "rootguard/status": {"direction": "server → client notification", "params": Status},
    "rootguard/explain": {"params": ExplainParams, "result": ExplainResult | RequestError},
    "rootguard/inventory": {"params": None, "result": Inventory | None},
    "rootguard/access": {"params": AccessParams, "result": AccessResult},
}


# -- JSON -------------------------------------------------------------------------------


def to_json(value: Any) -> Any:
    """A contract dataclass (or ``None``) as JSON-ready data."""
    if value is None:
        return None
    return dataclasses.asdict(value)


T = TypeVar("T")


def from_json(cls: type[T], data: Any) -> T:
    """Build contract dataclass ``cls`` from JSON data; a missing or unknown field is a ``TypeError``.

    Used where a producer hands over a dict (the inventory and mount reports), so
    that a payload drifting from the contract fails at once, in the tests.
    """
    return typing.cast(T, _build(cls, data, cls.__name__))


def _build(tp: Any, data: Any, where: str) -> Any:
    origin = typing.get_origin(tp)
    if origin in (Union, types.UnionType):
        args = typing.get_args(tp)
        if data is None and type(None) in args:
            return None
        errors = []
        for arg in args:
            if arg is type(None):
                continue
            try:
                return _build(arg, data, where)
            except TypeError as err:
                errors.append(str(err))
        raise TypeError("; ".join(errors) or f"{where}: null is not allowed")
    if origin is Literal:
        if data not in typing.get_args(tp):
            raise TypeError(f"{where}: {data!r} is not one of {typing.get_args(tp)}")
        return data
    if origin is dict:
        if not isinstance(data, dict):
            raise TypeError(f"{where}: expected an object, got {type(data).__name__}")
        _key, value_type = typing.get_args(tp)
        return {str(k): _build(value_type, v, f"{where}.{k}") for k, v in data.items()}
    if origin is list:
        if not isinstance(data, (list, tuple)):
            raise TypeError(f"{where}: expected a list, got {type(data).__name__}")
        (item,) = typing.get_args(tp)
        return [_build(item, v, f"{where}[{i}]") for i, v in enumerate(data)]
    if dataclasses.is_dataclass(tp):
        if not isinstance(data, dict):
            raise TypeError(f"{where}: expected an object, got {type(data).__name__}")
        fields = _fields(tp)
        unknown = set(data).difference(name for name, _, _ in fields)
        if unknown:
            raise TypeError(f"{where}: unknown field(s) {sorted(unknown)}")
        kwargs = {}
        for name, hint, required in fields:
            if name in data:
                kwargs[name] = _build(hint, data[name], f"{where}.{name}")
            elif required:
                raise TypeError(f"{where}: missing field {name!r}")
        return typing.cast(Any, tp)(**kwargs)
    if tp is float:
        if isinstance(data, bool) or not isinstance(data, (int, float)):
            raise TypeError(f"{where}: expected a number, got {data!r}")
        return float(data)
    if tp in (str, int, bool):
        if not isinstance(data, tp) or (tp is int and isinstance(data, bool)):
            raise TypeError(f"{where}: expected {tp.__name__}, got {data!r}")
        return data
    if tp is Any:
        return data
    raise TypeError(f"{where}: unsupported type {tp!r}")


_FIELDS: dict[Any, tuple[tuple[str, Any, bool], ...]] = {}


def _fields(cls: Any) -> tuple[tuple[str, Any, bool], ...]:
    """(name, resolved type, required) of a contract class's fields, resolved once per class:
    ``typing.get_type_hints`` compiles every string annotation on each call,
    and a status is built from a dozen classes each time it is sent."""
    found = _FIELDS.get(cls)
    if found is None:
        hints = typing.get_type_hints(cls)
        found = _FIELDS[cls] = tuple(
            (f.name, hints[f.name], f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING)
            for f in dataclasses.fields(cls)
        )
    return found


# -- JSON Schema -----------------------------------------------------------------------

SCHEMA_ID = "https://rootguard.invalid/schemas/rootguard-lsp.schema.json"


def json_schema() -> dict[str, Any]:
    """The JSON Schema of every message above, one definition per dataclass.

    Generated with pydantic's ``TypeAdapter`` (imported here only); every object
    is closed (``additionalProperties: false``) so that a payload drifting from
    the contract fails validation.
    """
    from pydantic import TypeAdapter

    roots = {
        "Status": Status,
        "ExplainParams": ExplainParams,
        "ExplainResult": ExplainResult,
        "RequestError": RequestError,
        "AccessParams": AccessParams,
        "AccessResult": AccessResult,
        "Inventory": Inventory,
    }
    definitions: dict[str, Any] = {}
    for name, cls in roots.items():
        schema = TypeAdapter(cls).json_schema(ref_template="#/definitions/{model}")
        definitions.update(schema.pop("$defs", {}))
        if "$ref" not in schema:  # a recursive class comes back as a reference to its $defs entry
            definitions[name] = schema
    for definition in definitions.values():
        for prop in definition.get("properties", {}).values():
            prop.pop("title", None)  # keep names for the definitions, not for every field
        _close(definition)
    return {
        "$schema": "http://json-schema.org/draft-07/schema#",
        "$id": SCHEMA_ID,
        "title": "Root Guard language server messages",
        "description": (
            "Generated from lsp_bridge/core/status.py by `python -m lsp_bridge.core.status --write`; "
            "do not edit. rootguard/status: Status. rootguard/explain: ExplainParams → ExplainResult | "
            "RequestError. rootguard/inventory: → Inventory | null. rootguard/access: AccessParams → AccessResult."
        ),
        "definitions": dict(sorted(definitions.items())),
    }


def _close(schema: Any) -> None:
    if isinstance(schema, dict):
        if schema.get("type") == "object" and "properties" in schema:
            schema["additionalProperties"] = False
        for value in schema.values():
            _close(value)
    elif isinstance(schema, list):
        for value in schema:
            _close(value)


def schema_text() -> str:
    import json

    return json.dumps(json_schema(), indent=2, ensure_ascii=False) + "\n"


SCHEMA_PATH = "docs/rootguard-lsp.schema.json"


def main(argv: list[str] | None = None) -> int:
    """``python -m lsp_bridge.core.status [--write]``: print (or write) the schema."""
    import argparse
    import os

    parser = argparse.ArgumentParser(prog="python -m lsp_bridge.core.status", description=main.__doc__)
    parser.add_argument("--write", action="store_true", help=f"write {SCHEMA_PATH} of this checkout")
    args = parser.parse_args(argv)
    text = schema_text()
    if not args.write:
        sys.stdout.write(text)
        return 0
    here = os.path.dirname(os.path.abspath(__file__))
    target = os.path.join(here, "..", "..", SCHEMA_PATH)
    from lsp_bridge.core.atomic import atomic_write

    atomic_write(target, text, mode=0o644)
    print(f"wrote {os.path.normpath(target)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
