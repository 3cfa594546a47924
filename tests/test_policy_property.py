"""Property: on random trees with random symlinks, the engine never allows a path
outside the union. The oracle is deliberately simple and independent (pathlib)."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from lsp_bridge.core.policy import Policy
from lsp_bridge.core.scope import build_scope
from lsp_bridge.core.settings import Config

NAMES = ["a", "b", "c", "root", "root2", "root_evil"]
segment = st.sampled_from(NAMES + ["..", "."])


def oracle_inside(path: str, roots: list[Path]) -> bool:
    try:
        target = Path(path).resolve()
    except RuntimeError:  # a symbolic link loop: nothing is inside
        return False
    return any(target == r or r in target.parents for r in roots)


@st.composite
def trees(draw):
    dirs = draw(st.lists(st.lists(st.sampled_from(NAMES), min_size=1, max_size=3), max_size=8))
    files = draw(st.lists(st.lists(st.sampled_from(NAMES), min_size=1, max_size=3), max_size=6))
    links = draw(
        st.lists(
            st.tuples(
                st.lists(st.sampled_from(NAMES), min_size=1, max_size=3),
                st.lists(segment, min_size=1, max_size=4),
                st.booleans(),  # absolute target
            ),
            max_size=6,
        )
    )
    roots = draw(st.lists(st.sampled_from(["root", "root2", "a/root", "root/a"]), min_size=1, max_size=2))
    probes = draw(st.lists(st.lists(segment, min_size=1, max_size=5), min_size=1, max_size=8))
    return dirs, files, links, roots, probes


def build(base: Path, dirs, files, links, roots):
    """Create what can be created; a name already taken by another kind is skipped."""
    for d in dirs + [r.split("/") for r in roots]:
        try:
            base.joinpath(*d).mkdir(parents=True, exist_ok=True)
        except OSError:
            pass
    for f in files:
        try:
            base.joinpath(*f).parent.mkdir(parents=True, exist_ok=True)
            if not base.joinpath(*f).exists():
                base.joinpath(*f).write_text("x")
        except OSError:
            pass
    for where, to, absolute in links:
        link = base.joinpath(*where)
        text = str(base.joinpath(*to)) if absolute else os.path.join(*to)
        try:
            link.parent.mkdir(parents=True, exist_ok=True)
            link.symlink_to(text)
        except OSError:
            pass


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(trees())
def test_no_path_outside_the_union_is_ever_allowed(tree):
    dirs, files, links, roots, probes = tree
    with tempfile.TemporaryDirectory() as tmp:
        base = Path(os.path.realpath(tmp)) / "t"
        base.mkdir()
        build(base, dirs, files, links, roots)
        folders = [str(base / r) for r in roots if (base / r).is_dir() and not (base / r).is_symlink()]
        if not folders:
            return
        config = Config(files=())
        scope = build_scope(folders, config)
        policy = Policy(scope, [(f, config) for f in folders])
        real_roots = [Path(f).resolve() for f in scope.union.paths]
        for probe in probes:
            path = os.path.join(str(base), *probe)
            for op in ("read", "write", "delete"):
                decision = policy.decide(op, path)
                if decision.decision != "deny":
                    assert oracle_inside(path, real_roots), (path, decision)
                    assert oracle_inside(decision.path, real_roots)
            plain = os.path.normpath(path)
            if "/.." not in path and oracle_inside(plain, real_roots) and Path(plain).resolve() == Path(plain):
                assert policy.decide("read", plain).decision == "allow", plain
