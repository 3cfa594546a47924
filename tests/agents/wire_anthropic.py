"""Anthropic Messages (`POST /v1/messages`), streamed as SSE or one JSON answer (Claude Code)."""

from __future__ import annotations

import json
from typing import Any

from tests.agents.turns import Say, Seen, ToolCall, ToolResult, Turn, result_text

MODEL = "claude-fake"


def parse(body: dict[str, Any]) -> Seen:
    results = []
    for message in body.get("messages") or []:
        content = message.get("content")
        if not isinstance(content, list):
            continue
        for block in content:
            if isinstance(block, dict) and block.get("type") == "tool_result":
                results.append(ToolResult(result_text(block.get("content")), bool(block.get("is_error"))))
    return Seen(bool(body.get("tools")), tuple(results), bool(body.get("stream")))


def _block(turn: Turn, index: int) -> dict[str, Any]:
    if isinstance(turn, ToolCall):
        return {"type": "tool_use", "id": f"toolu_fake_{index:02d}", "name": turn.name, "input": turn.input}
    return {"type": "text", "text": turn.text}


def reply(turn: Turn, seen: Seen) -> tuple[str, bytes]:
    index = len(seen.results)
    block = _block(turn, index)
    stop = "tool_use" if isinstance(turn, ToolCall) else "end_turn"
    usage = {"input_tokens": 10, "output_tokens": 5, "cache_creation_input_tokens": 0, "cache_read_input_tokens": 0}
    message = {"id": f"msg_fake_{index:02d}", "type": "message", "role": "assistant", "model": MODEL,
               "content": [block], "stop_reason": stop, "stop_sequence": None, "usage": usage}
    if not seen.stream:
        return "application/json", json.dumps(message).encode()
    start = dict(message, content=[], stop_reason=None)
    opened: dict[str, Any]
    delta: dict[str, Any]
    if isinstance(turn, Say):
        opened, delta = {"type": "text", "text": ""}, {"type": "text_delta", "text": turn.text}
    else:
        opened = {**block, "input": {}}
        delta = {"type": "input_json_delta", "partial_json": json.dumps(block["input"])}
    events = [
        ("message_start", {"type": "message_start", "message": start}),
        ("content_block_start", {"type": "content_block_start", "index": 0, "content_block": opened}),
        ("content_block_delta", {"type": "content_block_delta", "index": 0, "delta": delta}),
        ("content_block_stop", {"type": "content_block_stop", "index": 0}),
        ("message_delta", {"type": "message_delta", "delta": {"stop_reason": stop, "stop_sequence": None},
                           "usage": {"output_tokens": 5}}),
        ("message_stop", {"type": "message_stop"}),
    ]
    return "text/event-stream", b"".join(f"event: {name}\ndata: {json.dumps(data)}\n\n".encode() for name, data in events)


def count_tokens() -> tuple[str, bytes]:
    return "application/json", b'{"input_tokens": 10}'
