"""The closed path resolver: (approved root, relative path) -> a path inside it.

Every tool that reads, lists or writes resolves its target here first (seed 003,
"un résolveur de chemin fermé"). The rules, applied in this order:

1. ``relative_path`` must be a ``str`` (``invalid_path``).
2. No NUL, C0 (U+0000-U+001F), DEL or C1 (U+0080-U+009F) character
   (``invalid_path``).
3. No absolute form: POSIX ``/x``, a Windows drive (``C:\\x``, ``C:/x``,
   ``C:x``) or a leading backslash (``\\\\server\\share``, ``\\x``)
   (``absolute_path_denied``).
4. No backslash anywhere else: it is a separator on Windows and a literal byte
   on POSIX, so its meaning is ambiguous; it is refused, never reinterpreted
   (``invalid_path``).
5. No ``..`` component (``path_outside_project``).
6. Percent-decoding is applied exactly once (``urllib.parse.unquote``) and
   rules 2-5 run again on the decoded text, which is the path that is
   resolved. ``%2e%2e`` is therefore ``..`` (refused), while ``%252e%252e``
   decodes to the literal name ``%2e%2e``. A file whose real name contains a
   valid escape (``a%20b``) must be asked for encoded (``a%2520b``).
7. ``""``, ``"."`` and ``"./"`` name the root itself (listing it is a normal
   operation); empty and ``.`` components are dropped (``a//./b`` is ``a/b``).
8. The root is canonicalised (``realpath``) first; the target is the
   ``realpath`` of root + relative. A missing tail resolves through its deepest
   existing parent, a dangling link through its target text. The result must
   be inside the canonical root by component comparison (``/r/project2`` is
   outside ``/r/project``), else ``path_outside_project``. Symlink loops and
   targets the process cannot inspect are refused (``invalid_path``).
   With ``outside=True`` (the MCP file tools) a target a symbolic link leads out of
   the root is returned with ``outside`` set instead, so the one policy engine decides
   it: the link and its target must both be authorized, exactly as ``rootguard
   check`` decides them (a ``[[paths]]`` rule such as a pnpm store outside the root).
   ``..`` is still refused: only links lead out.
9. With ``for_read=True`` an existing FIFO, socket, character or block device
   is refused (``special_file``). Existence itself is the caller's concern.

Case: the comparison is exact. On a case-folding file system a link spelled
in another case than the root is refused (fail closed), never widened.
The project root must be an absolute path to an existing directory, otherwise
``unknown_project`` (a project whose root is unusable is no project).
"""

from __future__ import annotations

import errno
import os
import re
import stat
from collections.abc import Mapping
from dataclasses import dataclass, field
from urllib.parse import unquote

from lsp_bridge.core import paths

CODES = (
    "absolute_path_denied",
    "path_outside_project",
    "invalid_path",
    "special_file",
    "unknown_project",
)

_CONTROL = re.compile("[\x00-\x1f\x7f-\x9f]")
_WINDOWS_DRIVE = re.compile(r"^[A-Za-z]:")
_MISSING = (errno.ENOENT, errno.ENOTDIR)


class ResolveError(Exception):
    """A refused resolution: ``code`` (one of ``CODES``) and the input ``path``."""

    def __init__(self, code: str, path: object, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.path = path
        self.message = message


@dataclass(frozen=True)
class Resolved:
    root: str  # canonical root
    relative: str  # normalised, forward slashes, "" = the root itself
    lexical: str  # root + relative, links not followed (where a link itself sits)
    canonical: str  # realpath of the target (missing tail appended)
    exists: bool
    traversed_symlink: bool  # a symlink was met on the way
    outside: bool = False  # a symbolic link led outside the root (only with ``outside=True``)
    # (st_dev, st_ino) and link count of an existing regular file, read with the canonical
    # path from the same descriptor (``policy.inspect`` of ``canonical``); None: not read.
    inode: tuple[int, int] | None = field(default=None, compare=False)
    nlink: int | None = field(default=None, compare=False)
    size: int | None = field(default=None, compare=False)  # st_size from the same descriptor; None: not read


def resolve(project_root: str, relative_path: str, *, for_read: bool = False, outside: bool = False) -> Resolved:
    """Resolve ``relative_path`` inside ``project_root`` or raise ``ResolveError``."""
    if not isinstance(relative_path, str):
        raise ResolveError(
            "invalid_path",
            relative_path,
            f"relative path must be a string, got {type(relative_path).__name__}",
        )
    decoded = checked_text(relative_path)
    root = _canonical_root(project_root, relative_path)
    relative = "/".join([part for part in decoded.split("/") if part not in ("", ".")])
    lexical = f"{root.rstrip('/')}/{relative}" if relative else root  # os.path.join(root, *parts)
    canonical, info = paths.realpath_stat(lexical)
    escaped = not paths.is_within(canonical, root)
    if escaped and not outside:
        raise ResolveError(
            "path_outside_project",
            relative_path,
            f"path {relative_path!r} resolves outside the project root (through a symbolic link)",
        )
    mode = info.st_mode if info is not None else _mode(canonical, relative_path)
    if mode is not None and decoded != relative and not _spelling_exists(os.path.join(root, decoded)):
        mode = None  # ``file/.`` or ``file/``: the kernel finds nothing there
    if lexical != canonical and not _kernel_finds(lexical, relative_path):
        mode = None  # a link through a missing directory (``sub/../..``): the kernel finds nothing
    if for_read and mode is not None and _is_special(mode):
        raise ResolveError(
            "special_file",
            relative_path,
            f"path {relative_path!r} is a FIFO, socket or device and cannot be read",
        )
    inode: tuple[int, int] | None = None
    nlink: int | None = None
    if info is not None and mode is not None:  # as ``policy.inspect(canonical)`` answers
        if stat.S_ISREG(info.st_mode):
            inode, nlink = (info.st_dev, info.st_ino), info.st_nlink
        else:
            nlink = 1
    return Resolved(
        root=root,
        relative=relative,
        lexical=lexical,
        canonical=canonical,
        exists=mode is not None,
        traversed_symlink=lexical != canonical,
        outside=escaped,
        inode=inode,
        nlink=nlink,
        size=info.st_size if info is not None and mode is not None else None,
    )


def resolve_plain(root: str, relative_path: str) -> Resolved | None:
    """``resolve(root, relative_path, for_read=True, outside=True)`` for the common case, with less work.

    ``root`` is a canonical project root and ``relative_path`` is already in its
    resolved spelling: no ``%``, no empty or ``.`` component, no trailing ``/``. It
    must name an existing regular file with one link, or a directory, with no
    symbolic link on the way (the kernel's name for it is root + relative_path).
    Anything else gives None and the caller takes ``resolve``, which decides it
    (``tests/test_plain_read.py`` holds the two equal).
    """
    parts = relative_path.split("/")
    if "%" in relative_path or "" in parts or "." in parts:
        return None
    try:
        _check_text(relative_path, relative_path, "")
    except ResolveError:
        return None
    lexical = f"{root}/{relative_path}" if root != "/" else f"/{relative_path}"
    info = paths.plain_stat(lexical)
    if info is None:
        return None
    mode = info.st_mode
    if stat.S_ISREG(mode) and info.st_nlink == 1:
        inode: tuple[int, int] | None = (info.st_dev, info.st_ino)
    elif stat.S_ISDIR(mode):
        inode = None
    else:
        return None
    return Resolved(root, relative_path, lexical, lexical, True, False, False, inode, 1, info.st_size)


def checked_text(relative_path: str) -> str:
    """The decoded spelling of ``relative_path`` after the textual checks ``resolve`` makes first.

    Raises ``ResolveError`` like ``resolve``; listings run it on each entry's
    name so a name ``resolve`` would refuse is refused on the fast path too.
    """
    _check_text(relative_path, relative_path, "")
    decoded = unquote(relative_path)
    if decoded != relative_path:
        _check_text(decoded, relative_path, " after percent-decoding")
    return decoded


def resolve_in_projects(
    projects: Mapping[str, str],
    project_id: str,
    relative_path: str,
    *,
    for_read: bool = False,
    outside: bool = False,
) -> Resolved:
    """Resolve inside the approved root mapped to ``project_id``.

    An unknown id is refused without naming the known ids or their roots.
    """
    if not isinstance(project_id, str) or project_id not in projects:
        raise ResolveError(
            "unknown_project",
            relative_path,
            f"unknown project id {project_id!r}: path {relative_path!r} was not resolved",
        )
    return resolve(projects[project_id], relative_path, for_read=for_read, outside=outside)


def _check_text(text: str, original: str, stage: str) -> None:
    """Rules 2-5 on one spelling of the path (raw or decoded)."""
    # Printable ASCII has no control character: the regex only where the text is not that.
    if not (text.isascii() and text.isprintable()) and _CONTROL.search(text):
        raise ResolveError(
            "invalid_path", original, f"path {original!r} contains a NUL or control character{stage}"
        )
    if text.startswith(("/", "\\")) or (text[1:2] == ":" and _WINDOWS_DRIVE.match(text)):
        raise ResolveError(
            "absolute_path_denied",
            original,
            f"path {original!r} is absolute{stage}; give a path relative to the project root",
        )
    if "\\" in text:
        raise ResolveError(
            "invalid_path", original, f"path {original!r} contains a backslash{stage}; use '/'"
        )
    if text == ".." or text.startswith("../") or text.endswith("/..") or "/../" in text:  # a '..' component
        raise ResolveError(
            "path_outside_project", original, f"path {original!r} contains a '..' component{stage}"
        )


_ROOTS: dict[str, str] = {}  # project root as given -> its canonical form
_MAX_ROOTS = 256


def _canonical_root(project_root: object, original: str) -> str:
    """The realpath of an absolute, existing project root directory.

    Remembered per root: if the root is later swapped for a link elsewhere,
    every target then resolves outside the remembered canonical root and is
    refused, so the cache can only make answers narrower, never wider.
    """
    known = _ROOTS.get(project_root) if isinstance(project_root, str) else None
    if known is not None:
        return known
    root = _check_root(project_root, original)
    assert isinstance(project_root, str)  # _check_root accepts only a string
    if len(_ROOTS) >= _MAX_ROOTS:
        _ROOTS.clear()
    _ROOTS[project_root] = root
    return root


def _check_root(project_root: object, original: str) -> str:
    usable = (
        isinstance(project_root, str)
        and "\x00" not in project_root
        and os.path.isabs(project_root)
    )
    root = paths.canonical(project_root) if usable and isinstance(project_root, str) else ""
    if not usable or not os.path.isdir(root):
        raise ResolveError(
            "unknown_project",
            original,
            f"project root {project_root!r} is not an existing absolute directory; "
            f"path {original!r} was not resolved",
        )
    return root


def _kernel_finds(lexical: str, original: str) -> bool:
    """Whether the kernel finds something at ``lexical`` (a path through a link): a loop is refused.

    ``realpath`` in its lenient form gives a loop a name (``sub/sub`` -> ``sub/../..``
    reads as the root), so the kernel's ``ELOOP`` here is the answer, not that name.
    """
    try:
        os.stat(lexical)
    except (FileNotFoundError, NotADirectoryError):
        return False
    except OSError as error:
        if error.errno == errno.ELOOP:
            raise ResolveError(
                "invalid_path", original, f"path {original!r} cannot be resolved: a symbolic link loop"
            ) from None
        return True  # other errors were judged on the canonical path
    return True


def _spelling_exists(spelled: str) -> bool:
    """``a/./b`` or ``a/`` exist only when ``a`` is a directory, as the kernel says."""
    try:
        os.stat(spelled)
    except NotADirectoryError:
        return False
    except OSError:
        return True  # any other error was already judged on the canonical path
    return True


def _mode(canonical: str, original: str) -> int | None:
    """``st_mode`` of the target, ``None`` when it does not exist."""
    try:
        return os.stat(canonical).st_mode
    except OSError as error:
        if error.errno in _MISSING:
            return None
        reason = "a symbolic link loop" if error.errno == errno.ELOOP else error.strerror
        raise ResolveError(
            "invalid_path", original, f"path {original!r} cannot be resolved: {reason}"
        ) from None


_SPECIAL_FORMATS = frozenset((stat.S_IFIFO, stat.S_IFSOCK, stat.S_IFCHR, stat.S_IFBLK))


def _is_special(mode: int) -> bool:
    """A FIFO, a socket, a character or a block device."""
    return stat.S_IFMT(mode) in _SPECIAL_FORMATS
