"""The one glob dialect (docs/configuration.md "Globs") against an independent oracle.

The oracle is written from the documented rules only: braces expanded, each
alternative split into components, ``**`` matching any number of components
(zero included), other components matched by ``fnmatch`` on one name, a pattern
without an inner ``/`` floating to any depth, and a path covered when the pattern
matches it or one of its parent directories.
"""

from __future__ import annotations

import fnmatch
import itertools
import os
import re
import tempfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from lsp_bridge.core.config import diagnostics_for_text
from lsp_bridge.core.globs import GlobError, check_pattern, matches
from lsp_bridge.core.policy import Policy, Target
from lsp_bridge.core.protected import ProtectedAreas
from lsp_bridge.core.scope import build_scope
from lsp_bridge.core.settings import Config, PathRule

NAMES = ["a", "b", "src", ".env", "x.pem", "keys"]


# ---------------------------------------------------------------------------- the oracle


def oracle_expand(pattern: str) -> list[str]:
    """Non-nested {a,b} groups, expanded left to right."""
    pieces = re.split(r"(\{[^{}]*\})", pattern)
    options = [p[1:-1].split(",") if p.startswith("{") else [p] for p in pieces]
    return ["".join(choice) for choice in itertools.product(*options)]


def oracle_match(comps: list[str], parts: list[str]) -> bool:
    if not comps:
        return not parts
    head, rest = comps[0], comps[1:]
    if head == "**":
        return any(oracle_match(rest, parts[i:]) for i in range(len(parts) + 1))
    return bool(parts) and fnmatch.fnmatchcase(parts[0], head) and oracle_match(rest, parts[1:])


def oracle_covers(pattern: str, rel: str) -> bool:
    parts = rel.split("/")
    for alt in oracle_expand(pattern):
        dir_only = alt.endswith("/")
        body = alt.strip("/")
        anchored = alt.startswith("/") or "/" in body
        comps = body.split("/") if anchored else ["**", body]
        for k in range(1, len(parts) + 1):
            if dir_only and k == len(parts):
                continue  # a trailing / names directories: what is inside them
            if oracle_match(comps, parts[:k]):
                return True
    return False


# ---------------------------------------------------------------------------- strategies

literal = st.sampled_from(NAMES)
wild = st.sampled_from(["*", "?", "*.pem", ".e*", "[ak]*", "[!a]", "s?c"])
brace = st.lists(st.sampled_from(NAMES + ["*.pem", "k*"]), min_size=2, max_size=3, unique=True).map(
    lambda xs: "{" + ",".join(xs) + "}"
)
component = st.one_of(literal, wild, brace, st.just("**"))


@st.composite
def patterns(draw):
    comps = draw(st.lists(component, min_size=1, max_size=3))
    text = "/".join(comps)
    if draw(st.booleans()):
        text = "/" + text
    if comps[-1] != "**" and draw(st.integers(0, 4)) == 0:
        text += "/"
    return text


paths = st.lists(literal, min_size=1, max_size=4).map("/".join)


@settings(max_examples=600, deadline=None)
@given(pattern=patterns(), rel=paths)
def test_matcher_agrees_with_the_documented_dialect(pattern, rel):
    assert matches(pattern, rel) == oracle_covers(pattern, rel), (pattern, rel)


@pytest.mark.parametrize("pattern, rel, expected", [
    ("{secrets,keys}/**", "secrets/prod.env", True),
    ("{secrets,keys}/**", "keys/id", True),
    ("{.env,secrets}", "secrets/prod.env", True),
    ("{.env,secrets}", "a/.env", True),
    ("special/**", "special", True),  # dir/** covers dir itself
    ("special/**", "a/special", False),
    ("*.pem", "keys/id.pem", True),
    ("*", "a/b", True),  # covers through the matched directory a
    ("src/*.ts", "src/a/b.ts", False),  # * never crosses /
])
def test_documented_examples(pattern, rel, expected):
    assert matches(pattern, rel) is expected


@pytest.mark.parametrize("pattern", [
    "", " x", "x ", "!x", "a\\b", "a**", "**b/c", "{a,b", "a}", "[ab", "a]", "a//b", "./a", "a/../b",
    "{a,}", "x{,b}", "{a}", "{}",
    "{" + ",".join(str(i) for i in range(300)) + "}",
])
def test_unsupported_patterns_are_errors(pattern):
    with pytest.raises(GlobError):
        check_pattern(pattern)


def test_an_unsupported_pattern_is_a_configuration_error_at_its_position():
    text = 'version = 2\n[[paths]]\nid = "a"\npath = "."\nincludes = ["ok/**", "{secrets,keys"]\n'
    found = [d.format() for d in diagnostics_for_text(text, "/p/.rootguard.toml", "project", "/p")
             if d.severity == "error"]
    assert len(found) == 1 and found[0].startswith("/p/.rootguard.toml:5:22: error: `paths[0].includes[1]`")


# ---------------------------------------------------------------------------- rule sets

VERDICTS = ["allow", "request", "deny"]
STRICT = {"allow": 0, "request": 1, "deny": 2}


@st.composite
def rule_sets(draw):
    rules = []
    for index in range(draw(st.integers(1, 4))):
        anchor = draw(st.sampled_from(["", "a", "src"]))
        includes = draw(st.lists(patterns(), min_size=1, max_size=2))
        excludes = draw(st.lists(patterns(), max_size=1))
        rules.append((f"r{index}", anchor, tuple(includes), tuple(excludes), draw(st.sampled_from(VERDICTS))))
    return rules


def literal_prefix(alt: str) -> int:
    body = alt.lstrip("/")
    for i, char in enumerate(body):
        if char in "*?[{":
            return i
    return len(body)


def oracle_decision(rules, rel_path: str) -> str:
    best = None
    for _, anchor, includes, excludes, verdict in rules:
        if anchor and not (rel_path == anchor or rel_path.startswith(anchor + "/")):
            continue
        rel = rel_path[len(anchor) + 1:] if anchor else rel_path
        if not rel or any(oracle_covers(e, rel) for e in excludes):
            continue
        lengths = [literal_prefix(alt) for p in includes for alt in oracle_expand(p) if oracle_covers(alt, rel)]
        if not lengths:
            continue
        rank = (len(anchor.split("/")) if anchor else 0, max(lengths), STRICT[verdict])
        if best is None or rank > best[0]:
            best = (rank, verdict)
    return best[1] if best else "allow"  # no rule: inside the baseline


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(rules=rule_sets(), probes=st.lists(paths, min_size=1, max_size=6))
def test_random_rule_sets_decide_as_the_oracle(rules, probes):
    with tempfile.TemporaryDirectory() as scratch:
        root = os.path.realpath(scratch)
        for name in ("a", "src"):
            Path(root, name).mkdir()
        config = Config(paths=tuple(
            PathRule(id=rid, path=anchor or ".", anchor=os.path.join(root, anchor) if anchor else root, read=verdict,
                     includes=includes, excludes=excludes, source="user")
            for rid, anchor, includes, excludes, verdict in rules
        ))
        scope = build_scope([root], config)
        policy = Policy(scope, [(root, config)], areas=ProtectedAreas())
        for rel in probes:
            got = policy.decide_target("read", Target(os.path.join(root, rel))).decision
            assert got == oracle_decision(rules, rel), (rules, rel)
