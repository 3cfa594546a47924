"""Differential: a listing's verdicts are the ones each entry gets on its own.

``FileTools.peek_entries`` (and under it ``Policy.decide_children``) decides a
directory's plain entries without resolving each entry (the directory was opened at
its canonical path); ``Policy.decide_granted`` decides one resolved target. On
random trees, random rules (user or project file, globs, exact file rules,
several roots, a sibling worktree, session grants, hard links, protected names)
every entry of every directory must get the verdict it gets when resolved on its
own and decided as a batch of one, for every operation.
"""

from __future__ import annotations

import os
import subprocess
import tempfile
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from lsp_bridge.core.policy import Target, inspect
from lsp_bridge.core.resolver import ResolveError, resolve
from lsp_bridge.mcp import safe_listing
from lsp_bridge.mcp.file_tools import FileTools, PathChanged

NAMES = ["a", "b", "gen", "vault", ".env", ".env.local", "x.js", ".git", ".rootguard.toml", "%41", "C:x",
         "back\\slash", "ctl\x01", "A", ".envrc", ".vscode", "settings.json", ".husky"]
GLOBS = ["**/*", "*.js", "a/**", "**/.env*", "gen/*", "b", "!x.js", "**/a/*.js", "[ab]"]
VERDICTS = st.sampled_from(["allow", "request", "deny", None])

PATH_NAMES = NAMES[:8] + ["A", ".vscode", "settings.json", ".husky", ".envrc"]
rel_path = st.lists(st.sampled_from(PATH_NAMES), min_size=1, max_size=3).map("/".join)
rule = st.tuples(
    st.one_of(st.just("."), rel_path, st.just("../outside")),
    VERDICTS, VERDICTS,
    st.lists(st.sampled_from(GLOBS), max_size=2),
    st.lists(st.sampled_from(GLOBS), max_size=2),
)


def engine(tools: FileTools, op: str, target: Target) -> str:
    """The engine's verdict after grants, as a batch of one."""
    return tools.policy.decide_batch([(op, target)], granted=tools.grants).results[0].verdict


def full_peek(tools: FileTools, root: str, relative: str) -> str:
    """``FileTools.peek`` with the full engine: the resolver, then a batch of one."""
    try:
        target = tools._target(resolve(root, relative.replace("%", "%25")))
    except (ResolveError, PathChanged):
        return "deny"
    return engine(tools, "read", target)


def _toml(rules, worktrees: str) -> str:
    lines = ["version = 2", "[workspace]", f'worktrees = "{worktrees}"']
    for index, (path, read, write, includes, excludes) in enumerate(rules):
        policies = ", ".join(f'{k} = "{v}"' for k, v in (("read", read), ("write", write)) if v)
        lines += ["[[paths]]", f'id = "r{index}"', f'path = "{path}"', f"policies = {{ {policies} }}"]
        if includes:
            lines.append("includes = [" + ", ".join(f'"{g}"' for g in includes) + "]")
        if excludes:
            lines.append("excludes = [" + ", ".join(f'"{g}"' for g in excludes) + "]")
    return "\n".join(lines) + "\n"


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(
    dirs=st.lists(rel_path, max_size=6),
    files=st.lists(rel_path, max_size=8),
    rules=st.lists(rule, max_size=5),
    where=st.sampled_from(["user", "project"]),
    worktrees=st.sampled_from(["include", "request"]),
    second_root=st.sampled_from([None, "a", "b/a", "gen"]),
    grant_every=st.integers(min_value=0, max_value=3),
    link=st.booleans(),
    hard=st.lists(st.tuples(rel_path, rel_path), max_size=3),
)
def test_listing_fast_path_matches_the_engine(tmp_path_factory, dirs, files, rules, where, worktrees, second_root,
                                              grant_every, link, hard):
    base = Path(os.path.realpath(tempfile.mkdtemp(dir=tmp_path_factory.getbasetemp())))
    repo = base / "repo"
    repo.mkdir()
    subprocess.run(["git", "init", "-q", str(repo)], check=True, timeout=120)
    text = _toml(rules, worktrees)
    (repo / ".rootguard.toml").write_text(text if where == "project" else "version = 2\n")
    for d in dirs:
        try:
            (repo / d).mkdir(parents=True, exist_ok=True)
        except OSError:
            pass
    for f in files:
        try:
            (repo / f).parent.mkdir(parents=True, exist_ok=True)
            if not (repo / f).exists():
                (repo / f).write_text("x")
        except OSError:
            pass
    for name in NAMES:
        if not (repo / name).exists():
            (repo / name).write_text("x") if name != ".git" else None
    for existing, alias in hard:  # hard links: a denied file's inode under another name
        try:
            if (repo / existing).is_file() and not (repo / alias).exists():
                (repo / alias).parent.mkdir(parents=True, exist_ok=True)
                os.link(repo / existing, repo / alias)
        except OSError:
            pass
    (base / "outside").mkdir()
    if link:
        (repo / "out-link").symlink_to(base / "outside")
        (repo / "in-link").symlink_to("gen")
    sibling = base / "repo-wt"
    subprocess.run(["git", "-C", str(repo), "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q",
                    "--allow-empty", "-m", "init"], check=True, timeout=120)
    subprocess.run(["git", "-C", str(repo), "worktree", "add", "-q", str(sibling)], check=True, timeout=120)
    env = {"HOME": str(base / "home"), "XDG_CONFIG_HOME": str(base / "home" / ".config")}
    if where == "user":
        (base / "user.toml").write_text(text)
        env["ROOTGUARD_CONFIG"] = str(base / "user.toml")
    else:
        env["ROOTGUARD_CONFIG"] = str(base / "none.toml")
    roots = [str(repo)]
    if second_root and (repo / second_root).is_dir():
        roots.append(str(repo / second_root))
    tools = FileTools(roots, env=env)
    directories = [p for p in [repo, sibling, *[repo / d for d in dirs]] if p.is_dir()]
    if link and (repo / "in-link").is_dir():
        directories.append(repo / "in-link")
    every = sorted(set(repo.rglob("*")) | set(sibling.rglob("*")))
    if grant_every:
        tools.grants.add([(need, str(p)) for n, p in enumerate(every) if n % grant_every == 0
                          for need in ("read", "write")])
    for directory in directories:
        root = str(sibling) if str(directory).startswith(str(sibling)) else str(repo)
        if root == str(sibling) and root not in tools.roots and not any(
                p.root == root for p in tools.projects):
            continue
        relative = os.path.relpath(directory, root).replace(os.sep, "/")
        relative = "" if relative == "." else relative
        verdict, resolved = tools.peek(root, relative or ".")
        if resolved is None:
            continue
        inner = os.path.relpath(resolved.canonical, resolved.root).replace(os.sep, "/")
        entries = safe_listing.list_directory(resolved.root, "" if inner == "." else inner)
        fast = tools.peek_entries(resolved, entries)
        slow = [full_peek(tools, root, f"{relative}/{e.name}" if relative else e.name) for e in entries]
        assert fast == slow, (text, directory, [e.name for e in entries])
        # As the MCP listing reads them: inodes only where a denied file's inode number is met.
        screened = safe_listing.list_directory(resolved.root, "" if inner == "." else inner,
                                          file_stats=tools.listing_needs_stats)
        assert [e.name for e in screened] == [e.name for e in entries]
        assert tools.peek_entries(resolved, screened) == slow, (text, directory, [e.name for e in entries])
        plain = [e.name for e in entries if e.kind != "symlink"]
        if resolved.traversed_symlink:
            continue
        seen = [inspect(os.path.join(resolved.canonical, n)) for n in plain]
        for op in ("read", "write", "delete", "metadata"):
            quick = tools.policy.decide_children(op, resolved.canonical, plain, tools.grants, seen)
            full = [engine(tools, op, Target(os.path.join(resolved.canonical, n), inode=i, nlink=k))
                    for n, (i, k) in zip(plain, seen, strict=True)]
            assert [tools.policy.decide_granted(op, Target(os.path.join(resolved.canonical, n), inode=i, nlink=k),
                                                tools.grants) for n, (i, k) in zip(plain, seen, strict=True)] == full
            assert quick == full, (op, text, directory, plain)


def test_a_hard_link_to_a_denied_file_is_hidden_from_a_listing(tmp_path):
    """A listing sends a file with several links to the engine's hard-link check, as peek does."""
    repo = Path(os.path.realpath(tmp_path)) / "repo"
    (repo / "sub").mkdir(parents=True)
    (repo / "sub" / ".env").write_text("KEY=x\n")
    os.link(repo / "sub" / ".env", repo / "sub" / "notes.txt")
    (repo / "sub" / "plain.txt").write_text("x\n")
    config = tmp_path / "user.toml"
    config.write_text('version = 2\n[[paths]]\nid = "dotenv"\npath = "sub/.env"\npolicies = { read = "deny" }\n'
                      .replace('"sub/.env"', f'"{repo}/sub/.env"'))
    tools = FileTools([str(repo)], env={"ROOTGUARD_CONFIG": str(config), "HOME": str(tmp_path)})
    verdict, resolved = tools.peek(str(repo), "sub")
    assert verdict == "allow" and resolved is not None
    entries = safe_listing.list_directory(str(repo), "sub")
    fast = dict(zip([e.name for e in entries], tools.peek_entries(resolved, entries), strict=True))
    slow = {e.name: full_peek(tools, str(repo), f"sub/{e.name}") for e in entries}
    assert fast == slow == {".env": "deny", "notes.txt": "deny", "plain.txt": "allow"}
    # The listing's inode screen: only the files whose directory entry names a denied inode are read.
    screen = tools.listing_needs_stats(os.stat(repo / "sub").st_dev)
    assert screen == frozenset({os.stat(repo / "sub" / ".env").st_ino})
    screened = safe_listing.list_directory(str(repo), "sub", file_stats=tools.listing_needs_stats)
    if safe_listing.readdir_inodes_exact(os.stat(repo / "sub").st_dev):
        assert {e.name: e.nlink for e in screened} == {".env": 2, "notes.txt": 2, "plain.txt": 1}
        assert next(e for e in screened if e.name == "plain.txt").inode is None  # not read
    assert dict(zip([e.name for e in screened], tools.peek_entries(resolved, screened), strict=True)) == slow


def test_children_that_are_anchors_themselves_get_their_own_rules(tmp_path):
    """A rule on a child directory or file (not on the listed directory) decides that child."""
    repo = Path(os.path.realpath(tmp_path)) / "repo"
    for name in ("vault", "open", "docs"):
        (repo / name).mkdir(parents=True)
    (repo / "prod.tfvars").write_text("x\n")
    (repo / "README.md").write_text("x\n")
    config = tmp_path / "user.toml"
    config.write_text(f'version = 2\n[[paths]]\nid = "vault"\npath = "{repo}/vault"\npolicies = {{ read = "deny" }}\n'
                      f'[[paths]]\nid = "tf"\npath = "{repo}/prod.tfvars"\npolicies = {{ read = "request" }}\n'
                      f'[[paths]]\nid = "docs"\npath = "{repo}/docs"\npolicies = {{ read = "allow", write = "deny" }}\n')
    tools = FileTools([str(repo)], env={"ROOTGUARD_CONFIG": str(config), "HOME": str(tmp_path)})
    verdict, resolved = tools.peek(str(repo), ".")
    assert resolved is not None
    entries = safe_listing.list_directory(str(repo), "")
    fast = dict(zip([e.name for e in entries], tools.peek_entries(resolved, entries), strict=True))
    slow = {e.name: full_peek(tools, str(repo), e.name) for e in entries}
    assert fast == slow
    assert fast["vault"] == "deny" and fast["prod.tfvars"] == "request" and fast["open"] == "allow"
    names = [e.name for e in entries]
    for op in ("read", "write"):
        quick = tools.policy.decide_children(op, str(repo), names)
        assert quick == [engine(tools, op, Target(os.path.join(str(repo), n), inode=inspect(os.path.join(str(repo), n))[0],
                                                  nlink=inspect(os.path.join(str(repo), n))[1])) for n in names]


def test_one_shared_verdict_only_where_no_child_can_differ(tmp_path):
    """``decide_children``'s shared verdict (no work per name) against the full engine, name by
    name: a directory of many plain files; children that are anchors (a file rule, a directory
    rule), an anchor deeper down (which makes no child an anchor), a request-level directory with
    session grants on some of its files (a grant lifts one child only), a file with two links."""
    repo = Path(os.path.realpath(tmp_path)) / "repo"
    big, vault, deep = repo / "big", repo / "vault", repo / "big" / "sub" / "deeper"
    plain = repo / "plain"  # nothing below it is ruled: one shared verdict
    for directory in (big, vault, deep, plain / "dir"):
        directory.mkdir(parents=True)
    for index in range(60):
        (big / f"f{index:02d}.ts").write_text("x\n")
        (plain / f"p{index:02d}.ts").write_text("x\n")
        (vault / f"v{index:02d}.txt").write_text("x\n")
    (deep / "secret.txt").write_text("x\n")
    (big / "named.ts").write_text("x\n")
    (big / "ruled").mkdir()
    os.link(big / "f00.ts", big / "f00-link.ts")  # several links, nothing denied about them
    config = tmp_path / "user.toml"
    config.write_text(f'version = 2\n'
                      f'[[paths]]\nid = "deep"\npath = "{deep}/secret.txt"\npolicies = {{ read = "deny" }}\n'
                      f'[[paths]]\nid = "named"\npath = "{big}/named.ts"\npolicies = {{ read = "deny" }}\n'
                      f'[[paths]]\nid = "ruled"\npath = "{big}/ruled"\npolicies = {{ read = "request" }}\n'
                      f'[[paths]]\nid = "vault"\npath = "{vault}"\npolicies = {{ read = "request" }}\n')
    tools = FileTools([str(repo)], env={"ROOTGUARD_CONFIG": str(config), "HOME": str(tmp_path)})
    tools.grants.add([("read", str(vault / "v03.txt")), ("read", str(vault / "v42.txt"))])
    for directory in (big, vault, repo, big / "sub", deep, plain):
        names = sorted(os.listdir(directory))
        seen = [inspect(os.path.join(directory, n)) for n in names]
        full = [engine(tools, "read", Target(os.path.join(directory, n), inode=i, nlink=k))
                for n, (i, k) in zip(names, seen, strict=True)]
        assert tools.policy.decide_children("read", str(directory), names, tools.grants, seen) == full, directory
        if max(k for _, k in seen) <= 1:
            assert tools.policy.decide_children("read", str(directory), names, tools.grants) == full, directory
        entries = safe_listing.list_directory(str(repo), os.path.relpath(directory, repo).replace(os.sep, "/")
                                         if directory != repo else "", file_stats=tools.listing_needs_stats)
        verdict, resolved = tools.peek(str(repo), os.path.relpath(directory, repo) if directory != repo else ".")
        assert resolved is not None
        assert tools.peek_entries(resolved, entries) == full, directory
    vault_verdicts = dict(zip(sorted(os.listdir(vault)), tools.policy.decide_children(
        "read", str(vault), sorted(os.listdir(vault)), tools.grants), strict=True))
    assert vault_verdicts["v03.txt"] == vault_verdicts["v42.txt"] == "allow" and vault_verdicts["v04.txt"] == "request"
    big_verdicts = dict(zip(sorted(os.listdir(big)), tools.policy.decide_children(
        "read", str(big), sorted(os.listdir(big)), tools.grants), strict=True))
    assert big_verdicts["named.ts"] == "deny" and big_verdicts["ruled"] == "request" and big_verdicts["f10.ts"] == "allow"
    assert set(tools.policy.decide_children("read", str(plain), sorted(os.listdir(plain)), tools.grants)) == {"allow"}


def test_a_kept_listing_takes_grants_made_after_it_and_hard_links_are_decided_afresh(tmp_path):
    """``decide_children`` keeps a listing's verdicts before grants: a session grant made after the
    listing was kept lifts its child at the next listing; a listing with a hard-linked file is
    decided afresh for reads (the hard-link index changes with the disk), as each entry is."""
    repo = Path(os.path.realpath(tmp_path)) / "repo"
    vault = repo / "vault"
    vault.mkdir(parents=True)
    for index in range(5):
        (vault / f"v{index}.txt").write_text("x\n")
    os.link(vault / "v0.txt", vault / "v0-link.txt")
    config = tmp_path / "user.toml"
    config.write_text(f'version = 2\n[[paths]]\nid = "vault"\npath = "{vault}"\npolicies = {{ read = "request" }}\n')
    tools = FileTools([str(repo)], env={"ROOTGUARD_CONFIG": str(config), "HOME": str(tmp_path)})
    names = sorted(n for n in os.listdir(vault) if n != "v0-link.txt")
    first = tools.policy.decide_children("read", str(vault), names, tools.grants)
    assert set(first) == {"request"}
    assert tools.policy.decide_children("read", str(vault), list(names), tools.grants) == first  # kept
    tools.grants.add([("read", str(vault / "v2.txt"))])
    again = dict(zip(names, tools.policy.decide_children("read", str(vault), names, tools.grants), strict=True))
    assert again["v2.txt"] == "allow" and again["v1.txt"] == "request"
    every = sorted(os.listdir(vault))
    seen = [inspect(os.path.join(vault, n)) for n in every]
    for _ in range(2):
        full = [engine(tools, "read", Target(os.path.join(vault, n), inode=i, nlink=k))
                for n, (i, k) in zip(every, seen, strict=True)]
        assert tools.policy.decide_children("read", str(vault), every, tools.grants, seen) == full
    assert len(tools.policy._listings) == 1  # only the listing without a hard link was kept
