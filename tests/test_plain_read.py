"""The plain read route of the MCP file tools gives the plan the whole route gives.

``FileTools._plain_read`` plans ``read_file``, ``get_file_info`` and ``list_directory``
of an existing file (one link) or directory named in its resolved spelling with no
symbolic link on the way (``resolver.resolve_plain``, ``paths.plain_stat``), decided
from its directory's share (``Policy.decide_plain``). Everything else takes the
whole route. Here both routes plan every spelling of every entry of a real tree
(links, a hard link, a FIFO, escapes, ``..``, odd separators) under rules that
allow, ask and deny, with and without a session grant: wherever the plain route
answers, its plan is the whole route's, field by field.
"""

from __future__ import annotations

import os
import socket
from pathlib import Path

import pytest

from lsp_bridge.approvals.service import SessionGrants
from lsp_bridge.core import openat2, paths
from lsp_bridge.core.resolver import resolve, resolve_plain
from lsp_bridge.mcp.file_tools import Caller, FileTools, ToolError
from tests.conftest import make_repo

TOOLS = ("read_file", "get_file_info", "list_directory")
CALLER = Caller("test", "session", "n/a")


@pytest.fixture
def tree(tmp_path) -> Path:
    repo = make_repo(tmp_path / "shop", {
        "README.md": "shop\n",
        "src/app.ts": "export const a = 1;\n",
        "src/deep/a/b/c.ts": "deep\n",
        "vault/notes.txt": "approval needed\n",
        "vault/inner/more.txt": "approval needed\n",
        "secrets/key.pem": "KEY\n",
        ".env": "TOKEN=x\n",
        "config/.env.local": "TOKEN=y\n",
        "name with space.txt": "x\n",
        "100%.txt": "x\n",
        "a%20b.txt": "x\n",
        "ünï.txt": "x\n",
        "UPPER.TXT": "x\n",
        "back\\slash.txt": "x\n",
        "dots..txt": "x\n",
        "...": "x\n",
    })
    (repo / ".rootguard.toml").write_text(
        "version = 2\n"
        '[[paths]]\nid = "vault"\npath = "vault"\npolicies = { read = "request", write = "request" }\n'
        '[[paths]]\nid = "no-secrets"\npath = "secrets"\npolicies = { read = "deny", write = "deny" }\n'
    )
    (repo / "empty").mkdir()
    (repo / "link.ts").symlink_to("src/app.ts")
    (repo / "linkdir").symlink_to("src")
    (repo / "vaultlink").symlink_to("vault")
    (repo / "dangling").symlink_to("missing.txt")
    outside = tmp_path / "outside.txt"
    outside.write_text("outside\n")
    (repo / "out").symlink_to(outside)
    os.link(repo / "src" / "app.ts", repo / "hard.ts")
    os.mkfifo(repo / "pipe")
    sock = socket.socket(socket.AF_UNIX)
    try:
        sock.bind(str(repo / "sock"))
    except OSError:  # a path too long for a socket address: the tree simply has none
        pass
    finally:
        sock.close()
    return Path(os.path.realpath(repo))


def spellings(root: Path) -> list[str]:
    """Every entry's relative path, each in plain and odd spellings, plus paths that name nothing."""
    entries: list[str] = []
    for folder, dirs, files in os.walk(root):
        dirs[:] = [d for d in dirs if d != ".git"]
        for name in [*dirs, *files]:
            entries.append(os.path.relpath(os.path.join(folder, name), root))
    entries += [".git", ".git/config", "missing.txt", "src/missing.ts", "README.md/x", "link.ts/x"]
    found: list[str] = ["", ".", "./", "/", "..", "%2e%2e", "src/..", "C:x"]
    for entry in entries:
        found += [
            entry, f"./{entry}", f"{entry}/", f"{entry}/.", entry.replace("/", "//"), f"/{entry}",
            f"../{entry}", entry.replace("%", "%25"), entry.replace(" ", "%20"), entry.replace(".", "%2e", 1),
            entry.upper(), f"src/../{entry}", f"{entry}\x00", f"{entry}\n",
        ]
    return list(dict.fromkeys(found))


def assert_same(plain, whole) -> None:
    assert plain == whole
    for mine, theirs in zip(plain.accesses, whole.accesses, strict=True):
        assert mine.resolved is not None and theirs.resolved is not None
        for name in ("inode", "nlink", "size"):  # not compared by Resolved's equality
            assert getattr(mine.resolved, name) == getattr(theirs.resolved, name), name


@pytest.fixture(params=["openat2", "proc"])
def kernel_way(request, monkeypatch):
    """Both ways ``paths.plain_stat`` asks the kernel: ``openat2`` and, as where a seccomp filter or an
    older kernel refuses it, the ``/proc`` name and a compare."""
    if request.param == "proc":
        monkeypatch.setattr(paths, "_OPENER", [None])
    elif openat2.opener() is None:
        pytest.skip("openat2 is not usable here (kernel older than 5.6 or a seccomp filter)")
    return request.param


def test_the_plain_route_plans_what_the_whole_route_plans(tree, kernel_way):
    grants = SessionGrants()
    tools = FileTools([str(tree)], grants=grants)
    answered = fell_back = 0
    for granted in (False, True):
        if granted:  # the session allowed two of the asked reads
            grants.add([("read", str(tree / "vault" / "notes.txt")), ("read", str(tree / "vault"))])
        for tool in TOOLS:
            for given in spellings(tree):
                args = {"project_id": "shop", "relative_path": given}
                plain = tools._plain_read(tool, dict(args), CALLER, "cid")
                whole = tools._whole_route(tool, dict(args), CALLER, "cid")
                if plain is None:
                    fell_back += 1
                    continue
                answered += 1
                assert_same(plain, whole)
    assert answered > 100 and fell_back > 1000  # both routes were exercised
    verdicts = {tools._plain_read("read_file", {"project_id": "shop", "relative_path": p}, CALLER, "c").verdict
                for p in ("README.md", "vault/inner/more.txt", "secrets/key.pem")}
    assert verdicts == {"allow", "request", "deny"}


@pytest.mark.parametrize("given", [
    "link.ts", "linkdir/app.ts", "vaultlink/notes.txt", "out", "dangling", "hard.ts", "src/app.ts", "pipe",
    "./README.md", "README.md/", "src//app.ts", "src/./app.ts", "100%25.txt", "missing.txt", "", ".",
])
def test_what_the_plain_route_leaves_to_the_whole_route(tree, given, kernel_way):
    """A link on the way, several links to the inode, a special file, a spelling to normalise, a
    ``%``, nothing there: the plain route does not answer (``src/app.ts`` has a hard link too)."""
    tools = FileTools([str(tree)])
    assert tools._plain_read("read_file", {"project_id": "shop", "relative_path": given}, CALLER, "c") is None


def test_other_arguments_and_projects_take_the_whole_route(tree):
    tools = FileTools([str(tree)])
    for args in ({"project_id": "other", "relative_path": "README.md"},
                 {"project_id": "shop", "relative_path": "README.md", "extra": 1},
                 {"project_id": "shop", "relative_path": 3},
                 {"project_id": ["shop"], "relative_path": "README.md"},
                 {"relative_path": "README.md"}):
        assert tools._plain_read("read_file", dict(args), CALLER, "c") is None
        plan = tools.plan("read_file", args)
        assert plan.verdict == "deny" and plan.code in ("unknown_project", "invalid_arguments", "invalid_path")


def test_resolve_plain_is_resolve_where_it_answers(tree, kernel_way):
    for given in spellings(tree):
        plain = resolve_plain(str(tree), given)
        if plain is not None:
            assert plain == resolve(str(tree), given, for_read=True, outside=True)


def test_openat2_opens_exactly_the_paths_that_are_their_own_canonical_name(tree):
    """The ``openat2`` binding, where this kernel has it, against the ``/proc`` way of asking."""
    opener = openat2.opener()
    if opener is None:
        pytest.skip("openat2 is not usable here (kernel older than 5.6 or a seccomp filter)")
    for given in spellings(tree):
        path = os.path.normpath(os.path.join(str(tree), given)) if "\x00" not in given else None
        if path is None:
            continue
        found, info = paths.realpath_stat(path)
        expected = info is not None and found == path
        try:
            os.close(opener(path))
            opened = True
        except OSError:
            opened = False
        assert opened == expected, path
    with pytest.raises(OSError) as caught:
        opener(str(tree / "link.ts"))
    assert caught.value.errno == 40  # ELOOP: a link on the way is refused, not followed


def test_a_kept_decision_never_outlives_a_hard_link_to_a_denied_file(tree):
    """The plain route keeps each path's decision while the policy lives. An agent that reads a plain
    file (allowed, kept), then replaces it with a hard link to a denied file, is refused the second
    read: the link count is read again on every call, and two links take the whole route."""
    tools = FileTools([str(tree)])
    args = {"project_id": "shop", "relative_path": "src/deep/a/b/c.ts"}
    assert tools.plan("read_file", args).verdict == "allow"
    target = tree / "src/deep/a/b/c.ts"
    target.unlink()
    os.link(tree / "secrets" / "key.pem", target)
    plan = tools.plan("read_file", args)
    assert (plan.verdict, plan.code) == ("deny", "policy_denied")
    with pytest.raises(ToolError) as refused:
        tools.conclude(plan)
    assert refused.value.code == "policy_denied"


def test_a_directory_swapped_for_a_link_after_a_plain_plan_is_not_followed(tree):
    """Planned by the plain route, then the parent directory becomes a link into the denied
    directory before the read: the read opens each component without following links and
    returns nothing of the denied file."""
    (tree / "secrets" / "app.ts").write_text("SECRET\n")
    (tree / "hard.ts").unlink()  # src/app.ts back to one link: the plain route answers
    tools = FileTools([str(tree)])
    args = {"project_id": "shop", "relative_path": "src/app.ts"}
    plan = tools.plan("read_file", args)
    assert plan.verdict == "allow" and tools._plain_read("read_file", dict(args), CALLER, "c") is not None
    os.rename(tree / "src", tree / "src.old")
    os.symlink("secrets", tree / "src")
    with pytest.raises(ToolError) as refused:
        tools.conclude(plan)
    assert refused.value.code == "symlink_not_permitted" and "SECRET" not in refused.value.message
    assert tools.plan("read_file", args).verdict == "deny"  # asked again: the link leads into a denied directory
