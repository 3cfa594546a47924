"""The closed resolver (seed 003) on real files, symlinks, FIFOs and sockets."""

from __future__ import annotations

import errno
import os
import socket
import stat
import tempfile
from pathlib import Path
from urllib.parse import unquote

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from lsp_bridge.core.resolver import CODES, Resolved, ResolveError, resolve, resolve_in_projects


def refused(code: str, root, relative, **kwargs) -> ResolveError:
    with pytest.raises(ResolveError) as caught:
        resolve(str(root), relative, **kwargs)
    assert caught.value.code == code, caught.value.message
    assert caught.value.path == relative
    return caught.value


def touch(path: Path, text: str = "x") -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


@pytest.fixture
def orders(tmp_path: Path) -> dict[str, Path]:
    """The seed's canary project, a platform dir beside it, an outside dir."""
    root = tmp_path / "orders-api"
    touch(root / "package.json", "{}")
    touch(root / "src" / "config.ts")
    (root / "docs").mkdir()
    touch(tmp_path / "platform" / "secrets.env")
    touch(tmp_path / "secret")
    touch(tmp_path / "external" / "token")
    (root / "tmp").mkdir()
    (root / "tmp" / "external-link").symlink_to(tmp_path / "external")
    touch(tmp_path / "orders-api2" / "src" / "config.ts")
    return {"root": root, "base": tmp_path}


# --- seed 003's six mirror cases ------------------------------------------------


def test_read_known_manifest_resolves_inside(orders):
    root = orders["root"]
    result = resolve(str(root), "package.json", for_read=True)
    assert result == Resolved(
        root=str(root),
        relative="package.json",
        lexical=str(root / "package.json"),
        canonical=str(root / "package.json"),
        exists=True,
        traversed_symlink=False,
    )
    via_id = resolve_in_projects({"orders-api-canary": str(root)}, "orders-api-canary", "package.json")
    assert via_id == result


def test_block_parent_traversal(orders):
    error = refused("path_outside_project", orders["root"], "../platform/secrets.env")
    assert "../platform/secrets.env" in str(error)


def test_block_encoded_traversal_after_decoding_once(orders):
    error = refused("path_outside_project", orders["root"], "docs/%2e%2e/%2e%2e/secret")
    assert "docs/%2e%2e/%2e%2e/secret" in str(error)
    assert "decod" in str(error)


def test_block_symlink_escape(orders):
    error = refused("path_outside_project", orders["root"], "tmp/external-link/token")
    assert "tmp/external-link/token" in str(error)


def test_reject_unknown_project_without_revealing_others(orders):
    projects = {"orders-api-canary": str(orders["root"])}
    with pytest.raises(ResolveError) as caught:
        resolve_in_projects(projects, "finance-prod", "package.json")
    assert caught.value.code == "unknown_project"
    assert "finance-prod" in str(caught.value)
    assert "orders-api-canary" not in str(caught.value)
    assert str(orders["root"]) not in str(caught.value)


def test_unknown_project_id_of_wrong_type(orders):
    with pytest.raises(ResolveError) as caught:
        resolve_in_projects({"a": str(orders["root"])}, ["a"], "package.json")  # type: ignore[arg-type]
    assert caught.value.code == "unknown_project"


def test_preserve_patch_boundary(orders):
    root, base = orders["root"], orders["base"]
    projects = {"orders-api-canary": str(root)}
    result = resolve_in_projects(projects, "orders-api-canary", "src/config.ts")
    assert result.canonical == str(root / "src" / "config.ts")
    # the sibling project shares the prefix "orders-api": never reachable
    refused("path_outside_project", root, "../orders-api2/src/config.ts")
    refused("absolute_path_denied", root, str(base / "orders-api2" / "src" / "config.ts"))
    (root / "src" / "shared").symlink_to(base / "orders-api2" / "src")
    refused("path_outside_project", root, "src/shared/config.ts")


# --- CVE-2025-53110: prefix sibling ----------------------------------------------


@pytest.fixture
def allowed(tmp_path: Path) -> dict[str, Path]:
    root = tmp_path / "private" / "tmp" / "allowed_dir"
    sibling = tmp_path / "private" / "tmp" / "allowed_dir_sensitive_credentials"
    touch(root / "ok.txt")
    touch(sibling / "x")
    return {"root": root, "sibling": sibling}


def test_prefix_sibling_by_parent_traversal(allowed):
    refused("path_outside_project", allowed["root"], "../allowed_dir_sensitive_credentials/x")


def test_prefix_sibling_by_symlink(allowed):
    root = allowed["root"]
    (root / "creds").symlink_to("../allowed_dir_sensitive_credentials")
    (root / "creds-file").symlink_to(allowed["sibling"] / "x")
    refused("path_outside_project", root, "creds/x")
    refused("path_outside_project", root, "creds")
    refused("path_outside_project", root, "creds-file", for_read=True)


def test_prefix_sibling_by_absolute_path(allowed):
    refused("absolute_path_denied", allowed["root"], str(allowed["sibling"] / "x"))


# --- CVE-2025-53109: symlinks --------------------------------------------------


def test_file_and_directory_links_to_outside_are_refused(tmp_path):
    root = tmp_path / "root"
    root.mkdir()
    touch(tmp_path / "outside" / "passwd")
    (root / "file-link").symlink_to(tmp_path / "outside" / "passwd")
    (root / "dir-link").symlink_to(tmp_path / "outside")
    refused("path_outside_project", root, "file-link")
    refused("path_outside_project", root, "dir-link/passwd")
    refused("path_outside_project", root, "dir-link/not-yet-there.txt")


def test_symlinked_directory_inside_to_inside_is_fine(tmp_path):
    root = tmp_path / "root"
    touch(root / "real" / "a.txt")
    (root / "alias").symlink_to("real")
    result = resolve(str(root), "alias/a.txt", for_read=True)
    assert result.lexical == str(root / "alias" / "a.txt")
    assert result.canonical == str(root / "real" / "a.txt")
    assert result.exists and result.traversed_symlink


def test_dangling_link_to_outside_is_refused(tmp_path):
    root = tmp_path / "root"
    root.mkdir()
    (root / "dangling").symlink_to(tmp_path / "outside" / "later.txt")
    refused("path_outside_project", root, "dangling")


def test_dangling_link_to_inside_resolves_missing(tmp_path):
    root = tmp_path / "root"
    root.mkdir()
    (root / "dangling").symlink_to("later/file.txt")
    result = resolve(str(root), "dangling")
    assert result.lexical == str(root / "dangling")
    assert result.canonical == str(root / "later" / "file.txt")
    assert not result.exists and result.traversed_symlink


def test_link_loop_is_refused(tmp_path):
    root = tmp_path / "root"
    root.mkdir()
    (root / "a").symlink_to("b")
    (root / "b").symlink_to("a")
    error = refused("invalid_path", root, "a/x")
    assert "loop" in str(error)


def test_a_link_that_loops_through_itself_is_refused_not_read_as_the_root(tmp_path):
    """``sub/sub`` -> ``sub/../..``: the lenient ``realpath`` names it the root; the kernel says ELOOP."""
    root = tmp_path / "root"
    (root / "sub").mkdir(parents=True)
    (root / "sub" / "sub").symlink_to("sub/../..")
    for below in ("sub/sub", "sub/sub/new.txt"):  # the link itself, and a file to be written through it
        error = refused("invalid_path", root, below)
        assert "loop" in str(error)


def test_not_yet_existing_nested_target(tmp_path):
    root = tmp_path / "root"
    root.mkdir()
    result = resolve(str(root), "new/dir/file.txt", for_read=True)
    assert result.relative == "new/dir/file.txt"
    assert result.canonical == str(root / "new" / "dir" / "file.txt")
    assert not result.exists and not result.traversed_symlink


def test_missing_target_below_an_inside_link_uses_its_real_parent(tmp_path):
    root = tmp_path / "root"
    (root / "real").mkdir(parents=True)
    (root / "alias").symlink_to("real")
    result = resolve(str(root), "alias/new/file.txt")
    assert result.canonical == str(root / "real" / "new" / "file.txt")
    assert not result.exists and result.traversed_symlink


# --- text rules ---------------------------------------------------------------


def test_root_itself(tmp_path):
    for spelling in ("", ".", "./", ".//."):
        result = resolve(str(tmp_path), spelling)
        assert (result.relative, result.canonical, result.exists) == ("", str(tmp_path), True)


def test_redundant_separators_are_normalised(tmp_path):
    touch(tmp_path / "a" / "b.txt")
    assert resolve(str(tmp_path), "./a//./b.txt").relative == "a/b.txt"


def test_double_encoding_decodes_once_to_a_literal_name(tmp_path):
    root = tmp_path / "root"
    touch(root / "%2e%2e" / "secret")
    touch(tmp_path / "secret")
    result = resolve(str(root), "%252e%252e/secret", for_read=True)
    assert result.relative == "%2e%2e/secret"
    assert result.canonical == str(root / "%2e%2e" / "secret")
    refused("path_outside_project", root, "%2e%2e/secret")
    refused("path_outside_project", root, "%2E%2E/secret")
    refused("absolute_path_denied", root, "%2fetc/passwd")
    refused("invalid_path", root, "a%5c..%5csecret")


def test_encoded_slash_is_a_separator_after_decoding(tmp_path):
    touch(tmp_path / "a" / "b")
    assert resolve(str(tmp_path), "a%2fb").canonical == str(tmp_path / "a" / "b")


@pytest.mark.parametrize(
    "relative",
    ["a\x00b", "a\nb", "a\tb", "\x1b[31m", "a\x7fb", "a\x85b", "a\x9fb", "a%00b", "a%0ab", "%c2%85"],
)
def test_control_characters_are_refused(tmp_path, relative):
    error = refused("invalid_path", tmp_path, relative)
    assert "control" in str(error)


@pytest.mark.parametrize(
    "relative", ["/etc/passwd", "//server/share", "C:\\Windows", "c:/x", "C:x", "\\\\server\\share", "\\x"]
)
def test_absolute_forms_are_refused(tmp_path, relative):
    refused("absolute_path_denied", tmp_path, relative)


@pytest.mark.parametrize("relative", ["a\\b", "..\\secret", "docs\\..\\..\\x"])
def test_backslashes_are_refused(tmp_path, relative):
    error = refused("invalid_path", tmp_path, relative)
    assert "backslash" in str(error)


@pytest.mark.parametrize("relative", ["..", "../x", "a/../b", "a/..", "a/./../../x"])
def test_dot_dot_components_are_refused(tmp_path, relative):
    refused("path_outside_project", tmp_path, relative)


def test_dotted_names_that_are_not_dot_dot_are_names(tmp_path):
    touch(tmp_path / "..." / "..x")
    assert resolve(str(tmp_path), ".../..x").exists


@pytest.mark.parametrize("relative", [None, b"package.json", 3, Path("x")])
def test_non_string_path_is_refused(tmp_path, relative):
    refused("invalid_path", tmp_path, relative)


@pytest.mark.parametrize("root", ["relative/root", "", "/a\x00b", None])
def test_unusable_root_is_refused(root):
    with pytest.raises(ResolveError) as caught:
        resolve(root, "x")  # type: ignore[arg-type]
    assert caught.value.code == "unknown_project"


def test_missing_root_is_refused(tmp_path):
    with pytest.raises(ResolveError) as caught:
        resolve(str(tmp_path / "gone"), "x")
    assert caught.value.code == "unknown_project"
    assert "gone" in str(caught.value)


# --- roots --------------------------------------------------------------------


def test_root_given_as_symlink_is_canonicalised_first(tmp_path):
    real = tmp_path / "real-root"
    touch(real / "a.txt")
    (tmp_path / "root-link").symlink_to(real)
    result = resolve(str(tmp_path / "root-link"), "a.txt")
    assert result.root == str(real)
    assert result.lexical == result.canonical == str(real / "a.txt")
    assert not result.traversed_symlink
    (real / "abs").symlink_to(real / "a.txt")
    assert resolve(str(tmp_path / "root-link"), "abs").canonical == str(real / "a.txt")


def test_case_differs_means_different_directory(tmp_path):
    lower, upper = tmp_path / "project", tmp_path / "Project"
    lower.mkdir()
    try:
        upper.mkdir()
    except FileExistsError:
        pytest.skip("case-insensitive file system")
    touch(upper / "x")
    (lower / "up").symlink_to(upper)
    refused("path_outside_project", lower, "up/x")
    assert resolve(str(upper), "x").canonical == str(upper / "x")


# --- special files ------------------------------------------------------------


def test_fifo_is_refused_for_reads_only(tmp_path):
    os.mkfifo(tmp_path / "pipe")
    error = refused("special_file", tmp_path, "pipe", for_read=True)
    assert "pipe" in str(error)
    assert resolve(str(tmp_path), "pipe").exists


def test_fifo_behind_an_inside_link_is_refused(tmp_path):
    os.mkfifo(tmp_path / "pipe")
    (tmp_path / "innocent.txt").symlink_to("pipe")
    refused("special_file", tmp_path, "innocent.txt", for_read=True)


def test_socket_is_refused_for_reads():
    # a short directory: AF_UNIX paths are limited to about 100 bytes
    with tempfile.TemporaryDirectory(prefix="rg") as root:
        server = socket.socket(socket.AF_UNIX)
        try:
            server.bind(os.path.join(root, "s"))
            refused("special_file", root, "s", for_read=True)
        finally:
            server.close()


def test_device_is_refused_for_reads(tmp_path):
    try:
        os.mknod(tmp_path / "null", 0o600 | stat.S_IFCHR, os.makedev(1, 3))
    except (PermissionError, OSError):
        pytest.skip("cannot create a device node here")
    refused("special_file", tmp_path, "null", for_read=True)


def test_device_outside_through_link_is_outside(tmp_path):
    (tmp_path / "null").symlink_to(os.devnull)
    refused("path_outside_project", tmp_path, "null", for_read=True)


# --- property: whatever resolve() returns is inside; whatever escapes is refused -


NAMES = ["a", "b", "sub", "f", "%2e%2e", "%41"]
LINK_TARGETS = [
    "a", "sub/f", ".", "..", "missing", "a/missing", "sub/../..", "../outside",
    "../outside/secret", "../root_evil", "../root_evil/f", "../../outside",
    "../outside/missing", "{ROOT}", "{ROOT}/a", "{OUT}", "{OUT}/secret", "{EVIL}", "{TMP}",
]  # fmt: skip
PATH_PARTS = NAMES + [
    ".", "..", "", "%2e", "%2e%2e", "%2E%2E", "%252e%252e", "%2f", "%5c", "%00",
    "secret", "missing", "root_evil", "outside",
]  # fmt: skip

entries = st.lists(
    st.tuples(
        st.sampled_from(["dir", "file", "link"]),
        st.lists(st.sampled_from(NAMES), min_size=1, max_size=3),
        st.sampled_from(LINK_TARGETS),
    ),
    max_size=8,
)
relatives = st.tuples(st.booleans(), st.lists(st.sampled_from(PATH_PARTS), max_size=5)).map(
    lambda lead_parts: ("/" if lead_parts[0] else "") + "/".join(lead_parts[1])
)


def _inside(path: Path, root: Path) -> bool:
    return path == root or root in path.parents


def _build(tmp: Path, tree) -> None:
    """Create the random tree, never writing outside ``tmp``."""
    names = {"ROOT": tmp / "root", "OUT": tmp / "outside", "EVIL": tmp / "root_evil", "TMP": tmp}
    for kind, parts, target in tree:
        path = tmp.joinpath("root", *parts)
        if not _inside(Path(os.path.realpath(path.parent)), tmp) or os.path.lexists(path):
            continue
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            if kind == "dir":
                path.mkdir()
            elif kind == "file":
                path.write_text("x")
            else:
                path.symlink_to(target.format(**{k: str(v) for k, v in names.items()}))
        except OSError:
            continue


def _inodes_inside(root: Path) -> set[tuple[int, int]]:
    """(device, inode) of the root and of every real entry under it."""
    found = set()
    for directory, dirs, files in os.walk(root, followlinks=False):
        for name in [".", *dirs, *files]:
            info = os.lstat(os.path.join(directory, name))
            if not stat.S_ISLNK(info.st_mode):
                found.add((info.st_dev, info.st_ino))
    return found


def _kernel_stat(path: str):
    try:
        return os.stat(path)
    except (OSError, ValueError):
        return None


def _kernel_loops(path: str) -> bool:
    try:
        os.stat(path)
    except OSError as error:
        return error.errno == errno.ELOOP
    except ValueError:
        return False
    return False


def _relative_strategy(tree):
    """Generic paths, and paths that walk through the entries just created."""
    created = [parts for _, parts, _ in tree]
    through_entries = st.tuples(
        st.sampled_from(created), st.lists(st.sampled_from(PATH_PARTS), max_size=2)
    ).map(lambda pair: "/".join(pair[0] + pair[1]))
    return st.one_of(relatives, through_entries) if created else relatives


def _plain(relative: str, decoded: str) -> bool:
    """No text rule can refuse this path (so only the file system decides)."""
    return not any(
        "\\" in text or text.startswith("/") or ".." in text.split("/")
        or any(ord(ch) < 0x20 or 0x7F <= ord(ch) <= 0x9F for ch in text)
        for text in (relative, decoded)
    )


@settings(max_examples=200, deadline=None)
@given(tree=entries, data=st.data(), root_via_link=st.booleans(), for_read=st.booleans())
def test_property_resolve_never_escapes(tree, data, root_via_link, for_read):
    relative = data.draw(_relative_strategy(tree), label="relative")
    with tempfile.TemporaryDirectory() as scratch:
        tmp = Path(os.path.realpath(scratch))
        for extra in ("root", "outside", "root_evil"):
            (tmp / extra).mkdir()
        (tmp / "outside" / "secret").write_text("s")
        (tmp / "root_evil" / "f").write_text("e")
        _build(tmp, tree)
        root_arg = tmp / "root"
        if root_via_link:
            (tmp / "root-link").symlink_to(root_arg)
            root_arg = tmp / "root-link"
        real_root = Path(root_arg).resolve()
        inside_inodes = _inodes_inside(real_root)

        try:
            result = resolve(str(root_arg), relative, for_read=for_read)
        except ResolveError as error:
            assert error.code in CODES and error.path == relative
            result = None

        decoded = unquote(relative)
        target = os.path.join(root_arg, decoded)
        seen_by_kernel = _kernel_stat(target)

        if result is not None:
            assert _inside(Path(result.canonical).resolve(), real_root)
            assert result.root == str(real_root)
            assert result.exists == (seen_by_kernel is not None)
            if seen_by_kernel is not None:
                assert (seen_by_kernel.st_dev, seen_by_kernel.st_ino) in inside_inodes

        # the other direction: an escape the oracles can see must have been refused
        if seen_by_kernel is not None and (
            (seen_by_kernel.st_dev, seen_by_kernel.st_ino) not in inside_inodes
        ):
            assert result is None
        if "\x00" in decoded:
            return
        if _kernel_loops(target):
            # A loop: refused. Python's lenient resolve() can give a loop a name inside the
            # root (a/sub -> sub/../.. reads as the root), so it is no oracle here.
            assert result is None
            return
        try:
            fully = Path(root_arg, decoded).resolve()
        except RuntimeError:  # symlink loop: nothing to compare
            return
        if not _inside(fully, real_root):
            assert result is None
        elif _plain(relative, decoded):
            # and no widening the other way round: a plain inside path is served
            assert result is not None


def test_a_file_spelled_as_a_directory_does_not_exist(tmp_path):
    """``file/.`` and ``file/`` name nothing for the kernel (ENOTDIR); found by the property test."""
    (tmp_path / "notes.txt").write_text("x")
    for spelling in ("notes.txt/.", "notes.txt/"):
        result = resolve(str(tmp_path), spelling)
        assert result.exists is False and result.canonical == str(tmp_path / "notes.txt")
    assert resolve(str(tmp_path), "notes.txt").exists is True
