"""``docker run`` / ``podman run`` volume arguments: which arguments mount what.

``volume_arguments`` finds the ``-v``/``--volume``/``--mount`` options between ``run``
and the image; ``split_volume`` and ``split_mount`` read one option's value. Plain
Python, no I/O.
"""

from __future__ import annotations

import csv
import re
from collections.abc import Iterator, Sequence


class Unresolved(ValueError):
    """A mount option (or a ``${...}`` in it) that cannot be read; the mount is dropped."""


_BOOL_LONG = frozenset(
    ["--rm", "--interactive", "--tty", "--detach", "--init", "--privileged", "--read-only", "--publish-all",
     "--no-healthcheck", "--oom-kill-disable", "--sig-proxy", "--quiet", "--disable-content-trust", "--help",
     "--replace", "--rmi"]
)
_BOOL_SHORT = frozenset("itdPq")


def volume_arguments(args: Sequence[str], start: int) -> Iterator[tuple[int, str, str]]:
    """(index, "volume"|"mount", spec) for each mount option between ``run`` and the image."""
    i = start
    while i < len(args):
        arg = args[i]
        takes_next = i + 1 < len(args) and not args[i + 1].startswith("-")
        if arg == "--" or not arg.startswith("-") or arg == "-":
            return  # the image: what follows belongs to the container's command
        if arg.startswith("--"):
            name, eq, value = arg.partition("=")
            kind = {"--volume": "volume", "--mount": "mount"}.get(name)
            if eq:
                if kind:
                    yield i, kind, value
                i += 1
            elif kind:
                if i + 1 < len(args):
                    yield i + 1, kind, args[i + 1]
                i += 2
            else:
                i += 1 if name in _BOOL_LONG or not takes_next else 2
            continue
        letters = arg[1:]
        while letters and letters[0] in _BOOL_SHORT:
            letters = letters[1:]
        if not letters:
            i += 1
            continue
        attached = letters[1:].removeprefix("=")
        if attached:
            if letters[0] == "v":
                yield i, "volume", attached
            i += 1
        else:
            if letters[0] == "v" and i + 1 < len(args):
                yield i + 1, "volume", args[i + 1]
                i += 2
            else:
                i += 2 if letters[0] == "v" or takes_next else 1


_DRIVE = re.compile(r"^[A-Za-z]:[\\/]")


def split_volume(spec: str) -> tuple[str, str, set[str]] | None:
    """``src:dst[:opts]`` -> (src, dst, opts); None for an anonymous volume."""
    cut = spec.find(":", 2 if _DRIVE.match(spec) else 0)
    if cut < 0:
        return None
    src, rest = spec[:cut], spec[cut + 1:]
    dst, _, opts = rest.partition(":")
    return src, dst, {o.strip() for o in opts.split(",") if o.strip()}


def split_mount(spec: str) -> tuple[str, str, set[str]] | None:
    """``type=bind,source=..,target=..[,readonly]`` -> (src, dst, opts); None unless a bind."""
    fields = next(csv.reader([spec]), [])
    values: dict[str, str] = {}
    for item in fields:
        key, eq, value = item.partition("=")
        values[key.strip().lower()] = value if eq else "true"
    if values.get("type", "volume") != "bind":
        return None
    src = values.get("source", values.get("src", ""))
    dst = values.get("target", values.get("destination", values.get("dst", "")))
    if not src or not dst:
        raise Unresolved("a bind --mount needs both source= and target=")
    readonly = values.get("readonly", values.get("ro", "false")).lower() in ("true", "1", "yes")
    return src, dst, ({"ro"} if readonly else set())
