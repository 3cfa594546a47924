"""The compiled-regex cache: a pattern read back from it is the pattern ``re.compile`` makes.

The credential detectors' patterns come from it in every process after the first,
so a wrong entry would be a detector that misses credentials: each test compares
against ``re.compile`` itself, and damaged or foreign files must change nothing
but the speed.
"""

from __future__ import annotations

import base64
import json
import re

import pytest

from lsp_bridge.core.regex_cache import RegexCache

PATTERNS = [
    (r"(?i)(?:aws)?_?(?:secret)?_?(?:access)?_?key['\"]?\s*[:=]\s*['\"]?([A-Za-z0-9/+=]{40})", 0),
    (r"(?P<scheme>[a-z][a-z0-9+.-]*)://(?P<user>[^:@/\s]+):(?P<password>[^@/\s]+)@", 0),
    (r"(?<![A-Za-z0-9])(ghp|gho|ghu|ghs|ghr)_[A-Za-z0-9]{36}(?![A-Za-z0-9])", 0),
    (r"^\s*#.*$", re.MULTILINE),
    (r"clé|Schlüssel|ключ", re.IGNORECASE),
    (r"\bxox[baprs]-[0-9a-zA-Z]{10,48}\b", re.ASCII),
    (r"a{2,}?b*+c", 0),
]
SAMPLES = [
    "aws_secret_access_key = 'AbCdEfGhIjKlMnOpQrStUvWxYz0123456789/+=='",
    "postgres://app:pw1234@db/app", "token ghp_" + "a1B2" * 9 + " end", "  # a comment\ncode",
    "la CLÉ", "xoxb-1234567890-abc", "aaaabbbc", "nothing here",
]


def _same(cached: re.Pattern, text: str, flags: int) -> None:
    fresh = re.compile(text, flags)
    assert cached == fresh  # same flags and same compiled code
    assert (cached.pattern, cached.groups, cached.groupindex) == (fresh.pattern, fresh.groups, fresh.groupindex)
    for sample in SAMPLES:
        assert cached.findall(sample) == fresh.findall(sample)


def test_a_pattern_read_back_is_the_one_re_compiles(tmp_path):
    path = tmp_path / "regex-code.json"
    first = RegexCache(str(path))
    for text, flags in PATTERNS:
        _same(first.compile(text, flags), text, flags)
    first.save()
    written = path.stat().st_mtime_ns, path.read_bytes()

    second = RegexCache(str(path))  # as the next process reads it
    for text, flags in PATTERNS:
        _same(second.compile(text, flags), text, flags)
    second.save()
    assert (path.stat().st_mtime_ns, path.read_bytes()) == written  # all found: nothing to write


def test_the_same_text_with_other_flags_is_another_entry(tmp_path):
    path = tmp_path / "regex-code.json"
    cache = RegexCache(str(path))
    cache.compile("abc", 0)
    cache.save()
    again = RegexCache(str(path))
    assert again.compile("abc", re.IGNORECASE).match("ABC")
    assert not again.compile("abc", 0).match("ABC")


@pytest.mark.parametrize("damage", ["{not json", "[]", '{"signature": 1, "patterns": {}}', ""])
def test_a_damaged_file_is_compiled_afresh_and_rewritten(tmp_path, damage):
    path = tmp_path / "regex-code.json"
    path.write_text(damage)
    cache = RegexCache(str(path))
    for text, flags in PATTERNS:
        _same(cache.compile(text, flags), text, flags)
    cache.save()
    assert len(json.loads(path.read_text())["patterns"]) == len(PATTERNS)


def test_another_interpreters_file_is_not_used(tmp_path):
    path = tmp_path / "regex-code.json"
    cache = RegexCache(str(path))
    cache.compile(r"\d+", 0)
    cache.save()
    data = json.loads(path.read_text())
    data["signature"][1] = "3.99.0 (someone else's build)"
    key = next(iter(data["patterns"]))
    data["patterns"][key][1] = base64.b64encode(b"\x00" * 8).decode()  # would be wrong if used
    path.write_text(json.dumps(data))
    _same(RegexCache(str(path)).compile(r"\d+", 0), r"\d+", 0)


def test_an_entry_with_garbage_code_falls_back_to_re_compile(tmp_path):
    """The regex engine validates the code it is given; what it refuses is compiled afresh."""
    path = tmp_path / "regex-code.json"
    cache = RegexCache(str(path))
    for text, flags in PATTERNS:
        cache.compile(text, flags)
    cache.save()
    data = json.loads(path.read_text())
    for entry in data["patterns"].values():
        entry[1] = base64.b64encode(bytes(range(256)) * 3).decode()
    path.write_text(json.dumps(data))
    damaged = RegexCache(str(path))
    for text, flags in PATTERNS:
        _same(damaged.compile(text, flags), text, flags)
    damaged.save()
    fixed = RegexCache(str(path))
    for text, flags in PATTERNS:
        _same(fixed.compile(text, flags), text, flags)


def test_no_usable_cache_file_compiles_every_time(tmp_path):
    cache = RegexCache(None)
    _same(cache.compile(r"\w+@\w+", 0), r"\w+@\w+", 0)
    cache.save()  # nothing to write to, and no error
    (tmp_path / "a-file").write_text("")
    unwritable = RegexCache(str(tmp_path / "a-file" / "regex-code.json"))  # its directory cannot exist
    _same(unwritable.compile(r"x+", 0), r"x+", 0)
    unwritable.save()  # nothing written, and no error
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a-file"]
