"""A small stdio MCP server for the probe's tests (mcp SDK, lowlevel Server).

Usage: python tests/fake_mcp_server.py ROOT

* ``read_note(path)``: reads a file after a *lexical* prefix check (``startswith(ROOT)``),
  the classic bug: a prefix sibling and a symlink inside pointing out are served.
* ``export_report(output_path, signature)``: takes a path, but its required
  ``signature`` must match a pattern the probe cannot satisfy, so the probe skips it.
* ``ping_server()``: no path argument.
"""

from __future__ import annotations

import os
import sys

import anyio
import mcp_types as types
from mcp.server.lowlevel import NotificationOptions, Server
from mcp.server.stdio import stdio_server

ROOT = sys.argv[1]


def tools() -> list[types.Tool]:
    obj = {"type": "object"}
    return [
        types.Tool(name="read_note", description="Read a note from the notes folder.",
                   input_schema=obj | {"properties": {"path": {"type": "string"}}, "required": ["path"]}),
        types.Tool(name="export_report", description="Write a signed report.",
                   input_schema=obj | {"properties": {
                       "output_path": {"type": "string", "description": "Where to write the report."},
                       "signature": {"type": "string", "pattern": "^[0-9a-f]{64}$"},
                   }, "required": ["output_path", "signature"]}),
        types.Tool(name="ping_server", description="Answers pong.", input_schema=obj | {"properties": {}}),
    ]


def text(value: str, error: bool = False) -> types.CallToolResult:
    return types.CallToolResult(content=[types.TextContent(type="text", text=value)], is_error=error)


async def on_list_tools(ctx, params) -> types.ListToolsResult:
    return types.ListToolsResult(tools=tools())


async def on_call_tool(ctx, params: types.CallToolRequestParams) -> types.CallToolResult:
    args = params.arguments or {}
    if params.name == "ping_server":
        return text("pong")
    if params.name == "read_note":
        path = os.path.abspath(str(args.get("path", "")))
        if not path.startswith(ROOT):  # lexical and prefix-only: the bug the probe finds
            return text(f"refused: {path} is outside {ROOT}", error=True)
        try:
            with open(path, encoding="utf-8") as fh:
                return text(fh.read())
        except OSError as err:
            return text(f"cannot read: {err.strerror}", error=True)
    if params.name == "export_report":
        return text("signature invalid", error=True)
    return text(f"unknown tool {params.name}", error=True)


async def main() -> None:
    server = Server("fake-notes", version="1.0", on_list_tools=on_list_tools, on_call_tool=on_call_tool)
    async with stdio_server() as (read, write):
        await server.run(read, write, server.create_initialization_options(NotificationOptions()))


if __name__ == "__main__":
    anyio.run(main)
