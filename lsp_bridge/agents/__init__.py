"""The agents people use, guarded through their own pre-tool hooks.

One small module per agent (``claude``, ``codex``, ``gemini``, ``copilot``) turns its hook
JSON into file accesses (``model.ToolCall``) and a verdict into its own answer; they are
pure and table-tested. ``hook`` is ``rootguard hook AGENT`` (the roots, the engine, the
tray, the audit log); ``windows`` is what language-server sessions publish for it;
``settings``/``install`` write each agent's own settings for ``rootguard agents``.
Nothing agent-specific lives in the engine.
"""

from __future__ import annotations

import importlib
from types import ModuleType

AGENTS = ("claude", "codex", "gemini", "copilot")


def agent_module(name: str) -> ModuleType:
    """The module of agent ``name``; ``KeyError`` for an agent Root Guard does not know."""
    if name not in AGENTS:
        raise KeyError(name)
    return importlib.import_module(f"lsp_bridge.agents.{name}")
