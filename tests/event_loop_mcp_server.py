"""A small MCP server on ``lsp_bridge.mcp.stdio.serve_stdio``, for its tests.

* ``echo(text)``: answers the text's length and its first 40 characters;
* ``sized(n)``: answers ``n`` characters;
* ``stray()``: writes to stdout the ways a careless handler or a child process would
  (``print``, ``os.write(1)``, ``sh -c 'echo'``), then answers ``ok``.

After the session ends it prints ``after serve`` to stdout: fd 1 is the wire again.
"""

from __future__ import annotations

import os
import subprocess

import anyio
import mcp_types as types
from mcp.server.lowlevel import Server

from lsp_bridge.mcp.stdio import serve_stdio


def text(value: str) -> types.CallToolResult:
    return types.CallToolResult(content=[types.TextContent(type="text", text=value)])


async def on_list_tools(ctx, params) -> types.ListToolsResult:
    return types.ListToolsResult(tools=[types.Tool(name=n, input_schema={"type": "object"})
                                        for n in ("echo", "sized", "stray")])


async def on_call_tool(ctx, params: types.CallToolRequestParams) -> types.CallToolResult:
    args = params.arguments or {}
    if params.name == "echo":
        return text(f"{len(args['text'])}:{args['text'][:40]}")
    if params.name == "sized":
        return text("x" * int(args["n"]))
    if params.name == "stray":
        print("stray print", flush=True)
        os.write(1, b"stray write\n")
        subprocess.run(["sh", "-c", "echo stray child; read line; echo read:$line"], check=True)
        return text("ok")
    return text("unknown")


async def main() -> None:
    server = Server("event-loop-stdio", on_list_tools=on_list_tools, on_call_tool=on_call_tool)
    async with serve_stdio() as (read, write):
        await server.run(read, write, server.create_initialization_options())
    print("after serve", flush=True)


if __name__ == "__main__":
    anyio.run(main)
