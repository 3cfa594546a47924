"""What a trace may propose, checked with the engine, and the proposal as TOML.

* ``left_out_reason``: files new every run (logs, timestamped names, lock and
  temporary files, anything changed while the command ran) are never proposed.
* ``check_directory``: a directory is proposed only after it was enumerated; the
  credential files (``inventory.secrets``, the one classifier) and the files a deny
  rule covers become ``excludes`` of the grant, and ``CREDENTIAL_EXCLUDES`` keeps
  out the ones created there later.
* ``validate``: every grant is checked with the engine (``core.policy.Policy``) over
  the session's rules *plus the proposal*: a path the engine denies now by a rule,
  or a credential name, must stay denied. A grant that would make one readable is
  withdrawn and listed under ``refused`` with the reason. ``--enforced`` runs it
  before every round, ``--write`` before it writes.
* ``rules``/``mounts``/``snippet``: the proposal as data and as TOML rendered by
  tomlkit; the command line in its comment is escaped (no newline can end a comment).
"""

from __future__ import annotations

import fnmatch
import os
import re
from dataclasses import dataclass, field, replace

from lsp_bridge.trace.model import Grant, TraceResult, mounts, rules, snippet, stable_id

# Credential names kept out of every directory grant (gitignore dialect: any depth).
CREDENTIAL_EXCLUDES = (".env", ".env.*", "*.env", ".envrc", ".npmrc", ".pypirc", ".netrc", ".git-credentials",
                       ".pgpass", "*.pem", "*.key", "*.p12", "*.pfx", "id_*", "*secret*", "*credentials*",
                       "*.tfvars", "*.tfstate", ".vault-token", ".htpasswd")
SKIPPED_DIRS = ("node_modules", ".git")  # never walked, never granted inside a workspace package
DIR_LIMIT = 20000  # a directory with more entries is not proposed whole (it could not be checked)
_GLOB_CHARS = re.compile(r"[*?\[\]{}\\!#]")

# ---------------------------------------------------------------- new every run

LOCK_FILES = frozenset({"yarn.lock", "Cargo.lock", "poetry.lock", "Gemfile.lock", "composer.lock", "flake.lock",
                        "Pipfile.lock", "pdm.lock", "uv.lock", "bun.lock", "bun.lockb", "package-lock.json",
                        "pnpm-lock.yaml", "go.sum", "mix.lock", "pubspec.lock", "Podfile.lock"})
_TIMESTAMP = re.compile(r"(?:19|20)\d\d[-_]?[01]\d[-_]?[0-3]\d[T_ -]?[0-2]\d[-_:]?[0-5]\d|\b1[5-9]\d{8,11}\b")


def left_out_reason(path: str, started: float | None = None) -> str | None:
    """Why ``path`` is new every run (so granting it by name is useless next time), or None."""
    name = os.path.basename(path)
    parts = path.split("/")
    if name.endswith((".log", ".log.gz")) or "_logs" in parts[:-1]:
        return "log file (new every run)"
    if _TIMESTAMP.search(name):
        return "timestamped name (new every run)"
    if name not in LOCK_FILES and (fnmatch.fnmatchcase(name, "*.lock") or name.endswith((".lck", ".pid"))
                                   or name in ("LOCK", "lock", "lockfile")):
        return "lock file (new every run)"
    if name.endswith((".tmp", ".temp", ".swp", ".swx", "~", ".part")) or name.startswith(".#"):
        return "temporary file (new every run)"
    if started is not None:
        try:
            if os.lstat(path).st_mtime >= started:
                return "changed while the command ran (new every run)"
        except OSError:
            return None
    return None


def refusal(path: str, policy) -> str | None:
    """Why ``path`` must never be proposed, or None."""
    from lsp_bridge.inventory.secrets import credential_reason, is_credential_path

    if is_credential_path(path):
        return "credential file (by name)"
    if os.path.isfile(path):
        why = credential_reason(path)  # the one classifier (inventory, trace, the tools)
        if why:
            return why
    if policy is not None:
        try:
            decision = policy.decide("read", path)
        except ValueError:
            return None
        if decision.decision == "deny" and decision.rule:
            return f"deny rule {decision.rule!r}: {decision.reason}"
    return None



# ---------------------------------------------------------------- directories


@dataclass
class DirCheck:
    files: int = 0
    bytes: int = 0
    credentials: list[str] = field(default_factory=list)  # relative paths, with the classifier's reason
    denied: list[str] = field(default_factory=list)  # relative paths a deny rule covers
    problem: str | None = None  # why the directory cannot be proposed whole

    @property
    def excludes(self) -> tuple[str, ...]:
        named = [rel for rel in dict.fromkeys(c.split(": ", 1)[0] for c in (*self.credentials, *self.denied))]
        return tuple(dict.fromkeys((*CREDENTIAL_EXCLUDES, *named)))


def check_directory(path: str, policy, *, content: bool = True, skip: tuple[str, ...] = (),
                    limit: int = DIR_LIMIT) -> DirCheck:
    """Every file below ``path`` (links not followed): credential files, denied files, size."""
    from lsp_bridge.inventory.secrets import credential_reason, is_credential_path

    check = DirCheck()
    stack = [path]
    seen = 0
    while stack:
        current = stack.pop()
        try:
            with os.scandir(current) as it:
                entries = list(it)
        except OSError as err:
            check.problem = f"cannot enumerate {current} ({err.strerror})"
            return check
        for entry in entries:
            seen += 1
            if seen > limit:
                check.problem = f"more than {limit} entries: too many to check one by one"
                return check
            rel = os.path.relpath(entry.path, path)
            try:
                if entry.is_dir(follow_symlinks=False):
                    if entry.name not in skip:
                        stack.append(entry.path)
                    continue
                size = entry.stat(follow_symlinks=False).st_size
            except OSError:
                continue
            check.files += 1
            check.bytes += size
            why = None
            if is_credential_path(entry.path):
                why = "credential file (by name)"
            elif content and entry.is_file(follow_symlinks=False):
                why = credential_reason(entry.path)
            if why:
                if _GLOB_CHARS.search(rel):
                    check.problem = f"holds a credential file whose name cannot be excluded: {rel}"
                    return check
                check.credentials.append(f"{rel}: {why}")
                continue
            if policy is not None:
                try:
                    decision = policy.decide("read", entry.path)
                except ValueError:
                    continue
                if decision.decision == "deny" and decision.rule:
                    if _GLOB_CHARS.search(rel):
                        check.problem = f"holds a denied file whose name cannot be excluded: {rel}"
                        return check
                    check.denied.append(f"{rel}: deny rule {decision.rule!r}")
    return check


def deny_excludes(policy, directory: str) -> tuple[str, ...]:
    """The read-deny globs of the rules in force, rewritten relative to ``directory``: as ``excludes``
    of a grant there, they keep the grant from matching what those rules deny, files created later
    included (a grant anchored deeper would otherwise outrank them). A glob that cannot be rewritten
    is left to ``validate``, which probes it."""
    from lsp_bridge.core.paths import fold, is_within

    if policy is None:
        return ()
    key = fold(directory)
    found: list[str] = []
    for ruleset in policy.rulesets():
        for compiled in ruleset.compiled:
            rule = compiled.rule
            if rule.read != "deny" or compiled.exact:
                continue
            anchor = compiled.anchor
            if is_within(key, anchor):  # the rule sits above (or on) the directory
                rel = os.path.relpath(key, anchor) if key != anchor else ""
                for pattern in rule.includes or ("**",):
                    pattern = pattern.lstrip("/")
                    if pattern.startswith("**/") or pattern == "**":
                        found.append(pattern)
                    elif rel and pattern.startswith(rel + "/"):
                        found.append(pattern[len(rel) + 1:])
                    elif not rel:
                        found.append(pattern)
            elif is_within(anchor, key):  # the rule sits inside the directory
                rel = os.path.relpath(anchor, key)
                found += [f"{rel}/{p.lstrip('/')}" for p in rule.includes] if rule.includes else [rel]
    return tuple(dict.fromkeys(p for p in found if p and p != "**"))


def _instance(pattern: str) -> str:
    """A path a glob matches (``**/private/**`` -> ``private/x``): a probe for ``validate``."""
    text = pattern.lstrip("/")
    text = re.sub(r"\{([^{},]*)(?:,[^{}]*)?\}", r"\1", text)
    text = re.sub(r"\[!?\^?([^\]])[^\]]*\]", r"\1", text)
    text = text.replace("**/", "").replace("/**", "/x").replace("**", "x").replace("*", "x").replace("?", "x")
    return text.rstrip("/") or "x"


# ---------------------------------------------------------------- the engine's check


def trial_policy(session, result: TraceResult):
    """The engine over the session's configurations with the proposal added to the user layer."""
    from lsp_bridge.core.config_check import parse_text
    from lsp_bridge.core.policy import Policy

    parsed = parse_text(snippet(result), result.user_file or "/proposal.toml", source="user", base_dir=None)
    if parsed.layer is None:
        raise ValueError("the proposal is not a valid configuration: "
                         + "; ".join(d.message for d in parsed.diagnostics[:3]))
    extra = parsed.layer.paths
    configs = [(root, replace(config, paths=(*config.paths, *extra))) for root, config in session.configs()]
    return Policy(session.scope, configs)


def _probes(grant: Grant) -> list[str]:
    """Where a grant could outrank a deny: the path itself, the files below it, credential names in it."""
    if grant.kind != "directory":
        return [grant.path]
    found: list[str] = [grant.path]
    for name in (".env", "id_rsa", ".npmrc", "server.pem", "credentials.json"):
        found += [os.path.join(grant.path, name), os.path.join(grant.path, "sub", name)]
    for pattern in (*grant.denies, *grant.excludes):
        found.append(os.path.join(grant.path, _instance(pattern)))
    count = 0
    for top, dirs, files in os.walk(grant.path):
        dirs[:] = [d for d in dirs if d not in SKIPPED_DIRS]
        for name in files:
            found.append(os.path.join(top, name))
            count += 1
            if count >= DIR_LIMIT:
                return found
    return found


def validate(session, result: TraceResult) -> None:
    """Withdraw every grant that would let the engine allow what it denies now by a rule (or a credential
    name); repeated until the proposal is stable. Fails closed: an engine error withdraws everything."""
    from lsp_bridge.inventory.secrets import is_credential_path

    base = session.policy
    for _ in range(len(result.grants) + 1):
        if not result.grants:
            return
        try:
            trial = trial_policy(session, result)
        except ValueError as err:
            _withdraw_all(result, f"the engine could not check the proposal ({err})")
            return
        bad: dict[int, str] = {}
        for index, grant in enumerate(result.grants):
            for probe in _probes(grant):
                try:
                    before = base.decide("read", probe)
                    after = trial.decide("read", probe)
                except ValueError:
                    continue
                ruled = before.decision == "deny" and before.rule is not None
                secret = probe != grant.path and is_credential_path(probe)
                if (ruled or secret) and after.decision != "deny":
                    what = f"deny rule {before.rule!r}" if ruled else "the credential name"
                    bad[index] = (f"withdrawn: with it the engine would allow {probe} "
                                  f"({after.reason}), which {what} keeps out now")
                    break
        if not bad:
            return
        for index in sorted(bad, reverse=True):
            grant = result.grants.pop(index)
            result.refused.append({"path": grant.path, "reason": bad[index]})


def _withdraw_all(result: TraceResult, reason: str) -> None:
    for grant in result.grants:
        result.refused.append({"path": grant.path, "reason": reason})
    result.grants = []


# ---------------------------------------------------------------- writing


def write(session, result: TraceResult) -> dict:
    """Merge the (validated) proposal into the user file through the one writer, ``core.grants.merge_rules``."""
    from lsp_bridge.core.config import user_config_path
    from lsp_bridge.core.grants import merge_rules

    validate(session, result)  # once more, right before writing
    target = user_config_path(session.env)
    report = merge_rules(target, rules(result), mounts(result))
    return {"user_file": target, **report.to_json()}


def from_json(session, data: dict) -> TraceResult:
    """A proposal printed by ``rootguard trace --json`` (the editor's copy), checked again from scratch:
    every grant passes ``refusal``, directories are enumerated again, then ``validate``."""
    if not isinstance(data, dict) or not isinstance(data.get("proposed"), dict):
        raise ValueError("not a `rootguard trace --json` proposal (no 'proposed' object)")
    result = TraceResult(list(session.folders), list(session.scope.union.paths), list(map(str, data.get("command", []))),
                         int(data.get("exit_code", 0)))
    result.user_file = str(data.get("user_file", ""))
    home = os.path.realpath(os.path.expanduser("~"))
    for item in data["proposed"].get("paths", []):
        if not isinstance(item, dict) or not isinstance(item.get("path"), str):
            raise ValueError("proposed.paths: every entry needs a 'path' string")
        path = item["path"]
        path = os.path.join(home, path[2:]) if path.startswith("~/") else path
        if not os.path.isabs(path):
            raise ValueError(f"proposed.paths: {path!r} is not absolute")
        path = os.path.realpath(path)
        group = str(item.get("group", "config"))
        kind = "directory" if os.path.isdir(path) else "file"
        why = refusal(path, session.policy) if kind == "file" else _directory_refusal(path, group)
        grant = Grant(stable_id(group, path), path, kind, group, int(item.get("files_read", 1) or 1))
        if kind == "directory" and why is None:
            check = check_directory(path, session.policy, content=group != "git",
                                    skip=SKIPPED_DIRS if group == "workspace" else ())
            why = f"directory not proposed whole: {check.problem}" if check.problem else None
            grant.denies = deny_excludes(session.policy, path)
            grant.excludes = tuple(dict.fromkeys((*check.excludes, *grant.denies,
                                                  *(SKIPPED_DIRS if group == "workspace" else ()))))
            grant.mount = any(m.get("target") == path for m in data["proposed"].get("mounts", [])
                              if isinstance(m, dict))
        if why:
            result.refused.append({"path": path, "reason": why})
        else:
            result.grants.append(grant)
    validate(session, result)
    return result


def _directory_refusal(path: str, group: str) -> str | None:
    """A directory in a proposal only where a trace proposes one: a package store, git's own state, a
    workspace package; never the file system root or the home folder (``--apply`` takes a person's JSON)."""
    home = os.path.realpath(os.path.expanduser("~"))
    if path in ("/", home) or os.path.dirname(path) == "/":
        return "a directory this broad is never proposed"
    parts = path.split("/")
    allowed = {"store": any(m in path for m in ("/node_modules/.pnpm", "/.yarn/cache", "/.pnpm-store")),
               "git": ".git" in parts or "worktrees" in parts,
               "workspace": any(os.path.isfile(os.path.join(path, m))
                                for m in ("package.json", "pyproject.toml", "Cargo.toml", "go.mod"))}
    if not allowed.get(group, False):
        return f"a {group} grant names files, not a directory"
    return None


def apply_text(session, text: str) -> dict:
    """``rootguard trace --apply``: the JSON of a proposal, checked again from scratch, then written."""
    import json

    result = from_json(session, json.loads(text))
    return {"written": write(session, result), "refused": result.refused, "proposed": len(result.grants)}


def written_text(written: dict | None) -> str:
    """What ``write`` did, in one line (empty when nothing was to be written)."""
    if not written:
        return ""
    if not written["changed"]:
        return f"{written['user_file']}: unchanged (every proposed rule and mount is already there)"
    return (f"{written['user_file']}: added {len(written['added'])} rule(s) ({', '.join(written['added'])}), "
            f"reused {len(written['reused'])}, {len(written['mounts_added'])} mount(s) added")
