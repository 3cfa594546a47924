"""``core.json_read.loads`` is ``json.loads``: the same value or the same error, on any text.

The texts are generated: JSON documents (nested, escaped, unicode, numbers of every
shape, the three constants) in several layouts, then cut, spliced and salted with
the characters that break parsers, and a set of hand-picked hostile texts.
"""

from __future__ import annotations

import json
import math
import subprocess
import sys

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from lsp_bridge.core.json_read import loads

SCALARS = (st.none() | st.booleans() | st.integers() | st.floats(allow_nan=True)
           | st.text(alphabet=st.characters(codec="utf-8"), max_size=12))
DOCUMENTS = st.recursive(SCALARS, lambda inner: st.lists(inner, max_size=4)
                         | st.dictionaries(st.text(max_size=6), inner, max_size=4), max_leaves=20)
NOISE = st.sampled_from(["", " ", "\n", "\t", "\r", "\ufeff", "\x00", ",", "]", "}", "{", "[", '"', "\\", "/",
                         "NaN", "-Infinity", "1e999", "0x1", "01", "-", "tru", "\u2028", "\ud800", "//c", "x"])


def same(text: str) -> None:
    """``loads(text)`` gives what ``json.loads(text)`` gives, error included."""
    try:
        expected: object = ("value", json.loads(text))
    except (ValueError, RecursionError) as exc:
        expected = ("error", type(exc), str(exc), getattr(exc, "pos", None))
    try:
        found: object = ("value", loads(text))
    except (ValueError, RecursionError) as exc:
        found = ("error", type(exc), str(exc), getattr(exc, "pos", None))
    assert _comparable(found) == _comparable(expected), text


def _comparable(value: object) -> object:
    """NaN compared as a marker (it never equals itself)."""
    if isinstance(value, float) and math.isnan(value):
        return "NaN"
    if isinstance(value, tuple):
        return tuple(_comparable(v) for v in value)
    if isinstance(value, list):
        return [_comparable(v) for v in value]
    if isinstance(value, dict):
        return {k: _comparable(v) for k, v in value.items()}
    return value


@settings(max_examples=400, deadline=None)
@given(DOCUMENTS, st.sampled_from([None, 0, 2]), st.booleans(), NOISE, NOISE, st.integers(0, 10_000))
def test_generated_documents_and_their_damaged_forms(document, indent, ascii_only, before, inside, cut):
    text = json.dumps(document, indent=indent, ensure_ascii=ascii_only)
    same(text)
    same(f"{before}{text}{inside}")
    at = cut % (len(text) + 1)
    same(text[:at])
    same(text[:at] + inside + text[at:])


@pytest.mark.parametrize("text", [
    "", " ", "\ufeff{}", "{}\ufeff", '{"a": 1} {"b": 2}', '{"a": 1}\n\n', "[1,]", "{,}", '{"a" 1}', "[01]",
    '"\\ud800"', '"\x01"', '"\\u12"', "NaN", "-Infinity", "Infinity", "1e400", "-0", "1E+2", "[" * 50 + "]" * 50,
    '{"a": {"b": [true, false, null, 1.5e-3, "\\u00e9\\n"]}}', "9" * 4301, "tru", "nul", "\u00a0{}", "{}\x0c",
])
def test_hand_picked_texts(text):
    same(text)


def test_nesting_past_the_interpreter_limit_is_a_recursion_error_as_in_json():
    same("[" * 100_000 + "]" * 100_000)


def test_a_short_command_reading_json_imports_neither_json_nor_re():
    code = ("import sys; from lsp_bridge.core.json_read import loads; loads('{\"a\": [1, 2.5, \"x\"]}'); "
            "print(sorted({'json', 're', 'enum'} & set(sys.modules)))")
    shown = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert shown.strip() == "[]"
