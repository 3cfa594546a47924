"""Docker parity: the sandbox's mount set as a whole ``docker run`` command.

The container sees the repository under ``/workspace`` (the layout of the
mount reconciliation, seed 000: relative pnpm links resolve the same way), with
the same mounts the bubblewrap profile makes, read-only where the sandbox is:
union entries (``rw`` only where ``write`` is allowed), the store and single
files read-only, ``.git`` and protected files read-only, masked files as
``/dev/null`` and masked directories as read-only tmpfs. System directories
come from the image; ``--network none`` and ``--user`` keep the rest narrow.
"""

from __future__ import annotations

import csv
import io
import os
import posixpath
from dataclasses import dataclass

from lsp_bridge.core.paths import is_within, relative_to
from lsp_bridge.inventory.mounts import CONTAINER_ROOT
from lsp_bridge.sandbox.profile import Profile


@dataclass(frozen=True)
class DockerCommand:
    argv: tuple[str, ...]
    skipped: tuple[str, ...]  # host paths with no place under /workspace (said on stderr)


def _layout(reconciliation) -> list[tuple[str, str]]:
    """(host path, container path) pairs, deepest first."""
    pairs = {(s.source, s.target) for s in reconciliation.suggested}
    return sorted(pairs, key=lambda p: -len(p[0]))


def container_path(host: str, layout: list[tuple[str, str]]) -> str | None:
    for source, target in layout:
        if is_within(host, source):
            rel = relative_to(host, source)
            return posixpath.join(target, rel) if rel else target
    return None


def _mount(kind: str, source: str, target: str, readonly: bool) -> list[str]:
    if kind == "bind" and ":" not in source and ":" not in target:
        return ["-v", f"{source}:{target}:{'ro' if readonly else 'rw'}"]
    fields = [f"type={kind}"] + ([f"source={source}"] if kind == "bind" else []) + [f"target={target}"]
    if kind == "tmpfs":
        fields.append("tmpfs-mode=0555")
    if readonly:
        fields.append("readonly")
    buffer = io.StringIO()
    csv.writer(buffer, lineterminator="").writerow(fields)
    return ["--mount", buffer.getvalue()]


def docker_command(profile: Profile, reconciliation, *, image: str = "IMAGE", user: str | None = None,
                   program: str = "docker", command: tuple[str, ...] = ()) -> DockerCommand:
    layout = _layout(reconciliation)
    user = user or f"{os.getuid()}:{os.getgid()}"
    argv = [program, "run", "--rm", "-i", "--network", "none", "--user", user]
    skipped: list[str] = []
    for op in profile.ops:
        if op.reason.startswith(("system", "the Landlock", "the Python runtime")):
            continue
        target = container_path(op.target, layout)
        if target is None:
            skipped.append(op.target)
            continue
        if op.kind in ("bind", "ro-bind"):
            argv += _mount("bind", str(op.source), target, op.kind == "ro-bind")
        elif op.kind == "mask-file":
            argv += _mount("bind", "/dev/null", target, True)
        elif op.kind == "mask-dir":
            argv += _mount("tmpfs", "", target, True)
    argv += ["-w", container_path(profile.chdir, layout) or CONTAINER_ROOT, image, *command]
    return DockerCommand(tuple(argv), tuple(skipped))
