"""Gemini (`:generateContent` side calls, `:streamGenerateContent?alt=sse` for the agent loop)."""

from __future__ import annotations

import json
from typing import Any

from tests.agents.turns import Say, Seen, ToolCall, ToolResult, Turn, result_text

# The JSON-mode side calls (the model router's classifiers, the next-speaker check) all read this one answer.
SIDE_ANSWER = json.dumps({"reasoning": "scripted fake model", "model_choice": "flash", "next_speaker": "user",
                          "complexity_reasoning": "scripted fake model", "complexity_score": 10})


def parse(body: dict[str, Any], stream: bool) -> Seen:
    results = []
    for content in body.get("contents") or []:
        for part in (content.get("parts") or []) if isinstance(content, dict) else []:
            response = part.get("functionResponse") if isinstance(part, dict) else None
            if isinstance(response, dict):
                payload = response.get("response")
                is_error = isinstance(payload, dict) and "error" in payload
                results.append(ToolResult(result_text(payload), is_error))
    return Seen(bool(body.get("tools")), tuple(results), stream)


def reply(turn: Turn, seen: Seen) -> tuple[str, bytes]:
    if not seen.has_tools:
        turn = Say(SIDE_ANSWER)
    if isinstance(turn, ToolCall):
        part: dict[str, Any] = {"functionCall": {"name": turn.name, "args": turn.input}}
    else:
        part = {"text": turn.text}
    answer = {
        "candidates": [{"content": {"role": "model", "parts": [part]}, "finishReason": "STOP", "index": 0}],
        "usageMetadata": {"promptTokenCount": 10, "candidatesTokenCount": 5, "totalTokenCount": 15},
        "modelVersion": "gemini-fake",
    }
    if not seen.stream:
        return "application/json", json.dumps(answer).encode()
    return "text/event-stream", f"data: {json.dumps(answer)}\r\n\r\n".encode()


def count_tokens() -> tuple[str, bytes]:
    return "application/json", b'{"totalTokens": 10}'
