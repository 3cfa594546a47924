"""OpenAI Responses (`POST /v1/responses`, Codex) and Chat Completions (`POST /v1/chat/completions`,
Copilot CLI's own-model mode), streamed as SSE or one JSON answer."""

from __future__ import annotations

import json
import time
from typing import Any

from tests.agents.turns import Say, Seen, ToolCall, ToolResult, Turn, result_text

MODEL = "fake-model"
_RESULT_ITEMS = ("function_call_output", "custom_tool_call_output", "local_shell_call_output")


def _sse(events: list[dict[str, Any]], named: bool) -> bytes:
    out = []
    for event in events:
        head = f"event: {event['type']}\n" if named else ""
        out.append(f"{head}data: {json.dumps(event)}\n\n")
    return "".join(out).encode()


# ---------------------------------------------------------------- Responses


def parse_responses(body: dict[str, Any]) -> Seen:
    items = body.get("input")
    results = []
    if isinstance(items, list):
        for item in items:
            if isinstance(item, dict) and item.get("type") in _RESULT_ITEMS:
                results.append(ToolResult(result_text(item.get("output"))))
    return Seen(bool(body.get("tools")), tuple(results), bool(body.get("stream")))


def _responses_item(turn: Turn, index: int) -> dict[str, Any]:
    if isinstance(turn, ToolCall) and isinstance(turn.input, str):
        return {"type": "custom_tool_call", "id": f"ctc_fake_{index:02d}", "call_id": f"call_fake_{index:02d}",
                "name": turn.name, "input": turn.input, "status": "completed"}
    if isinstance(turn, ToolCall):
        return {"type": "function_call", "id": f"fc_fake_{index:02d}", "call_id": f"call_fake_{index:02d}",
                "name": turn.name, "arguments": json.dumps(turn.input), "status": "completed"}
    return {"type": "message", "id": f"msg_fake_{index:02d}", "role": "assistant", "status": "completed",
            "content": [{"type": "output_text", "text": turn.text, "annotations": []}]}


def reply_responses(turn: Turn, seen: Seen) -> tuple[str, bytes]:
    index = len(seen.results)
    item = _responses_item(turn, index)
    usage = {"input_tokens": 10, "input_tokens_details": {"cached_tokens": 0}, "output_tokens": 5,
             "output_tokens_details": {"reasoning_tokens": 0}, "total_tokens": 15}
    response = {"id": f"resp_fake_{index:02d}", "object": "response", "created_at": int(time.time()),
                "model": MODEL, "status": "completed", "output": [item], "usage": usage}
    if not seen.stream:
        return "application/json", json.dumps(response).encode()
    events: list[dict[str, Any]] = [
        {"type": "response.created", "response": dict(response, status="in_progress", output=[], usage=None)},
        {"type": "response.output_item.added", "output_index": 0, "item": dict(item, status="in_progress")},
    ]
    if isinstance(turn, Say):
        events.append({"type": "response.output_text.delta", "item_id": item["id"], "output_index": 0,
                       "content_index": 0, "delta": turn.text})
    events += [
        {"type": "response.output_item.done", "output_index": 0, "item": item},
        {"type": "response.completed", "response": response},
    ]
    return "text/event-stream", _sse(events, named=True)


# ---------------------------------------------------------------- Chat Completions


def parse_chat(body: dict[str, Any]) -> Seen:
    results = []
    for message in body.get("messages") or []:
        if isinstance(message, dict) and message.get("role") == "tool":
            results.append(ToolResult(result_text(message.get("content"))))
    return Seen(bool(body.get("tools")), tuple(results), bool(body.get("stream")))


def reply_chat(turn: Turn, seen: Seen) -> tuple[str, bytes]:
    index = len(seen.results)
    base = {"id": f"chatcmpl-fake-{index:02d}", "created": int(time.time()), "model": MODEL}
    usage = {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15}
    if isinstance(turn, ToolCall):
        arguments = turn.input if isinstance(turn.input, str) else json.dumps(turn.input)
        call = {"id": f"call_fake_{index:02d}", "type": "function", "function": {"name": turn.name, "arguments": arguments}}
        message: dict[str, Any] = {"role": "assistant", "content": None, "tool_calls": [call]}
        finish = "tool_calls"
    else:
        message, finish = {"role": "assistant", "content": turn.text}, "stop"
    if not seen.stream:
        answer = dict(base, object="chat.completion", usage=usage,
                      choices=[{"index": 0, "message": message, "finish_reason": finish}])
        return "application/json", json.dumps(answer).encode()
    delta = dict(message)
    if "tool_calls" in delta:
        delta["tool_calls"] = [dict(delta["tool_calls"][0], index=0)]
    chunk = dict(base, object="chat.completion.chunk")
    events = [
        dict(chunk, choices=[{"index": 0, "delta": delta, "finish_reason": None}]),
        dict(chunk, choices=[{"index": 0, "delta": {}, "finish_reason": finish}]),
        dict(chunk, choices=[], usage=usage),
    ]
    return "text/event-stream", _sse(events, named=False) + b"data: [DONE]\n\n"


def models() -> tuple[str, bytes]:
    listing = {"object": "list", "data": [{"id": MODEL, "object": "model", "created": 0, "owned_by": "fake"}]}
    return "application/json", json.dumps(listing).encode()
