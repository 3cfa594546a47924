"""What the MCP server says about itself, as plain JSON: its name, its instructions and its tools.

Plain data, no SDK import: ``server`` hands these definitions to the SDK.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

SERVER_NAME = "rootguard"
INSTRUCTIONS = (
    "Files are addressed by a project_id (see list_projects) and a path relative to that project, "
    "with '/' separators. Absolute paths and '..' are refused. Some paths need the user's approval; "
    "errors carry a code (e.g. path_outside_project, approval_denied) you can act on."
)
NO_ROOTS = (  # the command's and the server's answer when there is nothing to serve
    "rootguard mcp: no roots. Start it with --root DIR (an absolute path; repeat for more), "
    "or connect a client that offers MCP roots. The current directory is never used."
)
REL_PATTERN = r"^(?![/\\])(?![A-Za-z]:)(?!(?:.*[/\\])?\.\.(?:[/\\]|$)).+$"


def _tool(*, name: str, description: str, input_schema: dict[str, Any], annotations: dict[str, bool]) -> dict[str, Any]:
    return {"name": name, "description": description, "inputSchema": input_schema, "annotations": annotations}


def tool_definitions(project_ids: Sequence[str]) -> list[dict[str, Any]]:
    """The tools as the wire shows them (``tools/list``): plain JSON, the project ids in each schema."""
    project: dict[str, Any] = {"type": "string", "description": "A project id from list_projects."}
    if project_ids:
        project["enum"] = list(project_ids)
    path = {
        "type": "string",
        "minLength": 1,
        "pattern": REL_PATTERN,
        "description": "Path relative to the project root, '/' separated; absolute paths and '..' are refused. "
                       "Write a literal '%' in a name as '%25'.",
    }
    edits = {
        "type": "array",
        "minItems": 1,
        "items": {
            "type": "object",
            "additionalProperties": False,
            "required": ["old_text", "new_text"],
            "properties": {
                "old_text": {"type": "string", "minLength": 1, "description": "Exact text; must occur exactly once."},
                "new_text": {"type": "string"},
            },
        },
    }

    def schema(props: dict, required: Sequence[str]) -> dict:
        return {"type": "object", "additionalProperties": False, "required": list(required), "properties": props}

    read_only = {"readOnlyHint": True}
    writes = {"readOnlyHint": False, "destructiveHint": False}
    destroys = {"readOnlyHint": False, "destructiveHint": True}
    dir_path = dict(path, description="Directory relative to the project root ('.' for the root).")
    return [
        _tool(name="list_projects", description="The projects this server can reach, by id.",
                   input_schema=schema({}, []), annotations=read_only),
        _tool(name="read_file", description="Read a text file (size-limited; binary files are reported, not returned).",
                   input_schema=schema({"project_id": project, "relative_path": path}, ["project_id", "relative_path"]),
                   annotations=read_only),
        _tool(name="list_directory", description="List a directory; entries the policy hides are counted, not shown.",
                   input_schema=schema({"project_id": project, "relative_path": dir_path}, ["project_id"]),
                   annotations=read_only),
        _tool(
            name="search_files",
            description="Find files by name glob and optionally by text; results are filtered by the policy and bounded.",
            input_schema=schema({
                "project_id": project,
                "relative_path": dir_path,
                "pattern": {"type": "string", "description": "Glob on the file name (or on the path below the "
                                                             "directory when it contains '/'). Default '*'."},
                "query": {"type": "string", "description": "Text to find in file contents (plain substring)."},
                "max_results": {"type": "integer", "minimum": 1, "maximum": 500, "default": 50},
                "case_sensitive": {"type": "boolean", "default": False},
            }, ["project_id"]),
            annotations=read_only,
        ),
        _tool(name="get_file_info", description="Type, size, modification time and permissions of a path.",
                   input_schema=schema({"project_id": project, "relative_path": path}, ["project_id", "relative_path"]),
                   annotations=read_only),
        _tool(name="write_file", description="Create or replace a text file (atomic; parent directories are created).",
                   input_schema=schema({"project_id": project, "relative_path": path, "content": {"type": "string"}},
                                       ["project_id", "relative_path", "content"]),
                   annotations=writes),
        _tool(name="edit_file", description="Exact-match replacements in one file; returns a unified diff.",
                   input_schema=schema({"project_id": project, "relative_path": path, "edits": edits,
                                        "dry_run": {"type": "boolean", "default": False}},
                                       ["project_id", "relative_path", "edits"]),
                   annotations=writes),
        _tool(name="move_file", description="Move or rename a file within a project (never overwrites).",
                   input_schema=schema({"project_id": project, "source": path, "destination": path},
                                       ["project_id", "source", "destination"]),
                   annotations=destroys),
        _tool(name="delete_file", description="Delete one file.",
                   input_schema=schema({"project_id": project, "relative_path": path}, ["project_id", "relative_path"]),
                   annotations=destroys),
        _tool(
            name="apply_patch",
            description="A batch of changes across files of one project, decided whole before the first write: "
                        "one refused target leaves every file untouched.",
            input_schema=schema({
                "project_id": project,
                "changes": {
                    "type": "array",
                    "minItems": 1,
                    "maxItems": 100,
                    "items": {
                        "type": "object",
                        "additionalProperties": False,
                        "required": ["relative_path"],
                        "properties": {
                            "relative_path": path,
                            "edits": edits,
                            "content": {"type": "string"},
                            "delete": {"type": "boolean", "const": True},
                        },
                    },
                },
            }, ["project_id", "changes"]),
            annotations=destroys,
        ),
    ]


