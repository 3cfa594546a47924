"""Which tool arguments take a path, and argument values the probe can build (pure).

A *slot* is where a path goes in a tool's arguments: a top-level string
(``path``), a string list (``paths``), or a string inside an array of objects
(``changes[].relative_path``). Slots are found by name and by schema: a string
property whose name says path/file/directory/source/destination/target/uri,
or whose description says it is a path, and that is not a glob, a query or
content. A server that addresses files by project id and relative path (like
``rootguard mcp``) has a *project* argument; the probe fills it with one of the
server's own ids and sends relative targets.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

PATH_NAME = re.compile(
    r"(^|_)(path|paths|file|files|filename|filenames|filepath|filepaths|dir|dirs|directory|directories|folder|"
    r"source|sources|src|destination|dest|dst|target|uri|location)$",
    re.IGNORECASE,
)
NOT_PATH_NAME = re.compile(
    r"(pattern|glob|query|content|text|regex|exclude|include|encoding|mode|format|sort|id)$", re.IGNORECASE
)
PATH_WORDS = re.compile(r"\b(path|file ?name|directory|folder)\b", re.IGNORECASE)
PROJECT_NAME = re.compile(r"^(project|workspace|root|repo|repository)(_?id)?$", re.IGNORECASE)
DIR_TOOL = re.compile(r"(list|director|tree|search|find|glob|mkdir|folder)", re.IGNORECASE)
DEST_NAME = re.compile(r"(dest|destination|dst|target|new)", re.IGNORECASE)


class CannotBuild(Exception):
    """The probe cannot build a valid value for a required argument."""


@dataclass(frozen=True)
class Slot:
    """One place in the arguments that takes a path."""

    steps: tuple[str | int, ...]  # keys and list indexes from the arguments object to the string
    is_list: bool  # the path goes into a list of strings (the slot is that list)
    wants_dir: bool  # the tool or argument is about directories
    is_destination: bool

    @property
    def name(self) -> str:
        return ".".join("[]" if isinstance(s, int) else s for s in self.steps).replace(".[]", "[]")


def _camel_to_snake(name: str) -> str:
    return re.sub(r"(?<=[a-z0-9])([A-Z])", r"_\1", name).lower()


def is_path_property(name: str, schema: Any) -> bool:
    """A string (or list of strings) property that names a file system location."""
    if not isinstance(schema, dict):
        return False
    kind = schema.get("type")
    if kind == "array":
        items = schema.get("items")
        return isinstance(items, dict) and items.get("type") == "string" and is_path_property(name, items | {
            "description": schema.get("description", items.get("description", ""))})
    if kind not in ("string", None) or (kind is None and "enum" in schema):
        return False
    snake = _camel_to_snake(name)
    if PROJECT_NAME.match(snake) or NOT_PATH_NAME.search(snake):
        return False
    if PATH_NAME.search(snake):
        return True
    return kind == "string" and bool(PATH_WORDS.search(str(schema.get("description", ""))))


def find_slots(tool_name: str, input_schema: dict) -> list[Slot]:
    """Every path slot in a tool's input schema (nested one level into arrays of objects)."""
    slots: list[Slot] = []
    dir_tool = bool(DIR_TOOL.search(tool_name))

    def visit(props: dict, prefix: tuple[str | int, ...]) -> None:
        for name, sub in (props or {}).items():
            if not isinstance(sub, dict):
                continue
            if is_path_property(name, sub):
                description = str(sub.get("description", ""))
                wants_dir = dir_tool or bool(re.search(r"\bdirector(y|ies)\b", description, re.IGNORECASE)
                                             and not re.search(r"\bfile\b", description, re.IGNORECASE))
                slots.append(Slot(prefix + (name,), sub.get("type") == "array", wants_dir,
                                  bool(DEST_NAME.search(_camel_to_snake(name)))))
            elif sub.get("type") == "array" and isinstance(sub.get("items"), dict) and sub["items"].get(
                    "type") == "object":
                visit(sub["items"].get("properties") or {}, prefix + (name, 0))
            elif sub.get("type") == "object":
                visit(sub.get("properties") or {}, prefix + (name,))

    visit((input_schema or {}).get("properties") or {}, ())
    return slots


def project_argument(input_schema: dict) -> tuple[str, list[str]] | None:
    """The name of a project-id argument and the ids its schema lists, if the tool has one."""
    for name, sub in ((input_schema or {}).get("properties") or {}).items():
        if isinstance(sub, dict) and sub.get("type") in ("string", None) and PROJECT_NAME.match(_camel_to_snake(name)):
            return name, [str(v) for v in sub.get("enum") or []]
    return None


def build_value(name: str, schema: Any, *, depth: int = 0) -> Any:
    """A valid, harmless value for a non-path argument, or CannotBuild."""
    if depth > 4 or not isinstance(schema, dict):
        raise CannotBuild(f"argument {name!r}: schema too deep or not an object")
    if "const" in schema:
        return schema["const"]
    if "default" in schema:
        return schema["default"]
    if schema.get("enum"):
        return schema["enum"][0]
    kind = schema.get("type")
    if isinstance(kind, list):
        kind = next((k for k in kind if k != "null"), None)
    snake = _camel_to_snake(name)
    if kind == "string":
        if "pattern" in schema or "format" in schema and schema["format"] not in ("uri", "path"):
            raise CannotBuild(f"argument {name!r}: a {'pattern' if 'pattern' in schema else 'format'} "
                              "constraint the probe cannot satisfy")
        if re.search(r"(pattern|glob)", snake):
            return "*"
        text = "probe"
        return text if len(text) >= int(schema.get("minLength", 0)) else "p" * int(schema["minLength"])
    if kind in ("integer", "number"):
        return schema.get("minimum", 1)
    if kind == "boolean":
        return False
    if kind == "array":
        if int(schema.get("minItems", 0)) == 0 and depth > 0:
            return []
        return [build_value(name, schema.get("items") or {"type": "string"}, depth=depth + 1)]
    if kind == "object" or "properties" in schema:
        return build_object(schema, depth=depth + 1)
    raise CannotBuild(f"argument {name!r}: no type the probe understands ({kind!r})")


def build_object(schema: dict, *, depth: int = 0) -> dict:
    """Required properties of an object (plus content/text when present, so a change does something)."""
    props = schema.get("properties") or {}
    required = list(schema.get("required") or [])
    for extra in ("content", "text", "new_text", "newText", "old_text", "oldText"):
        if extra in props and extra not in required and "edits" not in required:
            required.append(extra)
            break
    out: dict = {}
    for name in required:
        sub = props.get(name, {})
        if is_path_property(name, sub):
            out[name] = [] if isinstance(sub, dict) and sub.get("type") == "array" else ""
            continue
        if PROJECT_NAME.match(_camel_to_snake(name)):
            out[name] = ""
            continue
        if isinstance(sub, dict) and sub.get("type") == "array" and isinstance(sub.get("items"), dict) \
                and sub["items"].get("type") == "object":
            out[name] = [build_object(sub["items"], depth=depth + 1)]
            continue
        out[name] = build_value(name, sub, depth=depth)
    return out


def put(arguments: dict, slot: Slot, value: str) -> None:
    """Set the slot's path in ``arguments`` (in place)."""
    node: Any = arguments
    steps = slot.steps
    for i, step in enumerate(steps[:-1]):
        if isinstance(step, int):
            while len(node) <= step:
                node.append({})
            node = node[step]
        else:
            fresh: Any = [] if isinstance(steps[i + 1], int) else {}
            node = node.setdefault(step, fresh)
    last = slot.steps[-1]
    node[last] = [value] if slot.is_list else value


def find_string_slots(tool_name: str, input_schema: dict, taken: list[Slot]) -> list[Slot]:
    """Every other string (or string-list) argument, whatever its name (``ref``, ``query``, ``content``):
    a server may read a path from any of them. Left out: the project-id argument, values fixed by
    ``enum``/``const``, and strings a ``pattern`` or ``format`` constrains (a path would be invalid)."""
    names = {s.steps for s in taken}
    slots: list[Slot] = []
    dir_tool = bool(DIR_TOOL.search(tool_name))

    def visit(props: dict, prefix: tuple[str | int, ...]) -> None:
        for name, sub in (props or {}).items():
            if not isinstance(sub, dict) or prefix + (name,) in names:
                continue
            kind = sub.get("type")
            raw_items = sub.get("items")
            items: dict = raw_items if isinstance(raw_items, dict) else {}
            if kind == "object" or (kind is None and "properties" in sub):
                visit(sub.get("properties") or {}, prefix + (name,))
            elif kind == "array" and items.get("type") == "object":
                visit(items.get("properties") or {}, prefix + (name, 0))
            elif kind == "string" or (kind == "array" and items.get("type") == "string"):
                leaf: dict = items if kind == "array" else sub
                if any(k in leaf for k in ("enum", "const", "pattern")) or leaf.get("format") not in (None, "uri", "path"):
                    continue
                if not prefix and PROJECT_NAME.match(_camel_to_snake(name)):
                    continue
                slots.append(Slot(prefix + (name,), kind == "array", dir_tool, bool(DEST_NAME.search(_camel_to_snake(name)))))

    visit((input_schema or {}).get("properties") or {}, ())
    return slots
