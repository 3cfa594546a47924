"""What a scripted fake model says, and what it saw: plain data shared by every wire format."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class ToolCall:
    """The model calls tool ``name`` with ``input`` (a JSON object; a string for a free-form
    tool such as Codex's ``apply_patch``, sent as the raw text)."""

    name: str
    input: dict[str, Any] | str


@dataclass(frozen=True)
class Say:
    """The model's final answer: text, no tool call."""

    text: str


Turn = ToolCall | Say


@dataclass(frozen=True)
class ToolResult:
    """A tool result the agent sent back to the model, as text."""

    text: str
    is_error: bool = False


@dataclass(frozen=True)
class Seen:
    """What one request carried that the script keys on."""

    has_tools: bool
    results: tuple[ToolResult, ...] = ()
    stream: bool = False


@dataclass
class Request:
    """One request the fake model received, logged whole."""

    method: str
    path: str
    wire: str  # anthropic | responses | chat | gemini | other
    body: bytes
    headers: dict[str, str] = field(default_factory=dict)
    seen: Seen = field(default_factory=lambda: Seen(False))
    received: float = 0.0  # time.monotonic() when the request was read
    answered: float = 0.0  # ... and when its answer was written

    @property
    def text(self) -> str:
        return self.body.decode("utf-8", errors="replace")

    def json(self) -> Any:
        return json.loads(self.body) if self.body else None


def next_turn(script: list[Turn], seen: Seen, fallback: str = "done") -> Turn:
    """The turn a request gets: the first when no tool result came back yet, the n-th after
    n results; a request without tools (a side call: title, router, next speaker) gets text."""
    if not seen.has_tools:
        return Say(fallback)
    index = len(seen.results)
    return script[index] if index < len(script) else Say(fallback)


def result_text(content: Any) -> str:
    """A tool result's content as text, whatever the wire nests it in."""
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(result_text(part) for part in content)
    if isinstance(content, dict):
        for key in ("text", "output", "content", "error", "llmContent"):
            if key in content:
                return result_text(content[key])
        return json.dumps(content)
    return str(content)
