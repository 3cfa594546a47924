"""How many credentials one file holds, and which file names usually hold them.

Counts only: no function here returns, logs or raises with a value read from a
file. Detection is detect-secrets' regex plugins (keys with a known shape, URLs
with a password, private-key blocks) plus variable-name heuristics for
``KEY=value`` / ``key = "value"`` / ``key: value`` lines. Each line counts once,
however many detectors fire on it.
"""

from __future__ import annotations

import os
import re
import threading
from typing import TYPE_CHECKING

from lsp_bridge.core.atomic import read_cache, write_cache
from lsp_bridge.core.paths import read_regular

if TYPE_CHECKING:
    from typing import Any

MAX_SCAN_BYTES = 1 << 20  # larger files are judged by name only
_SNIFF_BYTES = 8192

# ---------------------------------------------------------------- file names

# One pattern for every parent-independent credential file name. It never
# matches across NUL, so ``inventory`` can run it over a NUL-joined listing.
# Case-insensitive (``(?i:``): ``.ENV`` is ``.env`` on macOS and Windows, and ``PROD.TFVARS``
# holds what ``prod.tfvars`` does anywhere. The parent directories (``.aws``...) are exact.
_ANY = r"[^\x00]"
CREDENTIAL_NAME_PATTERN = "(?i:" + (
    r"\.env(?:\.{a}*)?|\.envrc|{a}+\.env|\.npmrc|\.pypirc|[._]netrc|\.git-credentials|\.pgpass"
    r"|\.htpasswd|\.dockercfg|\.vault-token|application_default_credentials\.json"
    r"|credentials\.json|terraform\.tfstate(?:\.backup)?"
    r"|{a}+\.(?:tfvars|tfvars\.json|tfstate|pem|key|p12|pfx|jks|keystore|kdbx|ppk|ovpn)"
    r"|(?:id_rsa|id_dsa|id_ecdsa|id_ed25519|client_secret)(?!{a}*\.pub(?![^\x00])){a}*"
    r"|\.?secrets?\.(?:ya?ml|json|toml|env|ini)"
).replace("{a}", _ANY) + ")"
_CREDENTIAL_NAME = re.compile(f"(?:{CREDENTIAL_NAME_PATTERN})")
# A cheap pre-check over "\x00name\x00name...": every name the pattern above
# matches holds a dotted hint word (".env", ".pem", ".json"...) or starts with
# one of CREDENTIAL_NAME_STARTS, so a listing without either needs no closer look.
_HINT_WORDS = (
    "env", "npmrc", "pypirc", "netrc", "git", "pgpass", "htpasswd", "dockercfg",
    "vault-token", "json", "tfvars", "tfstate", "pem", "key", "p12", "pfx", "jks",
    "keystore", "kdbx", "ppk", "ovpn", "yml", "yaml", "toml", "ini",
)
CREDENTIAL_NAME_STARTS = ("id_", "_netrc", "client_secret")


def dotted_hint(extra_words: tuple[str, ...] = ()) -> str:
    """Regex for a "." followed by a hint word (or one of ``extra_words``).

    It starts with a literal ".", which the regex engine skips to quickly, and
    groups the words by first letter, so few branches are tried at each dot.
    """
    groups: dict[str, list[str]] = {}
    for word in (*_HINT_WORDS, *extra_words):
        groups.setdefault(word[0], []).append(re.escape(word[1:]))
    return r"\.(?:" + "|".join(
        f"{re.escape(first)}(?:{'|'.join(rest)})" for first, rest in groups.items()) + ")"


CREDENTIAL_NAME_HINT = "(?i:" + dotted_hint() + r"|\x00(?:" + "|".join(CREDENTIAL_NAME_STARTS) + "))"
# (parent directory name, file name) pairs: ~/.aws/credentials, ~/.docker/config.json ...
_IN_DIRECTORY = frozenset({
    (".aws", "credentials"), (".docker", "config.json"), (".kube", "config"),
    ("gcloud", "credentials.db"), ("gcloud", "access_tokens.db"),
})
CREDENTIAL_PARENTS = frozenset(parent for parent, _ in _IN_DIRECTORY)
# Formats that are binary by design: the name alone says there is one credential.
_BINARY_BY_NAME = (".p12", ".pfx", ".jks", ".keystore", ".kdbx", ".db")
# Program source: a name-based guess needs a quoted literal value there.
SOURCE_EXTENSIONS = frozenset({
    ".ts", ".tsx", ".mts", ".cts", ".js", ".jsx", ".mjs", ".cjs", ".vue", ".svelte", ".py", ".pyi", ".go",
    ".rs", ".java", ".kt", ".kts", ".scala", ".rb", ".php", ".cs", ".fs", ".swift", ".dart", ".c", ".h",
    ".cc", ".cpp", ".hpp", ".m", ".ex", ".exs", ".erl", ".clj", ".lua", ".r", ".jl", ".zig", ".groovy",
})


def is_credential_name(name: str, parent: str = "") -> bool:
    """Whether a file called ``name`` (in a directory called ``parent``) usually holds credentials."""
    if (parent, name) in _IN_DIRECTORY:
        return True
    return _CREDENTIAL_NAME.fullmatch(name) is not None and not name.lower().endswith(".pub")


def is_credential_path(path: str) -> bool:
    """``is_credential_name`` on the last two components of ``path``."""
    parent, name = os.path.split(os.path.normpath(path))
    return is_credential_name(name, os.path.basename(parent))


# ---------------------------------------------------------------- detectors

# detect-secrets plugins that only find values of a known shape. The entropy and
# keyword plugins are left out (too noisy for a count a reviewer reads), and so is
# the public-IP one (an address is not a credential).
_EXCLUDED_PLUGINS = frozenset({"IPPublicDetector"})


_loaded_detectors: tuple | None = None
_loading = threading.Lock()


def load_detectors() -> None:
    """Import and build the detectors now (a few hundred ms, mostly imports).

    Safe from any thread; later calls return at once. Without it, the first
    file scanned pays the cost.
    """
    _detectors()


def _detectors() -> tuple:
    """Compiled regex detectors from detect-secrets, or a small built-in set."""
    global _loaded_detectors
    if _loaded_detectors is None:
        with _loading:  # a second caller waits for the first instead of importing twice
            if _loaded_detectors is None:
                _loaded_detectors = _cached_detectors() or _imported_detectors()
    return _loaded_detectors


def _imported_detectors() -> tuple:
    try:
        found = tuple(_detect_secrets_plugins())
    except ImportError:
        return (_Fallback(),)
    _save_cache(found)
    return found


def _detect_secrets_plugins():
    import importlib
    import inspect
    import pkgutil

    from detect_secrets import plugins
    from detect_secrets.plugins.base import RegexBasedDetector

    for module_info in pkgutil.iter_modules(plugins.__path__):
        module = importlib.import_module(f"{plugins.__name__}.{module_info.name}")
        for name, cls in inspect.getmembers(module, inspect.isclass):
            if (
                cls.__module__ == module.__name__
                and issubclass(cls, RegexBasedDetector)
                and not inspect.isabstract(cls)
                and name not in _EXCLUDED_PLUGINS
            ):
                yield cls()


# ---------------------------------------------------------------- the detectors without the import
#
# Importing detect-secrets costs more than a whole inventory: its package and its plugins'
# base module pull in its scanner, filters and an HTTP stack (requests, urllib3) that counting
# never uses. What counting uses is each regex plugin's ``denylist``. After the first import,
# the patterns are kept in the user's cache directory, keyed by the size and modification time
# of every file of the installed plugins package (an upgrade or an edit invalidates it), and
# later processes compile them without importing anything. A plugin with its own
# ``analyze_string`` (the JWT one validates what its regex found) is run for real, imported
# only when its regex finds something on a line: the answer is always the plugin's.

_CACHE_FORMAT = 1


def _plugins_signature() -> list | None:
    """(name, size, mtime) of every file of detect_secrets/plugins, found without importing it."""
    import importlib.util

    try:
        spec = importlib.util.find_spec("detect_secrets")
    except (ImportError, ValueError):
        return None
    if spec is None or not spec.submodule_search_locations:
        return None
    folder = os.path.join(list(spec.submodule_search_locations)[0], "plugins")
    try:
        with os.scandir(folder) as it:
            files = sorted([e.name, e.stat().st_size, e.stat().st_mtime_ns] for e in it if e.name.endswith(".py"))
    except OSError:
        return None
    import sys

    return [_CACHE_FORMAT, sys.version, folder, sorted(_EXCLUDED_PLUGINS), files]


def _cache_path() -> str | None:
    import platformdirs

    try:
        return os.path.join(platformdirs.user_cache_dir("rootguard"), "detect-secrets-patterns.json")
    except ImportError:  # pragma: no cover - platformdirs is a dependency
        return None


def _cached_detectors() -> tuple | None:
    """The detectors from the validated pattern cache, or None (no cache, stale, unreadable)."""
    path = _cache_path()
    if path is None:
        return None
    try:
        data = read_cache(path)
        if not isinstance(data, dict) or data.get("signature") != _plugins_signature():
            return None
        detectors: list = []
        for item in data["detectors"]:
            patterns = tuple(re.compile(text, flags) for text, flags in item["patterns"])
            if item["plain"]:
                detectors.append(_CachedRegexDetector(patterns))
            else:
                detectors.append(_DeferredDetector(item["module"], item["class"], patterns))
        return tuple(detectors) if detectors else None
    except (OSError, ValueError, KeyError, TypeError, RecursionError, re.error):
        return None


def _save_cache(detectors: tuple) -> None:
    import json

    path = _cache_path()
    signature = _plugins_signature()
    if path is None or signature is None:
        return
    from detect_secrets.plugins.base import RegexBasedDetector

    items = []
    for detector in detectors:
        cls = type(detector)
        items.append({
            "module": cls.__module__, "class": cls.__name__,
            "plain": cls.analyze_string is RegexBasedDetector.analyze_string,
            "patterns": [[p.pattern, p.flags] for p in detector.denylist],
        })
    # no cache when it cannot be written: the next process imports detect-secrets again
    write_cache(path, json.dumps({"signature": signature, "detectors": items}))


class _CachedRegexDetector:
    """detect-secrets' ``RegexBasedDetector.analyze_string`` over cached patterns."""

    __slots__ = ("denylist",)

    def __init__(self, denylist: tuple) -> None:
        self.denylist = denylist

    def analyze_string(self, string: str):
        for regex in self.denylist:
            for match in regex.findall(string):
                if isinstance(match, tuple):
                    yield from filter(bool, match)
                else:
                    yield match


class _DeferredDetector:
    """A plugin with its own ``analyze_string``: imported and asked only when its regex matches.

    The plugin's ``analyze_string`` only ever yields what its ``denylist``
    found (it filters, never adds), so no regex match means no finding.
    """

    def __init__(self, module: str, name: str, denylist: tuple) -> None:
        self.module, self.name, self.denylist = module, name, denylist
        self._real: Any = None

    def analyze_string(self, string: str):
        if not any(regex.search(string) for regex in self.denylist):
            return
        if self._real is None:
            import importlib

            self._real = getattr(importlib.import_module(self.module), self.name)()
        yield from self._real.analyze_string(string)


class _Fallback:
    """Used when detect-secrets is not installed: the shapes that matter most."""

    _patterns = (
        re.compile(r"BEGIN (?:[A-Z0-9]+ )*PRIVATE KEY"),
        re.compile(r"://[^:/?#\[\]@\s]+:[^:/?#\[\]@\s]+@"),
        re.compile(r"\b(?:AKIA|ASIA)[0-9A-Z]{16}\b"),
        re.compile(r"\b[rs]k_live_[0-9a-zA-Z]{24}"),
        re.compile(r"\bgh[pousr]_[A-Za-z0-9]{36}\b"),
        re.compile(r"\bxox[abprs]-[0-9A-Za-z-]{10,}"),
    )

    def analyze_string(self, line: str):
        for pattern in self._patterns:
            if pattern.search(line):
                yield ""


def _detector_fires(line: str) -> bool:
    for detector in _detectors():
        for _ in detector.analyze_string(line):
            return True
    return False


# ---------------------------------------------------------------- names and values

_STRONG_WORDS = frozenset({
    "PASSWORD", "PASSWD", "PWD", "PASS", "PASSPHRASE", "SECRET", "SECRETS", "CREDENTIAL",
    "CREDENTIALS", "CREDS", "DSN", "PRIVATEKEY",
})
_WEAK_WORDS = frozenset({
    "KEY", "APIKEY", "ACCESSKEY", "SECRETKEY", "WRITEKEY", "TOKEN", "TOKENS", "AUTH",
    "AUTHTOKEN", "BEARER", "SIGNINGKEY",
})
_PUBLIC_WORDS = frozenset({"PUBLIC", "PUBLISHABLE", "PUB"})
_WORD = re.compile(r"[A-Z]+(?![a-z])|[A-Z]?[a-z]+|[0-9]+")
_URL = re.compile(r"^[A-Za-z][A-Za-z0-9+.\-]*://(?P<userinfo>[^/@\s]+@)?")
_NAME_COLON_VALUE = re.compile(r"""^["']?([A-Za-z_][\w.\-]*)["']?\s*:\s*(.*)$""")
_NETRC_PASSWORD = re.compile(r"\b(?:password|passwd)\s+(\S+)")
_REFERENCE = re.compile(r"^(?:\$|\{\{|<.*>$|%\(|(?:var|local|data|module)\.|env\()")
_PLACEHOLDER = re.compile(
    r"^(?:x+|\*+|\.+|-+|changeme|change_me|changeit|replace[_\-]?me|placeholder|redacted|todo|tbd|"
    r"none|null|nil|undefined|true|false|yes|no|on|off|(?:your|my|insert|enter|put)[_\-\s].*|"
    r"example.*|.*[_\-](?:here|goes[_\-]here)|dummy.*|fake.*|sample.*|secret|password|pass|"
    r"<[^>]*>|\$\{[^}]*\}|\$[A-Za-z_][A-Za-z0-9_]*|.*x{6,}.*|.*example.*)$",
    re.IGNORECASE,
)

# ``.env.example`` and friends hold sample values: only a value with a known secret
# shape (a detector hit) counts there, never a name-based guess.
_EXAMPLE_FILE = re.compile(r"(?:^|[._\-])(?:example|sample|template|dist|tmpl|tpl)(?:$|[._\-])",
                           re.IGNORECASE)
_URL_PASSWORD = re.compile(r"://[^:/?#\[\]@\s]+:([^/?#\[\]@\s]+)@")
_NUMBER = re.compile(r"^[+\-]?[0-9_.]+[smhdkKMG]?$")


def name_words(name: str) -> set[str]:
    """Upper-case words of a variable name: ``_authToken`` -> {"AUTH", "TOKEN"}."""
    return {word.upper() for word in _WORD.findall(name)}


def _split_assignment(line: str) -> tuple[str, str] | None:
    """(name, raw value) of an assignment line, or None."""
    if line.startswith("export "):
        line = line[len("export "):].lstrip()
    name, sep, value = line.partition("=")
    if sep and name.strip() and not re.search(r"\s", name.strip()) and not value.startswith("="):
        return name.strip().strip("\"'"), value
    match = _NAME_COLON_VALUE.match(line)
    if match:
        return match.group(1), match.group(2)
    return None


def _clean_value(raw: str) -> str:
    value = raw.strip().rstrip(",;").strip()
    if value[:1] in ("'", '"'):
        quote = value[0]
        end = value.find(quote, 1)
        return value[1:end] if end > 0 else value[1:]
    return value.split(" #", 1)[0].strip()


def _is_real_value(value: str) -> bool:
    """Not empty, not a reference to another variable, not a placeholder or a number."""
    return bool(value) and not (
        _REFERENCE.match(value) or _PLACEHOLDER.match(value) or _NUMBER.match(value)
        or value in ("{", "[", "{}", "[]", "|", ">")
    )


def _looks_random(value: str) -> bool:
    """A token-like value: long enough, no spaces, at least two character classes."""
    if len(value) < 8 or re.search(r"\s", value):
        return False
    classes = sum(bool(re.search(p, value)) for p in ("[a-z]", "[A-Z]", "[0-9]"))
    return classes >= 2


def _assignment_is_credential(name: str, value: str) -> bool:
    url = _URL.match(value)
    if url:
        return bool(url.group("userinfo"))  # user:password@ or key@ (Sentry DSN)
    words = name_words(name)
    if not _is_real_value(value) or words & _PUBLIC_WORDS:
        return False
    if words & _STRONG_WORDS:
        return True
    return bool(words & _WEAK_WORDS) and _looks_random(value)


def is_placeholder(value: str) -> bool:
    """A sample value: ``changeme``, ``${VAR}``, ``<your-key>``, ``your_token_here``, ``xxxxxx``..."""
    return bool(_REFERENCE.match(value) or _PLACEHOLDER.match(value))


def _placeholder_line(text: str) -> bool:
    """An assignment (or URL) whose secret part is a placeholder: not a credential."""
    for password in _URL_PASSWORD.findall(text):
        if is_placeholder(password):
            return True
    assignment = _split_assignment(text)
    if assignment is None:
        return False
    value = _clean_value(assignment[1])
    return bool(value) and not _URL.match(value) and is_placeholder(value)


def is_example_file(path: str) -> bool:
    """``.env.example``, ``secrets.sample.yaml``, ``example.env``...: sample values by intent."""
    return _EXAMPLE_FILE.search(os.path.basename(path)) is not None


_SOURCE_LITERAL = re.compile(
    r"""(?P<name>[A-Za-z_$][\w$]*)["']?\s*(?::|=|:=|=>)\s*(?P<q>["'`])(?P<value>[^"'`\\]*)(?P=q)""")


def is_source_file(path: str) -> bool:
    """Program source (``.ts``, ``.py``...): an unquoted value there is an expression, not a secret."""
    return os.path.splitext(path)[1].lower() in SOURCE_EXTENSIONS


def line_is_credential(line: str, *, shapes_only: bool = False, source: bool = False) -> bool:
    """Whether one text line carries a credential (detectors or name heuristics).

    Placeholders never count. ``shapes_only``: only a detector hit counts (example files).
    ``source``: the line is program source, where ``clientSecret: options.discordClientSecret``
    names a variable; only a quoted literal value can be a secret there (detector hits count
    as everywhere).
    """
    text = line.strip()
    if not text or _placeholder_line(text):
        return False
    if _detector_fires(text):
        return True
    if shapes_only:
        return False
    if text.startswith(("#", "//", ";", "<!--")):
        return False
    if source:  # only `name: "literal"` / `name = 'literal'` pairs; an expression names a secret, holds none
        return any(_assignment_is_credential(m["name"], m["value"]) for m in _SOURCE_LITERAL.finditer(text))
    assignment = _split_assignment(text)
    if assignment is not None:
        name, raw = assignment
        return _assignment_is_credential(name, _clean_value(raw))
    netrc = _NETRC_PASSWORD.search(text)
    return netrc is not None and _is_real_value(netrc.group(1))


# ---------------------------------------------------------------- files


def credential_reason(path: str) -> str | None:
    """The one answer to "is this a credential file?" (inventory, trace and the tools ask it).

    A credential name (``.env``, ``id_rsa``, ``~/.aws/credentials``...), or content holding
    a live-looking secret value (``count_credentials``). Source code that only names a
    secret variable is not one. None when it is not; never reads through a link.
    """
    if is_credential_path(path):
        return "credential file (by name)"
    try:
        found = count_credentials(path)
    except OSError:
        found = 0
    if found:
        return f"credential file ({found} secret{'s' if found != 1 else ''} found in it)"
    return None


def count_credentials(path: str) -> int:
    """Distinct credential-bearing lines in the file at ``path`` (never follows a link).

    Files over 1 MiB, binary files and formats that are binary by design are
    judged by name only: 1 when the name is a credential name, else 0. An
    unreadable or non-regular file counts 0.
    """
    name_only = 1 if is_credential_path(path) else 0
    if path.endswith(_BINARY_BY_NAME):
        return name_only
    data = _read_bounded(path)
    if data is None:
        return name_only
    if not data:
        return 0
    if b"\x00" in data[:_SNIFF_BYTES]:
        return name_only
    return count_credential_lines(data.decode("utf-8", errors="replace").splitlines(),
                                  shapes_only=is_example_file(path), source=is_source_file(path))


def count_credential_lines(lines, *, shapes_only: bool = False, source: bool = False) -> int:
    """Distinct lines among ``lines`` that carry a credential."""
    seen: set[int] = set()
    for line in lines:
        key = hash(line.strip())
        if key not in seen and line_is_credential(line, shapes_only=shapes_only, source=source):
            seen.add(key)
    return len(seen)


def _read_bounded(path: str) -> bytes | None:
    """The file's bytes, b"" when it cannot be read (or is not a regular file: never waited on,
    never followed), None when too large to scan."""
    data = read_regular(path, MAX_SCAN_BYTES + 1)
    if data is None:
        return b""
    return None if len(data) > MAX_SCAN_BYTES else data
