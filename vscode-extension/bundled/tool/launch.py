"""Runs a module of the Root Guard copy bundled in the VS Code extension.

    python launch.py lsp_bridge            the language server on stdio
    python launch.py lsp_bridge.cli mcp …  the guarded MCP server (the SDK is bundled for Linux x86-64)
    python launch.py --can-serve-mcp       exit 0 when the MCP server can start here, else 1 and why

The bundle (``../libs``: lsp_bridge and its pure-Python dependencies) goes first
on ``sys.path``, so the extension always runs the server it was built with,
whatever else the interpreter has installed. Any Python >= 3.11 will do.
"""

import os
import runpy
import sys

MINIMUM = (3, 11)

if sys.version_info < MINIMUM:
    found = ".".join(map(str, sys.version_info[:3]))
    sys.stderr.write(f"Root Guard needs Python {MINIMUM[0]}.{MINIMUM[1]} or newer; {sys.executable} is {found}\n")
    sys.exit(3)
if len(sys.argv) < 2:
    sys.stderr.write("usage: launch.py MODULE [ARGS...]\n")
    sys.exit(2)

LIBS = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "libs")
if not os.path.isdir(os.path.join(LIBS, "lsp_bridge")):
    sys.stderr.write(f"Root Guard: the bundled server is missing from {LIBS}; reinstall the extension\n")
    sys.exit(3)
sys.path[0] = LIBS  # instead of this script's directory
# The MCP SDK (bundled/mcp, Linux x86-64): the pure part (a zip), cryptography (abi3), and the
# packages built for this CPython.
MCP = os.path.join(os.path.dirname(LIBS), "mcp")
COMPILED = os.path.join(MCP, f"cp{sys.version_info[0]}{sys.version_info[1]}")
if sys.platform == "linux" and os.uname().machine == "x86_64" and os.path.isdir(COMPILED):
    sys.path[1:1] = [os.path.join(MCP, "common.zip"), os.path.join(MCP, "abi3"), COMPILED]
if sys.argv[1] == "--can-serve-mcp":
    try:
        import mcp.server.lowlevel  # noqa: F401  (what `rootguard mcp` loads)
    except ImportError as err:
        where = f"{sys.platform}/{os.uname().machine if hasattr(os, 'uname') else '?'}"
        sys.stdout.write(f"the MCP SDK does not load with Python {sys.version.split()[0]} on {where}: {err}; the "
                         "extension carries it for Linux x86-64 with CPython 3.11-3.14 (set rootguard.python to one)\n")
        sys.exit(1)
    sys.stdout.write("ok\n")
    sys.exit(0)
module = sys.argv[1]
sys.argv = [module, *sys.argv[2:]]
runpy.run_module(module, run_name="__main__", alter_sys=True)
