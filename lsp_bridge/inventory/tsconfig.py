"""The ``tsconfig`` files a root's toolchain reads, and which of them may be handed to a sandbox.

``extends_chain`` follows each root ``tsconfig*.json``'s ``extends`` (a string or an
array) through relative paths and ``node_modules`` packages, as TypeScript does, and
returns every file reached with the file that asked for it. A file the chain may
reach is a *toolchain file*: it is mounted read-only into the sandbox when it lies
outside the root. Only configuration files qualify (``refusal``), whatever a
repository's ``extends`` says:

* never a path under ``/proc``, ``/sys`` or ``/dev``, nor anything but a regular file
  (``/proc/kmsg``, a device, a FIFO are refused before any read);
* never anything inside a ``.git`` directory, never a file named like a credential
  (``inventory.secrets``: ``.env``, ``.npmrc``, ``id_rsa``, ``credentials.json``...);
* the name ends in ``.json`` (TypeScript reads nothing else through ``extends``);
* the content is a JSON object whose keys are tsconfig keys (``TSCONFIG_KEYS``, or a
  tool's ``...CompilerOptions``): a JSON file holding anything else is not a tsconfig.

A refused file is reported (``Refusal``: the path, why, the file that asked) and not
followed. An ``extends`` array longer than ``MAX_EXTENDS_ENTRIES`` is refused whole, the
chain is at most ``MAX_EXTENDS_DEPTH`` deep and reaches at most ``MAX_CHAIN_FILES``
files; a file larger than ``MAX_TSCONFIG_BYTES`` is refused, and so is the file that would
take the chain past ``MAX_CHAIN_BYTES`` read in all. Only the ``extends`` entries of a file
are kept while the files it names are read: a hostile repository cannot make a command
slow or exhaust its memory.
"""

from __future__ import annotations

import os
import stat
from typing import NamedTuple

from lsp_bridge.core.diagnostics import Diagnostic, Range
from lsp_bridge.core.paths import is_within
from lsp_bridge.core.toolchain import Refusal
from lsp_bridge.inventory.jsonc import load_json, locate
from lsp_bridge.inventory.secrets import is_credential_path

MAX_EXTENDS_DEPTH = 32
MAX_EXTENDS_ENTRIES = 64
MAX_CHAIN_FILES = 256
MAX_TSCONFIG_BYTES = 1 << 20  # a real tsconfig is a few KB; a larger file is refused, named
MAX_CHAIN_BYTES = 4 << 20  # every file of one root's chains together (256 real ones are well under 1 MiB)
KERNEL_TREES = ("/proc", "/sys", "/dev")
TSCONFIG_KEYS = frozenset({
    "$schema", "extends", "compilerOptions", "include", "exclude", "files", "references", "compileOnSave",
    "watchOptions", "typeAcquisition", "buildOptions", "ts-node", "display", "_version", "tsc-alias", "docs",
    "typedocOptions", "mdx",
})


class ChainFile(NamedTuple):
    """One file of an ``extends`` chain: the path the toolchain opens, its canonical path, and the
    file whose ``extends`` named it (None: a ``tsconfig*.json`` of the root itself)."""

    opened: str
    real: str
    referrer: str | None


def named_tsconfig(name: str) -> bool:
    """``tsconfig.json`` or ``tsconfig.<something>.json``."""
    if name == "tsconfig.json":
        return True
    if not (name.startswith("tsconfig.") and name.endswith(".json")):
        return False
    middle = name[len("tsconfig."):-len(".json")]
    return bool(middle) and "\n" not in middle


def tsconfig_starts(root: str) -> list[str]:
    try:
        names = sorted(n for n in os.listdir(root) if named_tsconfig(n))
    except OSError:
        return []
    return [os.path.join(root, n) for n in names if os.path.isfile(os.path.join(root, n))]


def path_refusal(path: str) -> str | None:
    """Why ``path`` (and the file it resolves to) can never be a toolchain file, judged by place,
    name and type without reading it; None when it may be one."""
    real = os.path.realpath(path)
    for shown in dict.fromkeys((os.path.normpath(path), real)):
        if any(is_within(shown, tree) for tree in KERNEL_TREES):
            return f"{shown} is a kernel interface or a device, never a configuration file"
        if ".git" in shown.split(os.sep):
            return f"{shown} is inside a .git directory (repository internals, never a toolchain file)"
        if is_credential_path(shown):
            return f"{shown} is named like a credential file"
    try:
        info = os.stat(real)
    except OSError as exc:
        return f"{real} cannot be read ({exc.strerror or exc})"
    if not stat.S_ISREG(info.st_mode):
        return f"{real} is not a regular file"
    return None


def shape_refusal(path: str, data: object) -> str | None:
    """Why the parsed content of ``path`` is not a tsconfig; None when it is one."""
    if not isinstance(data, dict):
        return f"{path} is not a JSON object, so not a tsconfig"
    unknown = sorted(k for k in data if k not in TSCONFIG_KEYS and not k.endswith("CompilerOptions"))
    if unknown:
        return f"{path} has keys no tsconfig has ({', '.join(repr(k) for k in unknown[:3])}), so it is not one"
    return None


def extends_chain(root: str, diagnostics: list[Diagnostic], refused: list[Refusal] | None = None) -> list[ChainFile]:
    """Every config the root's tsconfig files use, themselves included, following ``extends``
    (string or array) through relative paths and ``node_modules`` packages; refused targets go
    to ``refused`` (and a warning to ``diagnostics``), never into the chain."""
    reached: list[ChainFile] = []
    done: set[str] = set()
    refusals = refused if refused is not None else []
    read = [0]  # bytes read for the chain so far

    def refuse(path: str, reason: str, referrer: str, where: Range | None, spec: str) -> None:
        if any(r.path == path and r.cause == referrer for r in refusals):
            return
        refusals.append(Refusal(path, reason, referrer))
        diagnostics.append(Diagnostic("warning", "tsconfig-extends-refused",
                                      f"extends {spec!r} is not followed: {reason}", referrer, where))

    def size_refusal(real: str) -> str | None:
        try:
            size = os.stat(real).st_size
        except OSError as exc:
            return f"{real} cannot be read ({exc.strerror or exc})"
        if size > MAX_TSCONFIG_BYTES:
            return f"{real} is larger than {MAX_TSCONFIG_BYTES >> 20} MiB (a real tsconfig is a few KB)"
        if read[0] + size > MAX_CHAIN_BYTES:
            return (f"reading {real} takes the extends chains past {MAX_CHAIN_BYTES >> 20} MiB in all: "
                    "it and what it extends are not followed")
        return None

    def visit(opened: str, ts_path: str, stack: tuple[str, ...]) -> None:
        real = os.path.realpath(opened)
        referrer = stack[-1] if stack else None
        if real in stack:
            diagnostics.append(Diagnostic("warning", "tsconfig-extends-cycle", f"extends cycle through {real}", stack[-1]))
            return
        if real in done:
            return
        if len(stack) > MAX_EXTENDS_DEPTH or len(done) >= MAX_CHAIN_FILES:
            limit = (f"deeper than {MAX_EXTENDS_DEPTH}" if len(stack) > MAX_EXTENDS_DEPTH
                     else f"longer than {MAX_CHAIN_FILES} files")
            diagnostics.append(Diagnostic("warning", "tsconfig-extends-too-long",
                                          f"extends chain {limit}: {real} and what it extends are not followed",
                                          referrer))
            return
        judged = referrer is not None or real != opened  # outside the root (or a link leading out of it)
        cause = referrer or opened
        if judged and (why := path_refusal(opened) or size_refusal(real)) is not None:
            refuse(real, why, cause, None, opened)
            return
        if not judged and (why := size_refusal(real)) is not None:
            diagnostics.append(Diagnostic("warning", "tsconfig-too-large", f"{why}: not read", real))
            return
        data, text, error = load_json(real, comments=True, limit=MAX_TSCONFIG_BYTES, code="tsconfig")
        read[0] += len(text or "")
        if judged:
            why = error.message if error is not None else shape_refusal(real, data)
            if why is not None:
                refuse(real, why, cause, None, opened)
                return
        done.add(real)
        reached.append(ChainFile(opened, real, referrer))
        if error or not isinstance(data, dict):
            if error:
                diagnostics.append(Diagnostic("warning", "tsconfig-invalid", error.message, real, error.range))
            return
        extends = data.get("extends")
        del data  # only the extends entries are kept while the files they name are read
        specs = extends if isinstance(extends, list) else [extends] if extends is not None else []
        if len(specs) > MAX_EXTENDS_ENTRIES:
            diagnostics.append(Diagnostic(
                "warning", "tsconfig-extends-too-many",
                f"extends has {len(specs)} entries, more than {MAX_EXTENDS_ENTRIES}: none of them is followed "
                "(a real tsconfig extends a handful of files)", real))
            return
        places = [locate(text, str(spec)) for spec in specs]
        del text
        for spec, where in zip(specs, places, strict=True):
            found = resolve_extends(spec, ts_path)
            if isinstance(found, Refusal):
                refuse(found.path, found.reason, real, where, str(spec))
                continue
            if found is None:
                diagnostics.append(
                    Diagnostic("warning", "tsconfig-extends-missing", f"extends {spec!r} resolves to no file", real)
                )
                continue
            why = path_refusal(found[0])
            if why is None and not found[0].endswith(".json"):
                why = f"{found[0]} is not a .json file, so not a tsconfig"
            if why is not None:
                refuse(os.path.realpath(found[0]), why, real, where, str(spec))
                continue
            visit(*found, stack + (real,))

    for start in tsconfig_starts(root):
        visit(start, start, ())
    return reached


def resolve_extends(spec: object, ts_path: str) -> tuple[str, str] | Refusal | None:
    """(path opened, path TypeScript continues from) for one ``extends`` value; a ``Refusal``
    for a path that may not even be looked at (a kernel interface or a device)."""
    if not isinstance(spec, str) or not spec:
        return None
    base = os.path.dirname(ts_path)
    if spec.startswith(("./", "../")) or spec in (".", "..") or os.path.isabs(spec):
        path = os.path.normpath(os.path.join(base, spec))
        if any(is_within(path, tree) for tree in KERNEL_TREES):
            return Refusal(path, f"{path} is a kernel interface or a device, never a configuration file", None)
        for candidate in (path, path + ".json") if not path.endswith(".json") else (path,):
            if os.path.lexists(candidate) and not os.path.isdir(candidate):
                return candidate, candidate  # judged by the caller (a device or a FIFO is refused there)
        return None
    d = base
    while True:
        found = package_config(os.path.join(d, "node_modules", *spec.split("/")))
        if found:
            return found, os.path.realpath(found)  # TypeScript realpaths packages
        parent = os.path.dirname(d)
        if parent == d:
            return None
        d = parent


def package_config(candidate: str) -> str | None:
    for path in (candidate, candidate + ".json"):
        if os.path.isfile(path):
            return path
    if not os.path.isdir(candidate):
        return None
    data, _, _ = load_json(os.path.join(candidate, "package.json"), comments=False, limit=MAX_TSCONFIG_BYTES)
    named = data.get("tsconfig") if isinstance(data, dict) else None
    path = os.path.join(candidate, named if isinstance(named, str) else "tsconfig.json")
    return path if os.path.isfile(path) else None


def type_package(name: str) -> tuple[str, ...]:
    """Folder names under node_modules a ``types`` entry can resolve to, in TypeScript's order."""
    parts = name.split("/")
    package = parts[:2] if name.startswith("@") else parts[:1]
    at_types = "@types/" + ("__".join(p.lstrip("@") for p in package) if name.startswith("@") else package[0])
    return (at_types, "/".join(package))


def resolve_type(name: str, start: str) -> str | None:
    """The node_modules folder a ``types`` entry resolves from, walking up from ``start``."""
    candidates = type_package(name)
    directory = start
    while True:
        modules = os.path.join(directory, "node_modules")
        if any(os.path.exists(os.path.join(modules, *c.split("/"))) for c in candidates):
            return modules
        parent = os.path.dirname(directory)
        if parent == directory:
            return None
        directory = parent
