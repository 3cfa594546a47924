"""``rootguard trace`` proposals through the real command (issue 30 class 5, issue 32 points 4 and 5).

A pnpm-like monorepo reproducing create-t3-turbo's ``packages/api`` case: ``api`` imports
``@acme/db`` and ``@acme/auth`` (workspace links in ``node_modules/@acme``), ``auth``'s source
names ``clientSecret: options.discordClientSecret`` (not a credential), ``db`` holds a ``.env``
(a credential), and the repository's ``.rootguard.toml`` denies ``**/.env``. Each attack is
also run once without the protection, where it succeeds.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
ROOTGUARD = [sys.executable, "-m", "lsp_bridge.cli.main"]
NEEDS = pytest.mark.skipif(not (shutil.which("strace") and shutil.which("bwrap") and shutil.which("node")),
                           reason="strace, bubblewrap and node are needed (scripts/bootstrap.sh --test installs them)")
pytestmark = [NEEDS, pytest.mark.timeout(600)] if hasattr(pytest.mark, "timeout") else [NEEDS]

TYPECHECK_JS = r"""// what tsc does for `import ... from "@acme/db"`: resolve the workspace package, read its sources
const fs = require("fs"), path = require("path");
const src = fs.readFileSync(path.join(__dirname, "src/index.ts"), "utf8");
let errors = 0;
for (const m of src.matchAll(/from "(@acme\/[a-z]+)"/g)) {
  const dir = path.join(__dirname, "node_modules", m[1]);
  try {
    const pkg = JSON.parse(fs.readFileSync(path.join(dir, "package.json"), "utf8"));
    fs.readFileSync(path.join(dir, pkg.main), "utf8");
  } catch (e) { console.error(`src/index.ts: error TS2307: Cannot find module '${m[1]}'`); errors++; }
}
console.log(`Found ${errors} errors.`);
process.exit(errors ? 2 : 0);
"""

AUTH_TS = """export function authConfig(options: { discordClientId: string; discordClientSecret: string; authSecret: string }) {
  return {
    secret: options.authSecret,
    providers: [{ clientId: options.discordClientId, clientSecret: options.discordClientSecret }],
    clientSecret: options.discordClientSecret,
    password: z.string(),
  };
}
"""
DB_ENV = "DATABASE_URL=postgres://admin:S3cretPassw0rd@db.example.com/app\n"
DENY_ENV = ('version = 2\n[[paths]]\nid = "no-env"\npath = "."\nincludes = ["**/.env"]\n'
            'policies = { read = "deny", write = "deny" }\n')


def env_for(home: Path) -> dict[str, str]:
    return dict(os.environ, PYTHONPATH=str(REPO))


def rg(*args: str, cwd: Path, home: Path, stdin: str | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([*ROOTGUARD, *args], capture_output=True, text=True, timeout=300, cwd=str(cwd),
                          env=env_for(home), input=stdin)


def package(base: Path, name: str, files: dict[str, str]) -> Path:
    folder = base / "packages" / name
    (folder / "src").mkdir(parents=True)
    (folder / "package.json").write_text(json.dumps({"name": f"@acme/{name}", "main": "src/index.ts"}))
    for rel, text in files.items():
        (folder / rel).parent.mkdir(parents=True, exist_ok=True)
        (folder / rel).write_text(text)
    return folder


@pytest.fixture
def t3(tmp_path):
    mono = tmp_path / "mono"
    mono.mkdir()
    subprocess.run(["git", "init", "-q", str(mono)], check=True, timeout=30)
    (mono / "pnpm-workspace.yaml").write_text('packages:\n  - "packages/*"\n')
    (mono / ".rootguard.toml").write_text(DENY_ENV)
    db = package(mono, "db", {"src/index.ts": "export const db = { query: () => [] };\n", ".env": DB_ENV})
    auth = package(mono, "auth", {"src/index.ts": AUTH_TS})
    validators = package(mono, "validators", {"src/index.ts": "export const ok = true;\n"})
    api = package(mono, "api", {"src/index.ts": 'import { db } from "@acme/db";\nimport { authConfig } from '
                                                '"@acme/auth";\nexport const api = { db, authConfig };\n',
                                "typecheck.js": TYPECHECK_JS})
    (validators / "typecheck.js").write_text(TYPECHECK_JS)
    (validators / "src" / "index.ts").write_text('import { db } from "@acme/db";\nexport const v = db;\n')
    for pkg in (api, validators):
        (pkg / "node_modules" / "@acme").mkdir(parents=True)
        for dep in ("db", "auth"):
            (pkg / "node_modules" / "@acme" / dep).symlink_to(f"../../../{dep}")
    return {"mono": mono, "api": api, "db": db, "auth": auth, "validators": validators}


def user_file(home: Path) -> Path:
    return home / ".config" / "rootguard" / "config.toml"


def test_t3_api_one_trace_and_apply_makes_the_typecheck_pass_and_env_stays_out(t3, isolated_user):
    api, db, auth = t3["api"], t3["db"], t3["auth"]
    before = rg("run", "--root", str(api), "--", "node", "typecheck.js", cwd=api, home=isolated_user)
    assert before.returncode == 2 and "Cannot find module '@acme/db'" in before.stderr  # the host passes, run not

    done = rg("trace", "--json", "--write", "--root", str(api), "--", "node", "typecheck.js", cwd=api,
              home=isolated_user)
    assert done.returncode == 0, done.stderr
    data = json.loads(done.stdout)
    offered = {p["path"]: p for p in data["packages"]}
    assert set(offered) == {str(db), str(auth)}
    # priced: the reviewer sees each package's inventory cost, the credential kept out named
    assert offered[str(db)]["files"] == 3 and [c.split(":")[0] for c in offered[str(db)]["credentials"]] == [".env"]
    assert offered[str(auth)]["credentials"] == []
    assert f"first-party package {db} offered read-only: 3 files" in data["snippet"]
    # one classifier: auth's source naming clientSecret is not a credential file, nowhere refused
    assert not any(r["path"].startswith(str(auth)) for r in data["refused"])
    grants = {r["path"]: r for r in data["proposed"]["paths"]}
    assert grants[str(db)]["kind"] == "directory" and ".env" in grants[str(db)]["excludes"]
    assert data["written"]["added"] and data["written"]["changed"]

    after = rg("run", "--root", str(api), "--", "sh", "-c", "node typecheck.js && ! cat ../db/.env", cwd=api,
               home=isolated_user)
    assert after.returncode == 0, after.stderr
    assert "Found 0 errors." in after.stdout and "S3cretPassw0rd" not in after.stdout + after.stderr

    # the attack the excludes stop: the same package grant without them outranks the project's **/.env deny
    text = user_file(isolated_user).read_text()
    bare = tomllib.loads(text)
    bare_text = "version = 2\n" + "".join(
        f'[[paths]]\nid = "{r["id"]}"\npath = "{r["path"]}"\npolicies = {{ read = "allow", write = "deny" }}\n'
        for r in bare["paths"])
    user_file(isolated_user).write_text(bare_text)
    leak = rg("run", "--root", str(api), "--", "cat", "../db/.env", cwd=api, home=isolated_user)
    assert leak.returncode == 0 and "S3cretPassw0rd" in leak.stdout
    user_file(isolated_user).write_text(text)


def test_applying_twice_changes_nothing_and_two_packages_merge_into_a_valid_file(t3, isolated_user):
    api, validators = t3["api"], t3["validators"]
    target = user_file(isolated_user)
    target.parent.mkdir(parents=True)
    target.write_text("# my own notes, kept\nversion = 2\n\n[[paths]]  # mine\nid = \"mine\"\n"
                      f"path = \"{t3['auth']}\"\npolicies = {{ read = \"deny\" }}\n")
    first = rg("trace", "--json", "--write", "--root", str(api), "--", "node", "typecheck.js", cwd=api,
               home=isolated_user)
    assert first.returncode == 0, first.stderr
    assert any(r["path"].startswith(str(t3["auth"])) and "deny rule 'mine'" in r["reason"]
               for r in json.loads(first.stdout)["refused"])  # the person's own deny stands
    once = target.read_bytes()
    again = rg("trace", "--json", "--write", "--root", str(api), "--", "node", "typecheck.js", cwd=api,
               home=isolated_user)
    assert json.loads(again.stdout)["written"]["changed"] is False
    assert target.read_bytes() == once  # idempotent, byte for byte

    other = rg("trace", "--json", "--write", "--root", str(validators), "--", "node", "typecheck.js",
               cwd=validators, home=isolated_user)
    assert other.returncode == 0, other.stderr
    assert json.loads(other.stdout)["written"]["reused"]  # the db package: the equal rule is reused
    text = target.read_text()
    assert text.startswith("# my own notes, kept\n") and "# mine" in text
    ids = [r["id"] for r in tomllib.loads(text)["paths"]]
    assert len(ids) == len(set(ids))
    assert sum(1 for r in tomllib.loads(text)["paths"] if r["path"] == str(t3["db"])) == 1  # reused, not repeated
    check = rg("run", "--root", str(validators), "--", "node", "typecheck.js", cwd=validators, home=isolated_user)
    assert check.returncode == 0, check.stderr  # a valid file: the next run works

    # The editor's button: the same proposal through `--apply` changes nothing more.
    data = first.stdout
    applied = rg("trace", "--json", "--root", str(api), "--apply", "-", cwd=api, home=isolated_user, stdin=data)
    assert applied.returncode == 0, applied.stderr
    assert json.loads(applied.stdout)["written"]["changed"] is False


def test_a_folder_read_densely_is_never_proposed_with_its_credential(t3, isolated_user, tmp_path):
    """Class 5: a command reading 16+ files of a folder used to get the folder proposed, .env included."""
    api, mono = t3["api"], t3["mono"]
    other = mono / "shared"  # not a package: config group, files only
    other.mkdir()
    for i in range(20):
        (other / f"f{i}.json").write_text("{}\n")
    (other / ".env").write_text("API_TOKEN=ghp_" + "A" * 36 + "\n")
    done = rg("trace", "--json", "--root", str(api), "--", "sh", "-c", "cat ../../shared/*.json ../../shared/.env",
              cwd=api, home=isolated_user)
    assert done.returncode == 0, done.stderr
    data = json.loads(done.stdout)
    kinds = {r["path"]: r["kind"] for r in data["proposed"]["paths"]}
    assert str(other) not in kinds and set(kinds.values()) == {"file"} and len(kinds) == 20
    assert {r["path"] for r in data["refused"]} == {str(other / ".env")}

    # Unprotected: a folder rule anchored there outranks the project's `**/.env` deny.
    target = user_file(isolated_user)
    target.parent.mkdir(parents=True)
    target.write_text(f'version = 2\n[[paths]]\nid = "folder"\npath = "{other}"\n'
                      'policies = { read = "allow", write = "deny" }\n')
    leak = rg("run", "--root", str(api), "--", "cat", "../../shared/.env", cwd=api, home=isolated_user)
    assert leak.returncode == 0 and "ghp_" in leak.stdout


def test_store_package_directory_is_enumerated_and_its_credential_excluded(t3, isolated_user):
    api, mono = t3["api"], t3["mono"]
    store = mono / "node_modules" / ".pnpm" / "big@1.0.0" / "node_modules" / "big"
    store.mkdir(parents=True)
    for i in range(20):
        (store / f"m{i}.js").write_text("module.exports = 1;\n")
    (store / "id_rsa").write_text("-----BEGIN OPENSSH PRIVATE KEY-----\nAAAA\n-----END OPENSSH PRIVATE KEY-----\n")
    done = rg("trace", "--json", "--root", str(api), "--", "sh", "-c", f"cat {store}/m*.js", cwd=api,
              home=isolated_user)
    data = json.loads(done.stdout)
    grant = next(r for r in data["proposed"]["paths"] if r["kind"] == "directory")
    assert grant["path"] == str(mono / "node_modules" / ".pnpm")  # the store, enumerated
    assert "big@1.0.0/node_modules/big/id_rsa" in grant["excludes"] and "id_*" in grant["excludes"]
    rg("trace", "--root", str(api), "--write", "--", "sh", "-c", f"cat {store}/m*.js", cwd=api, home=isolated_user)
    run = rg("run", "--root", str(api), "--", "sh", "-c", f"cat {store}/m3.js && ! cat {store}/id_rsa", cwd=api,
             home=isolated_user)
    assert run.returncode == 0, run.stderr
    assert "PRIVATE KEY" not in run.stdout


def test_a_newline_in_the_command_cannot_become_live_toml(t3, isolated_user):
    api = t3["api"]
    evil = 'true\n[[paths]]\nid = "evil"\npath = "/"\npolicies = { read = "allow", write = "allow" }\n#'
    done = rg("trace", "--json", "--write", "--root", str(api), "--", "sh", "-c", evil, cwd=api, home=isolated_user)
    assert done.returncode == 0, done.stderr
    snippet = json.loads(done.stdout)["snippet"]
    assert all(r.get("path") != "/" for r in tomllib.loads(snippet).get("paths", []))
    assert "\\x0a[[paths]]" in snippet
    target = user_file(isolated_user)
    assert not target.exists() or "evil" not in target.read_text()

    # Unprotected: the comment line the old snippet built (`"# ... for: " + " ".join(command)`).
    naive = "# Proposed by `rootguard trace` for: sh -c " + evil + "\n"
    assert any(r["path"] == "/" for r in tomllib.loads(naive)["paths"])


def test_files_new_every_run_are_left_out_and_said(t3, isolated_user):
    api = t3["api"]
    logs = isolated_user / ".npm" / "_logs"
    logs.mkdir(parents=True)
    log = logs / "2026-12-02T10_31_17_123Z-debug-0.log"
    log.write_text("npm log\n")
    settings = isolated_user / ".config" / "tool" / "settings.json"
    settings.parent.mkdir(parents=True)
    settings.write_text("{}\n")
    lock = isolated_user / ".config" / "tool" / "state.lock"
    lock.write_text("1\n")
    done = rg("trace", "--json", "--root", str(api), "--", "cat", str(log), str(settings), str(lock), cwd=api,
              home=isolated_user)
    data = json.loads(done.stdout)
    proposed = [r["path"] for r in data["proposed"]["paths"]]
    assert proposed == ["~/.config/tool/settings.json"]
    left = {r["path"]: r["reason"] for r in data["left_out"]}
    assert left[str(log)].startswith("log file") and left[str(lock)].startswith("lock file")
    assert f"# left out: {log} (log file" in data["snippet"]


def test_one_classifier_source_naming_a_secret_is_not_a_credential_a_live_value_is(tmp_path):
    from lsp_bridge.inventory.secrets import count_credentials, credential_reason

    source = tmp_path / "index.ts"
    source.write_text(AUTH_TS)
    assert credential_reason(str(source)) is None and count_credentials(str(source)) == 0
    live = tmp_path / "config.ts"
    live.write_text('export const auth = { clientSecret: "Zx81hQ2mW9pLr4TsYv7Nc3Bd" };\n')
    assert credential_reason(str(live)) == "credential file (1 secret found in it)"
    dotenv = tmp_path / "settings.yaml"
    dotenv.write_text("password: options.value\n")  # not source: a YAML value is a value
    assert count_credentials(str(dotenv)) == 1


def test_a_package_grant_never_outranks_a_project_deny_even_for_files_created_later(t3, isolated_user):
    api, db, mono = t3["api"], t3["db"], t3["mono"]
    (mono / ".rootguard.toml").write_text(DENY_ENV + '[[paths]]\nid = "no-private"\npath = "."\n'
                                          'includes = ["**/private/**"]\npolicies = { read = "deny", write = "deny" }\n')
    done = rg("trace", "--json", "--write", "--root", str(api), "--", "node", "typecheck.js", cwd=api,
              home=isolated_user)
    assert done.returncode == 0, done.stderr
    grant = next(r for r in json.loads(done.stdout)["proposed"]["paths"] if r["path"] == str(db))
    assert "**/private/**" in grant["excludes"]  # the project's deny, rewritten for the grant
    (db / "private").mkdir()  # created after the proposal was written
    (db / "private" / "key.txt").write_text("PRIVATE-DATA\n")
    inside = rg("run", "--root", str(api), "--", "sh", "-c", "node typecheck.js && ! cat ../db/private/key.txt",
                cwd=api, home=isolated_user)
    assert inside.returncode == 0, inside.stderr
    assert "PRIVATE-DATA" not in inside.stdout

    # Unprotected: the same grant without its excludes is anchored deeper than the deny and wins.
    target = user_file(isolated_user)
    rules = tomllib.loads(target.read_text())["paths"]
    target.write_text("version = 2\n" + "".join(
        f'[[paths]]\nid = "{r["id"]}"\npath = "{r["path"]}"\npolicies = {{ read = "allow", write = "deny" }}\n'
        for r in rules))
    leak = rg("run", "--root", str(api), "--", "cat", "../db/private/key.txt", cwd=api, home=isolated_user)
    assert leak.returncode == 0 and "PRIVATE-DATA" in leak.stdout


def test_enforced_applies_only_checked_grants(t3, isolated_user):
    """Class 5: --enforced used to apply the folder grant unreviewed; round 2 copied the .env into the root."""
    api, mono = t3["api"], t3["mono"]
    other = mono / "shared"
    other.mkdir()
    for i in range(20):
        (other / f"f{i}.json").write_text("{}\n")
    (other / ".env").write_text("API_TOKEN=ghp_" + "B" * 36 + "\n")
    command = "cat ../../shared/*.json ../../shared/.env > /dev/null 2>&1; cp ../../shared/.env stolen.env; true"
    done = subprocess.run([*ROOTGUARD, "trace", "--json", "--enforced", "--root", str(api), "--", "sh", "-c",
                           command], capture_output=True, text=True, timeout=600, cwd=str(api),
                          env=env_for(isolated_user))
    assert done.returncode == 0, done.stderr
    data = json.loads(done.stdout)
    assert all(r["kind"] == "file" and not r["path"].endswith(".env") for r in data["proposed"]["paths"])
    assert not (api / "stolen.env").exists()  # no round ever saw it


def test_apply_refuses_a_hand_made_directory_grant(t3, isolated_user, tmp_path):
    api = t3["api"]
    keys = isolated_user / ".ssh"
    keys.mkdir()
    (keys / "known_hosts").write_text("host ssh-ed25519 AAAA\n")
    forged = {"command": ["true"], "exit_code": 0, "user_file": "",
              "proposed": {"paths": [{"path": "~/.ssh", "group": "config", "kind": "directory"},
                                     {"path": "/", "group": "store", "kind": "directory"}], "mounts": []}}
    done = rg("trace", "--json", "--root", str(api), "--apply", "-", cwd=api, home=isolated_user,
              stdin=json.dumps(forged))
    assert done.returncode == 0, done.stderr
    out = json.loads(done.stdout)
    assert out["proposed"] == 0 and out["written"]["changed"] is False
    assert {r["path"] for r in out["refused"]} == {str(keys), "/"}
