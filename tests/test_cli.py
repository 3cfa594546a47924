"""The ``rootguard`` command line: the JSON contracts of PRODUCT.md and exit codes."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import git, make_repo

ROOTGUARD = str(Path(sys.executable).with_name("rootguard"))  # the installed command


def rootguard(*args, check=True, env=None, cwd=None, input=None):
    full_env = {**os.environ, **(env or {})}
    result = subprocess.run([ROOTGUARD, *args], capture_output=True, text=True, timeout=120,
                            env=full_env, cwd=cwd, input=input)
    if check:
        assert result.returncode == 0, result.stderr
    assert "Traceback" not in result.stderr, result.stderr
    return result


@pytest.fixture
def repo(tmp_path):
    root = make_repo(tmp_path / "shop", {"packages/checkout/package.json": "{}\n", "packages/ui/package.json": "{}\n"})
    (root / ".env").write_text("DATABASE_URL=postgres://app:hunter2@db.internal/app\n")
    git(root, "worktree", "add", "-q", str(tmp_path / "shop-hotfix"), "-b", "hotfix")
    return root


def test_roots_json_reports_union_shadowed_and_worktrees(repo, tmp_path):
    data = json.loads(rootguard("roots", "--json", str(repo / "packages/checkout"), str(repo)).stdout)
    assert set(data) >= {"union", "shadowed", "worktrees", "mounts", "warnings"}
    assert str(repo) in data["union"]
    assert {"path": str(repo / "packages/checkout"), "by": str(repo)}.items() <= data["shadowed"][0].items()
    assert data["worktrees"][0]["mode"] == "include"
    assert str(tmp_path / "shop-hotfix") in data["union"]


def test_roots_human_output_names_the_shadowed_entry(repo):
    out = rootguard("roots", str(repo / "packages/checkout"), str(repo)).stdout
    assert "Shadowed" in out and str(repo / "packages/checkout") in out


@pytest.mark.parametrize("op, expected", [("read", "allow"), ("write", "allow"), ("delete", "allow")])
def test_check_json_inside(repo, op, expected):
    data = json.loads(rootguard("check", "--json", "--root", str(repo), "--op", op, str(repo / ".env")).stdout)
    assert data == {**data, "decision": expected, "path": str(repo / ".env"), "rule": None}
    assert data["reason"]


def test_check_json_outside_is_denied_with_canonical_path(repo, tmp_path):
    link = repo / "escape"
    link.symlink_to(tmp_path)
    result = rootguard("check", "--json", "--root", str(repo), "--op", "read", str(link), check=False)
    data = json.loads(result.stdout)
    assert data["decision"] == "deny" and data["path"] == str(tmp_path)
    assert result.returncode == 1  # the exit status carries the decision (PRODUCT.md)


def test_check_rename_takes_two_paths(repo):
    data = json.loads(
        rootguard("check", "--json", "--root", str(repo), "--op", "rename", str(repo / ".env"), str(repo / "x")).stdout
    )
    assert data["decision"] == "allow" and data["dest"]["path"] == str(repo / "x")


@pytest.mark.parametrize(
    "args",
    [
        ["check", "--json", "--op", "read", "/x"],  # no --root: never the current directory
        ["check", "--json", "--root", "/definitely/not/here", "--op", "read", "/x"],
        ["check", "--json", "--root", "/", "--op", "rename", "/x"],
        ["roots", "--json", "/definitely/not/here"],
        ["inventory", "--json", "--root", "/"],
        ["check", "--json", "--root", "", "--op", "read", "/x"],  # empty: not the current directory
        ["roots", "--json", ""],
    ],
)
def test_bad_input_exits_2_with_one_line(args):
    result = rootguard(*args, check=False)
    assert result.returncode == 2
    assert len(result.stderr.strip().splitlines()) == 1


def test_inventory_json_contract(repo):
    data = json.loads(rootguard("inventory", "--json", "--root", str(repo / "packages/checkout"), "--add", str(repo)).stdout)
    assert data["widens"] is True
    assert data["files_after"] > data["files_before"]
    assert {"path": str(repo / ".env"), "count": 1} in data["credentials"]
    assert "hunter2" not in json.dumps(data)
    assert data["git"][0]["commits"] == 1


def test_mounts_json_and_docker(repo):
    data = json.loads(rootguard("mounts", "--json", str(repo / "packages/checkout")).stdout)
    assert "suggested" in data and "roots_without_mount" in data
    docker = rootguard("mounts", "--docker", str(repo / "packages/checkout")).stdout
    assert docker.startswith("docker run --rm -i --network none --user ")
    # the linked worktree is a second repository: each gets /workspace/<name>
    assert f"-v {repo / 'packages/checkout'}:/workspace/shop/packages/checkout:rw" in docker
    assert "-w /workspace/shop/packages/checkout IMAGE" in docker


def test_config_migrate_check_exit_codes(tmp_path):
    v1 = tmp_path / "v1.toml"
    v1.write_text("[safety]\nallow_any_path = false\n")
    v2 = tmp_path / "v2.toml"
    v2.write_text("version = 2\n")
    bad = tmp_path / "bad.toml"
    bad.write_text("version = [\n")
    assert rootguard("config", "migrate", "--check", str(v2), check=False).returncode == 0
    assert rootguard("config", "migrate", "--check", str(v1), check=False).returncode == 1
    bad_result = rootguard("config", "migrate", "--check", str(bad), check=False)
    assert bad_result.returncode == 2 and f"{bad}:2:1: error" in bad_result.stderr
    assert rootguard("config", "migrate", "--check", str(tmp_path / "missing.toml"), check=False).returncode == 2
    assert rootguard("config", "migrate", "--check", "", check=False).returncode == 2
    assert rootguard("config", "migrate", "--check", "--write", str(v1), check=False).returncode == 2


def test_demo_runs_and_prints_the_widening_report():
    out = rootguard("demo").stdout
    assert "The union widens with" in out and ".env (4)" in out


def test_roots_warns_about_an_unconfined_mcp_server_and_not_about_a_wrapped_one(repo):
    checkout = repo / "packages/checkout"
    (checkout / ".vscode").mkdir()
    (checkout / ".vscode" / "mcp.json").write_text(json.dumps({"servers": {
        "bare": {"command": "npx", "args": ["-y", "@acme/fs-server"]},
        "wrapped": {"command": "rootguard", "args": ["run", "--root", "${workspaceFolder}", "--", "npx", "srv"]},
    }}))
    data = json.loads(rootguard("roots", "--json", str(checkout)).stdout)
    codes = [w["code"] for w in data["warnings"]]
    assert codes.count("mcp-server-unconfined") == 1
    [warning] = [w for w in data["warnings"] if w["code"] == "mcp-server-unconfined"]
    assert "servers.bare" in warning["message"] and "rootguard run" in warning["message"]


# ---------------------------------------------------------------- the contract for every command


def test_version():
    result = rootguard("--version")
    assert result.stdout.strip().startswith("rootguard ") and result.stdout.split()[1][0].isdigit()


def test_check_exit_status_carries_the_decision(repo, tmp_path):
    (repo / ".rootguard.toml").write_text(
        'version = 2\n[[paths]]\nid = "ask-env"\npath = ".env"\npolicies = { read = "request" }\n')
    inside = rootguard("check", "--root", str(repo), "--op", "read", str(repo / "packages"), check=False)
    assert inside.returncode == 0 and inside.stdout.startswith("ALLOW")
    outside = rootguard("check", "--root", str(repo), "--op", "read", str(tmp_path), check=False)
    assert outside.returncode == 1 and outside.stdout.startswith("DENY")
    ask = rootguard("check", "--json", "--root", str(repo), "--op", "read", str(repo / ".env"), check=False)
    assert ask.returncode == 3 and json.loads(ask.stdout)["decision"] == "request"
    piped = subprocess.run(f"{ROOTGUARD} check --root {repo} --op read {tmp_path} | head -c 1",
                           shell=True, capture_output=True, text=True, timeout=60,
                           executable="/bin/bash", env={**os.environ, "SHELLOPTS": "pipefail"})
    assert piped.returncode == 1 and "Traceback" not in piped.stderr


def _broken_configs(tmp_path: Path) -> dict[str, tuple[dict, str]]:
    """name -> (environment, text the error must contain: file:line:column where there is one)."""
    syntax = tmp_path / "syntax.toml"
    syntax.write_text("version = 2\n[workspace\n")
    typo = tmp_path / "typo.toml"
    typo.write_text('version = 2\n[workspace]\nworktres = "include"\n')
    schema = tmp_path / "schema.toml"
    schema.write_text('version = 2\n[workspace]\nworktrees = "sometimes"\n')
    big = tmp_path / "big.toml"
    big.write_text("version = 2\n" + "# padding\n" * 120_000)
    return {
        "syntax": ({"ROOTGUARD_CONFIG": str(syntax)}, f"{syntax}:2:"),
        "key typo": ({"ROOTGUARD_CONFIG": str(typo)}, f"{typo}:3:1"),
        "schema": ({"ROOTGUARD_CONFIG": str(schema)}, f"{schema}:3:"),
        "over 1 MiB": ({"ROOTGUARD_CONFIG": str(big)}, f"{big}"),
        "missing ROOTGUARD_CONFIG": ({"ROOTGUARD_CONFIG": str(tmp_path / "nope.toml")}, "nope.toml"),
    }


def _commands(root: Path, other: Path) -> dict[str, list[str]]:
    return {
        "roots": ["roots", str(root)],
        "check": ["check", "--root", str(root), "--op", "read", str(root)],
        "inventory": ["inventory", "--root", str(root), "--add", str(other)],
        "mounts": ["mounts", str(root)],
        "mounts --docker": ["mounts", "--docker", str(root)],
    }


@pytest.mark.parametrize("broken", ["syntax", "key typo", "schema", "over 1 MiB", "missing ROOTGUARD_CONFIG",
                                    "bad .rootguard.toml"])
@pytest.mark.parametrize("command", ["roots", "check", "inventory", "mounts", "mounts --docker"])
def test_an_invalid_configuration_is_exit_2_naming_the_place_in_text_and_json(tmp_path, broken, command):
    project = tmp_path / "ok"
    (project / "pkg").mkdir(parents=True)
    (project / "pkg" / "a.txt").write_text("a\n")
    if broken == "bad .rootguard.toml":
        (project / ".rootguard.toml").write_text('version = 2\n[[paths]]\nid = "x"\npath = 3\n')
        env, expected = {}, f"{project / '.rootguard.toml'}:4:"
    else:
        env, expected = _broken_configs(tmp_path)[broken]
    args = _commands(project / "pkg", project)[command]
    if broken == "bad .rootguard.toml" and command != "inventory":
        args = [a if a != str(project / "pkg") else str(project) for a in args]
    text = rootguard(*args, check=False, env=env)
    assert text.returncode == 2, (text.stdout, text.stderr)
    assert expected in text.stderr and "error" in text.stderr
    assert "does not widen" not in text.stdout and "ALLOW" not in text.stdout
    if command == "mounts --docker":
        return
    as_json = rootguard(*args, "--json", check=False, env=env)
    assert as_json.returncode == 2
    error = json.loads(as_json.stdout)["error"]
    assert error["kind"] == "invalid-configuration"
    assert any(expected in d["text"] for d in error["diagnostics"])


@pytest.mark.parametrize("args", [
    ["roots", ""],
    ["mounts", ""],
    ["inventory", "--root", "", "--add", "/"],
    ["inventory", "--root", "/", "--add", ""],
    ["check", "--root", "", "--op", "read", "/etc/hostname"],
    ["check", "--root", "", "--root", "/", "--op", "read", "/etc/hostname"],
    ["check", "--root", "/", "--op", "read", ""],
])
def test_an_empty_folder_is_bad_input_never_the_current_directory(args, tmp_path):
    result = rootguard(*args, check=False, cwd=tmp_path)
    assert result.returncode == 2
    assert "empty" in result.stderr and len(result.stderr.strip().splitlines()) == 1
    as_json = rootguard(*args, "--json", check=False, cwd=tmp_path)
    assert as_json.returncode == 2 and json.loads(as_json.stdout)["error"]["kind"] == "bad-input"


@pytest.mark.parametrize("args", [
    [], ["nope"], ["roots"], ["check", "/x"], ["check", "--root", "/", "/x"],
    ["check", "--root", "/", "--op", "chmod", "/x"], ["inventory", "--root", "/"], ["inventory", "--add", "/"],
    ["mounts"], ["config"], ["config", "migrate", "--nope"], ["demo", "--nope"],
    ["roots", "/definitely/not/here"], ["mounts", "/definitely/not/here"],
    ["check", "--root", "/", "--op", "read", "/a\x01b", "/c"],
    ["audit", "--lines", "-1"], ["audit", "--file", ""], ["audit", "--nope"], ["mcp", "--root", "relative"],
    ["mcp", "--root", ""], ["lsp", "--nope"], ["lsp", "--log-level", "loud"], ["tray", "--nope"],
])
def test_bad_input_is_exit_2_without_a_traceback(args):
    result = rootguard(*args, check=False)
    assert result.returncode == 2, (result.stdout, result.stderr)
    assert result.stderr.strip()


def test_help_describes_every_argument_and_shows_required_options():
    for command in ("roots", "check", "inventory", "mounts", "demo", "config migrate"):
        out = rootguard(*command.split(), "--help").stdout
        options = [line for line in out.splitlines() if line.startswith("  ") and line.strip()]
        for line in options:
            name = line.split()[0]
            if name.startswith(("-", "FOLDER", "PATH", "DEST", "FILE")) and line.strip() == name:
                pytest.fail(f"{command}: {name} has no help text")
    usage = rootguard("check", "--help").stdout.split("\n\n")[0]
    assert "[--root" not in usage and "--root FOLDER" in usage and "[--op" not in usage
    usage = rootguard("inventory", "--help").stdout.split("\n\n")[0]
    assert "[--add" not in usage and "[--root" not in usage


def test_a_path_with_a_newline_stays_on_one_line(tmp_path):
    odd = tmp_path / "a\nb"
    odd.mkdir()
    out = rootguard("roots", str(odd)).stdout
    assert "a\\x0ab" in out and "\na\n" not in out.replace("\\x0a", "")
    check = rootguard("check", "--root", str(odd), "--op", "read", str(odd), check=False)
    assert check.returncode == 0 and check.stdout.count("\n") == 3


# ---------------------------------------------------------------- inventory messages


def test_inventory_does_not_widen_says_why_with_rootguard_roots(repo, tmp_path):
    other = tmp_path / "other"
    other.mkdir()
    out = rootguard("inventory", "--root", str(repo), "--add", str(other),
                    env={"ROOTGUARD_ROOTS": str(repo)}).stdout
    assert "ROOTGUARD_ROOTS sets the roots" in out
    assert "already inside" not in out


def test_inventory_of_an_empty_folder_says_so(tmp_path):
    root = tmp_path / "root"
    root.mkdir()
    (root / "a.txt").write_text("a\n")
    empty = tmp_path / "empty"
    empty.mkdir()
    out = rootguard("inventory", "--root", str(root), "--add", str(empty)).stdout
    assert "but no files (1 file before and after)" in out and "×1" not in out


def test_inventory_paths_are_normalised(tmp_path):
    root = tmp_path / "root"
    (root / "pkg").mkdir(parents=True)
    (root / ".env").write_text("API_TOKEN=Qw12Er34Ty56Ui78\n")
    out = rootguard("inventory", "--root", f"{root}//pkg/", "--add", f"{root}//").stdout
    assert "//" not in out and "root/.env (1)" in out


def test_inventory_refuses_a_git_file_that_roots_refuses(tmp_path):
    folder = tmp_path / "evil"
    folder.mkdir()
    (folder / ".git").write_text("gitdir: /\n")
    (folder / "a.txt").write_text("a\n")
    data = json.loads(rootguard("inventory", "--json", "--root", str(tmp_path / "evil"),
                                "--add", str(tmp_path)).stdout)
    assert data["git"] == []
    assert any(".git" in e and "file-system root" in e for e in data["errors"])
    roots = json.loads(rootguard("roots", "--json", str(folder)).stdout)
    assert any("file-system root" in w["message"] for w in roots["warnings"])


# ---------------------------------------------------------------- audit


def test_audit_errors_are_exit_2_and_a_pipe_closing_is_not_an_error(tmp_path):
    assert rootguard("audit", "--file", str(tmp_path), check=False).returncode == 2
    missing = rootguard("audit", "--file", str(tmp_path / "none.jsonl"), check=False)
    assert missing.returncode == 2 and "no such file" in missing.stderr
    unreadable = rootguard("audit", "--file", "/proc/self/mem", check=False)
    assert unreadable.returncode == 2 and "cannot read" in unreadable.stderr
    log = tmp_path / "audit.jsonl"
    record = {"time": "2026-09-10T12:00:00Z", "tool": "read_file", "decision": "allow", "reason": "inside"}
    log.write_text("".join(json.dumps({**record, "n": n}) + "\n" for n in range(20000)))
    piped = subprocess.run(f"{ROOTGUARD} audit --json --file {log} | head -2", shell=True,
                           capture_output=True, text=True, timeout=60)
    assert len(piped.stdout.splitlines()) == 2
    assert "Traceback" not in piped.stderr and "BrokenPipe" not in piped.stderr
    nothing_yet = rootguard("audit")
    assert "no decisions logged yet" in nothing_yet.stderr


def test_a_missing_extra_is_a_one_line_error_naming_the_install(tmp_path):
    blocker = tmp_path / "block"
    blocker.mkdir()
    (blocker / "PySide6").mkdir()
    (blocker / "PySide6" / "__init__.py").write_text("raise ModuleNotFoundError(name='PySide6')\n")
    result = rootguard("tray", "--headless", check=False, env={"PYTHONPATH": str(blocker)})
    assert result.returncode == 2
    assert result.stderr.strip().count("\n") == 0 and "pip install '.[tray]'" in result.stderr


# ---------------------------------------------------------------- roots messages


def test_a_worktree_opened_alone_labels_the_main_checkout_as_such(repo, tmp_path):
    data = json.loads(rootguard("roots", "--json", str(tmp_path / "shop-hotfix")).stdout)
    main = [e for e in data["entries"] if e["path"] == str(repo)]
    assert main and main[0]["reason"].startswith("included main checkout of the repository of")
    out = rootguard("roots", str(tmp_path / "shop-hotfix")).stdout
    assert 'worktrees = "include" (the default) added 1 folder' in out


def test_a_version_1_project_file_with_allow_any_path_is_described_as_it_acts(tmp_path):
    project = make_repo(tmp_path / "proj")
    (project / ".rootguard.toml").write_text("[safety]\nallow_any_path = true\n")
    roots = rootguard("roots", str(project)).stdout
    assert "every path on this machine is allowed" not in roots
    assert "needs approval" in roots
    outside = rootguard("check", "--root", str(project), "--op", "read", str(tmp_path), check=False)
    assert outside.returncode == 3 and outside.stdout.startswith("REQUEST")


def test_warnings_name_the_place_once_without_repeating_the_severity(tmp_path):
    folder = tmp_path / "evil"
    folder.mkdir()
    (folder / ".git").write_text("gitdir: /\n")
    out = rootguard("roots", str(folder)).stdout
    line = next(line for line in out.splitlines() if "file-system root" in line)
    assert line.count("error:") + line.count("warning:") == 1, line
    assert line.count(str(folder / ".git")) == 1, line


# ---------------------------------------------------------------- progress and packaging

PROGRESS_PROBE = (
    "import sys, time\n"
    "from lsp_bridge.cli.progress import progress\n"
    "with progress('measuring', enabled='--json' not in sys.argv) as update:\n"
    "    update('scanning /srv/big')\n"
    "    time.sleep(float(sys.argv[1]))\n"
    "print('done')\n"
)


def _stderr_of(seconds: float, *flags: str, tty: bool) -> str:
    import pty
    import select

    if not tty:
        result = subprocess.run([sys.executable, "-c", PROGRESS_PROBE, str(seconds), *flags],
                                capture_output=True, text=True, timeout=60)
        return result.stderr
    master, slave = pty.openpty()
    process = subprocess.Popen([sys.executable, "-c", PROGRESS_PROBE, str(seconds), *flags],
                               stdout=subprocess.PIPE, stderr=slave, env={**os.environ, "TERM": "xterm"})
    os.close(slave)
    seen = b""
    while True:
        ready, _, _ = select.select([master], [], [], 30)
        if not ready:
            break
        try:
            chunk = os.read(master, 4096)
        except OSError:  # the child closed the terminal
            break
        if not chunk:
            break
        seen += chunk
    process.wait(timeout=30)
    os.close(master)
    return seen.decode("utf-8", errors="replace")


def test_progress_shows_on_a_terminal_for_long_work_only():
    assert "scanning /srv/big" in _stderr_of(2.0, tty=True)
    assert _stderr_of(0.0, tty=True).strip() == ""  # quick work: nothing drawn
    assert _stderr_of(2.0, tty=False) == ""  # not a terminal: silent
    assert "scanning" not in _stderr_of(2.0, "--json", tty=True)


def test_base_install_carries_the_language_server_and_extras_stay_optional():
    import tomllib

    project = tomllib.loads((Path(__file__).resolve().parent.parent / "pyproject.toml").read_text())["project"]
    names = {dep.split(">")[0].split("<")[0].split("=")[0].strip() for dep in project["dependencies"]}
    assert {"pygls", "lsprotocol", "watchdog", "detect-secrets"} <= names
    assert not names & {"PySide6-Essentials", "mcp"}
    assert isinstance(project["license"], str)  # an SPDX expression, not a table
    assert set(project["optional-dependencies"]) >= {"tray", "mcp"}


@pytest.mark.timeout(780)  # a venv (120 s) and pip install (600 s) at most
def test_a_fresh_install_prints_no_warning(tmp_path):
    """What scripts/demo.sh runs on a fresh machine: an editable install, quiet."""
    here = Path(__file__).resolve().parent.parent
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(tmp_path / "venv")], check=True, timeout=120)
    result = subprocess.run([sys.executable, "-m", "pip", "--python", str(tmp_path / "venv" / "bin" / "python"),
                             "install", "-q", "--no-deps", "-e", str(here)],
                            capture_output=True, text=True, timeout=600, cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert "warning" not in (result.stdout + result.stderr).lower(), result.stderr


def test_inventory_says_where_worktrees_include_added_a_folder(repo, tmp_path):
    out = rootguard("inventory", "--root", str(repo / "packages/checkout"), "--add", str(repo)).stdout
    assert f'{tmp_path / "shop-hotfix"} is there because worktrees = "include"' in out


def test_the_mcp_server_refuses_to_start_on_an_invalid_configuration(tmp_path):
    bad = tmp_path / "bad.toml"
    bad.write_text("version = 2\n[workspace\n")
    root = tmp_path / "root"
    root.mkdir()
    result = rootguard("mcp", "--root", str(root), check=False, env={"ROOTGUARD_CONFIG": str(bad)}, input="")
    assert result.returncode == 2 and f"{bad}:2:" in result.stderr


def test_a_bad_rootguard_roots_entry_is_refused_not_ignored(tmp_path):
    result = rootguard("roots", str(tmp_path), check=False, env={"ROOTGUARD_ROOTS": "relative/dir"})
    assert result.returncode == 2
    assert "ROOTGUARD_ROOTS entry 'relative/dir' is not an absolute path" in result.stderr
    assert "ignored" not in result.stderr


def test_inventory_tells_apart_the_same_folder_of_two_checkouts(repo, tmp_path):
    """worktrees = "include" adds packages/ui of the main checkout and of the linked worktree:
    the report names them so they can be told apart (not "ui, ui")."""
    root, hotfix = str(repo / "packages/checkout"), tmp_path / "shop-hotfix"
    for checkout in (repo, hotfix):
        (checkout / "packages/ui/widgets/package.json").parent.mkdir(parents=True)
        (checkout / "packages/ui/widgets/package.json").write_text("{}\n")
    out = rootguard("inventory", "--root", root, "--add", str(hotfix / "packages/ui")).stdout
    line = next(x for x in out.splitlines() if "first-party packages now readable" in x)
    names = line.split("now readable: ", 1)[1].split(", ")
    assert sorted(names) == sorted(["shop/packages/ui", "shop/packages/ui/widgets",
                                    "shop-hotfix/packages/ui", "shop-hotfix/packages/ui/widgets"]), line
    # One folder added, no namesake: its own name is enough.
    single = rootguard("inventory", "--root", root, "--add", str(repo / "packages/ui"),
                       env={"ROOTGUARD_CONFIG": str(tmp_path / "ignore.toml")}, check=False)
    assert single.returncode == 2  # a missing ROOTGUARD_CONFIG file is an error, not a fallback
    (tmp_path / "ignore.toml").write_text('version = 2\n[workspace]\nworktrees = "ignore"\n')
    out = rootguard("inventory", "--root", root, "--add", str(repo / "packages/ui"),
                    env={"ROOTGUARD_CONFIG": str(tmp_path / "ignore.toml")}).stdout
    assert "now readable: ui, ui/widgets" in out, out
