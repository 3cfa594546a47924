"""Toolchain mounts are rules of the one engine (source ``toolchain``), through the real commands.

Issue 30 class 1: a ``tsconfig.json`` the agent writes inside ``rootguard run`` used to set the next
session's boundary (its ``extends`` was followed to any file and bind-mounted). Here every such
attack runs through ``rootguard run`` with real bubblewrap, and once without the protection (bare
bubblewrap binding what the old exception bound), where it succeeds.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.conftest import make_repo

BWRAP = shutil.which("bwrap")
needs_bwrap = pytest.mark.skipif(BWRAP is None or sys.platform != "linux", reason="needs bubblewrap on Linux")
pytestmark = pytest.mark.timeout(180)

DENY_ENV = ('version = 2\n[[paths]]\nid = "no-env"\npath = "."\nincludes = ["**/.env"]\n'
            'policies = { read = "deny", write = "deny" }\n')


def cli(*args: str, cwd: Path | str | None = None, env: dict | None = None, timeout: int = 60):
    return subprocess.run([sys.executable, "-m", "lsp_bridge.cli.main", *args], capture_output=True, text=True,
                          cwd=cwd, env={**os.environ, **(env or {})}, timeout=timeout)


@pytest.fixture
def mono(tmp_path: Path) -> Path:
    """``S/mono``: a git repository whose ``.rootguard.toml`` denies ``**/.env``, with a narrow root
    ``packages/app`` and a shared ``tsconfig.base.json`` at the top."""
    repo = make_repo(tmp_path.resolve() / "S" / "mono", {
        ".rootguard.toml": DENY_ENV,
        ".env": "DATABASE_URL=postgres://secret\n",
        "tsconfig.base.json": '{"compilerOptions": {"strict": true}}\n',
        "tsconfig.shared.json": '{"compilerOptions": {"noEmit": true}}\n',
        "packages/app/src/index.ts": "export const x = 1;\n",
    })
    return repo


def app(repo: Path) -> str:
    return str(repo / "packages" / "app")


@needs_bwrap
def test_a_tsconfig_the_agent_writes_cannot_mount_env_or_git_config_into_the_next_run(mono: Path):
    root = app(mono)
    write = ('echo \'{"extends": ["../../.env", "../../.git/config"]}\' > tsconfig.json')
    first = cli("run", "--root", root, "--", "sh", "-c", write, cwd=root)
    assert first.returncode == 0, first.stderr
    assert "../../.env" in (mono / "packages/app/tsconfig.json").read_text()

    nxt = cli("run", "--root", root, "--", "sh", "-c", "cat ../../.env; cat ../../.git/config", cwd=root)
    assert "DATABASE_URL" not in nxt.stdout and "repositoryformatversion" not in nxt.stdout
    assert nxt.returncode != 0
    assert f"toolchain path {mono}/.env refused" in nxt.stderr and "credential" in nxt.stderr
    assert f"toolchain path {mono}/.git/config refused" in nxt.stderr and ".git directory" in nxt.stderr
    printed = cli("run", "--root", root, "--print", "--", "true", cwd=root)
    assert printed.returncode == 0 and f"{mono}/.env refused" in printed.stderr
    assert f"{mono}/.env" not in printed.stdout.replace(f"{mono}/.env.", "")

    # Without the protection: the old exception bound the file the extends named, and then it is readable.
    bare = subprocess.run([BWRAP, "--ro-bind", "/", "/", "--tmpfs", str(mono.parent), "--bind", root, root,
                           "--ro-bind", str(mono / ".env"), str(mono / ".env"), "--chdir", root,
                           "cat", "../../.env"], capture_output=True, text=True, timeout=30)
    assert "DATABASE_URL" in bare.stdout, bare.stderr


def test_kernel_interfaces_and_devices_in_extends_are_refused_without_reading_them(mono: Path):
    (mono / "dev.json").symlink_to("/dev/zero")
    (mono / "fifo.json").parent.mkdir(exist_ok=True)
    os.mkfifo(mono / "fifo.json")
    (mono / "packages/app/tsconfig.json").write_text(json.dumps(
        {"extends": ["/proc/kmsg", "/dev/zero", "/sys/kernel/notes", "../../dev.json", "../../fifo.json"]}))
    started = time.monotonic()
    shown = cli("roots", "--json", app(mono), timeout=30)
    assert shown.returncode == 0, shown.stderr
    assert time.monotonic() - started < 30
    toolchain = json.loads(shown.stdout)["toolchain"]
    refused = {r["path"]: r["reason"] for r in toolchain["refused"]}
    assert "kernel interface or a device" in refused["/proc/kmsg"]
    assert "kernel interface or a device" in refused["/dev/zero"]
    assert "kernel interface or a device" in refused["/sys/kernel/notes"]
    assert "kernel interface or a device" in refused["/dev/zero"]  # the link in the repository, judged by its target
    assert "not a regular file" in refused[f"{mono}/fifo.json"]
    assert all(r["cause"] == f"{mono}/packages/app/tsconfig.json" for r in toolchain["refused"])
    assert toolchain["rules"] == []
    # Without the protection: a plain open of the FIFO the repository ships waits for a writer.
    with pytest.raises(subprocess.TimeoutExpired):
        subprocess.run(["cat", str(mono / "fifo.json")], capture_output=True, timeout=2)


def test_a_json_file_that_is_not_a_tsconfig_is_refused(mono: Path):
    (mono / "deploy.json").write_text('{"token": "ghp_abcdef", "registry": "x"}\n')
    (mono / "packages/app/tsconfig.json").write_text('{"extends": "../../deploy.json"}')
    toolchain = json.loads(cli("roots", "--json", app(mono)).stdout)["toolchain"]
    [refusal] = toolchain["refused"]
    assert refusal["path"] == f"{mono}/deploy.json" and "keys no tsconfig has ('registry', 'token')" in refusal["reason"]


def test_a_huge_extends_array_is_refused_whole_and_quickly(mono: Path):
    entries = [f"../../x{i}.json" for i in range(40_000)] + ["../../tsconfig.base.json"]
    (mono / "packages/app/tsconfig.json").write_text(json.dumps({"extends": entries}))
    for n in range(3):
        (mono / f"x{n}.json").write_text("{}")
    started = time.monotonic()
    shown = cli("roots", "--json", app(mono), timeout=60)
    elapsed = time.monotonic() - started
    assert shown.returncode == 0, shown.stderr
    assert elapsed < 10, f"roots took {elapsed:.1f} s"
    data = json.loads(shown.stdout)
    assert data["toolchain"]["rules"] == []  # none of them is followed, not even the real one at the end
    [warning] = [w for w in data["warnings"] if w["code"] == "tsconfig-extends-too-many"]
    assert "40001 entries, more than 64: none of them is followed" in warning["message"]
    from lsp_bridge.inventory.tsconfig import MAX_EXTENDS_ENTRIES, extends_chain

    diagnostics: list = []
    chain = extends_chain(app(mono), diagnostics)
    assert [c.real for c in chain] == [f"{mono}/packages/app/tsconfig.json"]
    assert any(d.code == "tsconfig-extends-too-many" and f"40001 entries, more than {MAX_EXTENDS_ENTRIES}" in d.message
               for d in diagnostics)


def test_roots_shows_toolchain_rules_in_text_and_json(mono: Path):
    (mono / "packages/app/tsconfig.json").write_text('{"extends": "../../tsconfig.base.json"}')
    data = json.loads(cli("roots", "--json", app(mono)).stdout)
    [rule] = data["toolchain"]["rules"]
    assert rule["path"] == f"{mono}/tsconfig.base.json" and rule["source"] == "toolchain"
    assert rule["kind"] == "file" and rule["decision"] == "allow" and rule["decided_by"] == "toolchain"
    assert rule["cause"] == f"{mono}/packages/app/tsconfig.json"
    text = cli("roots", app(mono)).stdout
    assert "Toolchain rules (source toolchain" in text
    assert f"allow  {mono}/tsconfig.base.json" in text


@needs_bwrap
def test_a_new_toolchain_mount_asked_for_by_an_agent_writable_file_is_held_until_approved(mono: Path):
    root = app(mono)
    read_base = ["sh", "-c", "cat ../../tsconfig.base.json"]
    first = cli("run", "--root", root, "--", *read_base, cwd=root)  # first use: what is found is approved
    assert first.returncode != 0  # nothing extends it yet: not mounted
    # The agent (inside the sandbox) makes the root's tsconfig extend a file above the root.
    wrote = cli("run", "--root", root, "--", "sh", "-c",
                "echo '{\"extends\": \"../../tsconfig.base.json\"}' > tsconfig.json", cwd=root)
    assert wrote.returncode == 0, wrote.stderr

    held_run = cli("run", "--root", root, "--", *read_base, cwd=root)
    assert held_run.returncode != 0 and "strict" not in held_run.stdout
    assert f"toolchain mount {mono}/tsconfig.base.json held" in held_run.stderr
    held = cli("config", "held", "--json", root)
    assert held.returncode == 1
    [item] = json.loads(held.stdout)["held"]
    assert f"{mono}/tsconfig.base.json" in " ".join(item["reasons"]) and f"+{mono}/tsconfig.base.json" in item["diff"]
    shown = json.loads(cli("roots", "--json", root).stdout)["toolchain"]
    assert [m["path"] for m in shown["held"]] == [f"{mono}/tsconfig.base.json"] and shown["rules"] == []
    # Without the protection the file is there to read.
    assert "strict" in subprocess.run(read_base, cwd=root, capture_output=True, text=True, timeout=30).stdout

    approved = cli("config", "approve", "--yes", root)
    assert approved.returncode == 0, approved.stderr
    assert cli("config", "held", root).returncode == 0
    after = cli("run", "--root", root, "--", *read_base, cwd=root)
    assert after.returncode == 0 and "strict" in after.stdout, after.stderr

    # A narrowing applies at once (and is recorded): the extends goes, the mount goes, nothing is held.
    (mono / "packages/app/tsconfig.json").write_text("{}")
    gone = cli("run", "--root", root, "--", *read_base, cwd=root)
    assert gone.returncode != 0 and "held" not in gone.stderr
    # ... so the same extends written again is new again, and held again.
    (mono / "packages/app/tsconfig.json").write_text('{"extends": "../../tsconfig.base.json"}')
    assert cli("config", "held", root).returncode == 1


def test_roots_and_mounts_never_suggest_a_held_toolchain_mount(mono: Path):
    root = app(mono)
    base = f"{mono}/tsconfig.base.json"
    assert cli("roots", root).returncode == 0  # first use: what is found (nothing above the root) is approved
    # The agent makes the root's tsconfig extend a file above the root: held until the person approves it.
    (mono / "packages/app/tsconfig.json").write_text('{"extends": "../../tsconfig.base.json"}')
    data = json.loads(cli("roots", "--json", root).stdout)
    assert [m["path"] for m in data["toolchain"]["held"]] == [base]
    mounts = data["mounts"]
    # before: suggested as `tsconfig.base.json -> …:ro` (and in docker_args), which `run` does not mount
    assert base not in [s["source"] for s in mounts["suggested"]] and base not in " ".join(mounts["docker_args"])
    assert base not in mounts["single_files"] and [m["path"] for m in mounts["held"]] == [base]
    text = cli("roots", root).stdout
    suggested = text[text.index("Suggested narrow mount set"):]
    assert f"{base} ->" not in suggested and f"held, not suggested: {base}" in suggested, text
    walked = json.loads(cli("mounts", "--json", root).stdout)
    assert base not in [s["source"] for s in walked["suggested"]] and [m["path"] for m in walked["held"]] == [base]
    assert f"{base}:" not in cli("mounts", "--docker", root).stdout  # as before: no -v for it
    # Approved: suggested like any toolchain mount.
    assert cli("config", "approve", "--yes", root).returncode == 0
    mounts = json.loads(cli("roots", "--json", root).stdout)["mounts"]
    assert base in [s["source"] for s in mounts["suggested"]] and mounts["held"] == []


async def test_the_language_servers_status_never_suggests_a_held_toolchain_mount(mono: Path):
    from tests.test_lsp import Window, settled

    root = app(mono)
    base = f"{mono}/tsconfig.base.json"
    assert cli("roots", root).returncode == 0  # first use: recorded
    (mono / "packages/app/tsconfig.json").write_text('{"extends": "../../tsconfig.base.json"}')  # the agent's
    async with Window() as window:
        await window.start([root])
        mounts = (await settled(window))["mounts"]
        # before: the status suggested it (and its docker_args) though `run` does not mount it
        assert base not in [s["source"] for s in mounts["suggested"]] and base not in " ".join(mounts["docker_args"])
        assert [m["path"] for m in mounts["held"]] == [base]
    assert cli("config", "held", root).returncode == 1  # the status recorded nothing: still held


def test_a_mount_only_a_file_outside_every_root_asks_for_applies_at_once(mono: Path):
    root = app(mono)
    (mono / "packages/app/tsconfig.json").write_text('{"extends": "../../tsconfig.base.json"}')
    assert cli("roots", root).returncode == 0  # first use: recorded
    # The person (outside the root) makes the shared base extend another file: not the agent's doing.
    (mono / "tsconfig.base.json").write_text('{"extends": "./tsconfig.shared.json"}')
    data = json.loads(cli("roots", "--json", root).stdout)["toolchain"]
    assert {r["path"] for r in data["rules"]} == {f"{mono}/tsconfig.base.json", f"{mono}/tsconfig.shared.json"}
    assert data["held"] == []


def _pnpm_app(mono: Path) -> Path:
    """A pnpm layout: the store at the repository's top, the root's dependency a relative link into it."""
    package = mono / "node_modules/.pnpm/zod@3.0.0/node_modules/zod"
    package.mkdir(parents=True)
    (package / "package.json").write_text('{"name": "zod", "version": "3.0.0"}\n')
    modules = mono / "packages/app/node_modules"
    modules.mkdir(parents=True)
    (modules / "zod").symlink_to("../../../node_modules/.pnpm/zod@3.0.0/node_modules/zod")
    return package


@needs_bwrap
@pytest.mark.parametrize("verdict", ["request", "deny"])
def test_the_pnpm_store_is_mounted_only_where_the_engine_allows_it(mono: Path, tmp_path: Path, verdict: str):
    root = app(mono)
    _pnpm_app(mono)
    store = f"{mono}/node_modules/.pnpm"
    read = ["cat", "node_modules/zod/package.json"]
    allowed = cli("run", "--root", root, "--", *read, cwd=root)
    assert allowed.returncode == 0 and '"zod"' in allowed.stdout, allowed.stderr
    rules = json.loads(cli("roots", "--json", root).stdout)["toolchain"]["rules"]
    assert {"path": store, "kind": "store", "source": "toolchain", "decision": "allow"}.items() <= next(
        r for r in rules if r["path"] == store).items()
    inner = f"{store}/zod@3.0.0/node_modules/zod/package.json"
    checked = cli("check", "--json", "--toolchain", "--root", root, "--op", "read", inner)
    assert checked.returncode == 0 and json.loads(checked.stdout)["rule_source"] == "toolchain", checked.stdout
    plain = cli("check", "--root", root, "--op", "read", inner)  # without the toolchain rules: outside every root
    assert plain.returncode == 1

    user = tmp_path / "user.toml"
    user.write_text(f'version = 2\n[[paths]]\nid = "store"\npath = "{store}"\npolicies = {{ read = "{verdict}" }}\n')
    env = {"ROOTGUARD_CONFIG": str(user)}
    refused = cli("run", "--root", root, "--", *read, cwd=root, env=env)
    assert refused.returncode != 0 and '"zod"' not in refused.stdout
    if verdict == "request":
        assert f"hidden (needs approval, which a sandbox cannot ask for): {store}" in refused.stderr
    else:
        assert f"toolchain mount {store} left out: the engine says deny (rule 'store' (user" in refused.stderr
    [rule] = [r for r in json.loads(cli("roots", "--json", root, env=env).stdout)["toolchain"]["rules"]
              if r["path"] == store]
    assert rule["decision"] == verdict and rule["decided_by"] == "user" and rule["rule"] == "store"
    checked = cli("check", "--json", "--toolchain", "--root", root, "--op", "read", inner, env=env)
    assert checked.returncode == {"request": 3, "deny": 1}[verdict]
    assert json.loads(checked.stdout)["rule"] == "store"  # the same engine, the same answer as run
    printed = cli("run", "--root", root, "--print", "--", "true", cwd=root, env=env).stdout
    assert f"--ro-bind {store} {store}" not in printed.replace("\\\n", " ").replace("  ", " ")


def test_settle_holds_only_new_mounts_an_agent_writable_file_asked_for():
    from lsp_bridge.core.toolchain import ToolchainMount, settle

    inside = "/w/app/tsconfig.json"
    old = ToolchainMount("/w/tsconfig.base.json", "file", "r", inside)
    new_agent = ToolchainMount("/w/other.json", "file", "r", inside)
    new_person = ToolchainMount("/w/shared.json", "file", "r", "/w/tsconfig.base.json")
    by_place = ToolchainMount("/w/node_modules", "modules", "r", None)
    writable = lambda path: path.startswith("/w/app/")  # noqa: E731
    first = settle([old, new_agent], None, writable)  # never recorded: what is there now is approved
    assert first.held == () and first.approved == ("/w/other.json", "/w/tsconfig.base.json")
    later = settle([old, new_agent, new_person, by_place], ["/w/tsconfig.base.json", "/w/gone.json"], writable)
    assert later.held == (new_agent,)
    assert later.in_force == (old, new_person, by_place)
    assert "/w/gone.json" not in later.approved  # a narrowing is recorded at once


def test_the_trust_store_keeps_the_toolchain_set_when_a_config_record_does_not_carry_one(tmp_path: Path):
    from lsp_bridge.core.config_trust import ConfigFileText, Recorded, TrustStore

    store = TrustStore(str(tmp_path / "approved"))
    files = (ConfigFileText("project", "/w/.rootguard.toml", "version = 2\n"),)
    store.record("/w/app", Recorded(files, "/w", ("/w/tsconfig.base.json",)))
    store.record("/w/app", Recorded(files + (ConfigFileText("user", "/u/config.toml", "version = 2\n"),), "/w"))
    kept = store.recorded("/w/app")
    assert kept is not None and kept.toolchain == ("/w/tsconfig.base.json",) and len(kept.files) == 2
    store.record("/w/app", Recorded(files, "/w", ()))  # an empty set is a set: recorded as such
    assert store.recorded("/w/app").toolchain == ()


def test_a_toolchain_rule_fills_a_gap_only():
    """A configured rule that matches the store decides it, whatever the toolchain rule says."""
    from lsp_bridge.core.decision import Target
    from lsp_bridge.core.policy import Policy
    from lsp_bridge.core.scope import build_scope
    from lsp_bridge.core.settings import Config, PathRule
    from lsp_bridge.core.toolchain import ToolchainMount

    store = ToolchainMount("/w/node_modules/.pnpm", "store", "r", "/w/app/node_modules/zod")
    user = PathRule(id="repo", path="/w", anchor="/w", read="request", source="user")
    for rules, expected in (((), "deny"), ((store.rule(),), "allow"), ((user, store.rule()), "request")):
        config = Config(roots=("/w/app",), roots_source="user", paths=rules)
        policy = Policy(build_scope(("/w/app",), config), [("/w/app", config)])
        decision = policy.decide_target("read", Target("/w/node_modules/.pnpm/zod@3/index.js"))
        assert decision.decision == expected, (rules, decision)


@needs_bwrap
@pytest.mark.parametrize("spelling", ["{root}/", "{root}/.", "/{root}", "link"])
def test_a_held_toolchain_mount_stays_held_however_the_root_is_spelled(mono: Path, tmp_path: Path, spelling: str):
    root = app(mono)
    read_base = ["sh", "-c", "cat ../../tsconfig.base.json"]
    assert cli("run", "--root", root, "--", *read_base, cwd=root).returncode != 0  # first use: approved
    (mono / "packages/app/tsconfig.json").write_text('{"extends": "../../tsconfig.base.json"}')
    if spelling == "link":
        (tmp_path / "app-link").symlink_to(root, target_is_directory=True)
        other = str(tmp_path / "app-link")
    else:
        other = spelling.format(root=root)
    shown = cli("check", "--json", "--toolchain", "--root", other, "--op", "read", f"{mono}/tsconfig.base.json")
    assert json.loads(shown.stdout)["decision"] != "allow" and "held" in shown.stderr, shown.stderr
    held_run = cli("run", "--root", other, "--", *read_base, cwd=root)
    assert "strict" not in held_run.stdout and f"toolchain mount {mono}/tsconfig.base.json held" in held_run.stderr
    assert cli("config", "held", other).returncode == 1


def test_the_trust_store_finds_a_record_under_any_spelling_of_its_root(tmp_path: Path):
    from lsp_bridge.core.config_trust import ConfigFileText, Recorded, TrustStore

    root = tmp_path.resolve() / "w" / "app"
    root.mkdir(parents=True)
    (tmp_path / "link").symlink_to(root, target_is_directory=True)
    store = TrustStore(str(tmp_path / "approved"))
    store.record(str(root), Recorded((ConfigFileText("project", f"{root}/.rootguard.toml", "version = 2\n"),)))
    for spelling in (f"{root}/", f"{root}/.", f"/{root}", f"{root}/../app", str(tmp_path / "link")):
        assert store.path_for(spelling) == store.path_for(str(root))
        kept = store.recorded(spelling)
        assert kept is not None and kept.files[0].text == "version = 2\n"
