#!/usr/bin/env bash
# End-to-end check of the Root Guard VS Code extension in a real VS Code
# (code-server, VS Code 1.100) driven by headless Chromium:
#   1. installs code-server, Chromium and playwright-core (once: with
#      ../shared/tools/install_code_server.sh when it is there, else the same
#      steps below; needs root for apt-get; only the Debian and npm registries
#      are contacted),
#   2. builds the .vsix (with the bundled language server) and installs ONLY
#      it: code-server runs with the login PATH, which has no `rootguard`, and a
#      python3 without Root Guard; the server must start from the bundle,
#   3. builds the demo monorepo, opens packages/checkout as a single folder,
#   4. widens the way a person does (F1 → Workspaces: Add Folder to Workspace…
#      → the repository root → Add; the window reloads into an untitled
#      workspace) and asserts the warning background, Root Guard's notification
#      with "Show report" and "Acknowledge", and the report; saves the screenshot,
#   5. reopens the saved wide workspace, asserts the warning again, then
#      acknowledges and asserts it clears (scripts/e2e_code_server.mjs).
#
#   scripts/e2e_code_server.sh
# Environment: PYTHON (default .venv/bin/python: builds the demo, never seen by
# code-server), TOOLS (default .tools; code-server goes to $TOOLS/code-server),
# CS_VERSION (default 4.100.3), DEMO=large|small (default large: the seed's
# 340 -> 61,000 files; small is quicker), KEEP=1 keeps the temporary directory,
# SCREENSHOT=path (default docs/screenshots/statusbar-warning.png),
# REPORT_SCREENSHOT=path also captures the widening report.
set -euo pipefail

REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
PYTHON=${PYTHON:-$REPO/.venv/bin/python}
TOOLS=${TOOLS:-$REPO/.tools}
PREFIX=$TOOLS/code-server
CS_VERSION=${CS_VERSION:-4.100.3}
PW_VERSION=${PW_VERSION:-1.65.1}
SCREENSHOT=${SCREENSHOT:-$REPO/docs/screenshots/statusbar-warning.png}
CODE_SERVER=$PREFIX/node_modules/.bin/code-server
T0=$(date +%s)
step() { echo "=== [$(( $(date +%s) - T0 ))s] $*"; }

install_code_server() {
  # The same steps as a manual code-server install, without its GitHub downloads.
  step "apt: build tools for native modules, ripgrep, chromium"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends build-essential python3 pkg-config libkrb5-dev \
    libx11-dev libxkbfile-dev libsecret-1-dev ripgrep chromium fonts-dejavu-core >/dev/null
  local node_gyp
  node_gyp="$(npm prefix -g)/lib/node_modules/npm/node_modules/node-gyp/bin/node-gyp.js"
  export npm_config_nodedir=${npm_config_nodedir:-/usr}     # the system Node headers
  mkdir -p "$PREFIX/tools"
  (cd "$PREFIX" && { [ -f package.json ] || echo '{"private": true}' > package.json; } &&
    npm install --no-audit --no-fund --ignore-scripts "code-server@$CS_VERSION")
  if ! (cd "$PREFIX/node_modules/code-server" && node -e 'require("argon2")' 2>/dev/null); then
    (cd "$PREFIX/node_modules/argon2" && ../.bin/node-pre-gyp rebuild --build-from-source >/dev/null)
  fi
  local vs=$PREFIX/node_modules/code-server/lib/vscode
  (cd "$vs" && npm install --no-audit --no-fund --omit=dev --ignore-scripts)
  for m in @vscode/spdlog node-pty native-watchdog @vscode/native-watchdog kerberos @parcel/watcher \
           @vscode/sqlite3 @vscode/fs-copyfile; do
    if [ -f "$vs/node_modules/$m/binding.gyp" ]; then
      (cd "$vs/node_modules/$m" && node "$node_gyp" rebuild -j 2 >/dev/null 2>&1) || { echo "building $m failed"; exit 1; }
    fi
  done
  mkdir -p "$vs/node_modules/@vscode/ripgrep/bin"
  cp "$(command -v rg)" "$vs/node_modules/@vscode/ripgrep/bin/rg"
  (cd "$vs" && ln -sfn node_modules node_modules.asar)
  (cd "$vs/bin/remote-cli" && ln -sfn code-linux.sh code-server)
  (cd "$vs/bin/helpers" && ln -sfn browser-linux.sh browser.sh)
  (cd "$vs/extensions" && npm install --no-audit --no-fund --omit=dev --ignore-scripts)
  (cd "$PREFIX/tools" && { [ -f package.json ] || echo '{"private": true}' > package.json; } &&
    npm install --no-audit --no-fund "playwright-core@$PW_VERSION")
}

free_port() {
  "$PYTHON" -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1]); s.close()'
}

[ -x "$PYTHON" ] || { echo "no Python at $PYTHON (set PYTHON=)"; exit 2; }
"$PYTHON" -m lsp_bridge --help >/dev/null || { echo "$PYTHON -m lsp_bridge does not run"; exit 2; }
if [ ! -x "$CODE_SERVER" ] || [ ! -d "$PREFIX/tools/node_modules/playwright-core" ]; then
  SHARED_INSTALLER=$REPO/../shared/tools/install_code_server.sh
  if [ -f "$SHARED_INSTALLER" ]; then
    step "install code-server with $SHARED_INSTALLER"
    CS_VERSION=$CS_VERSION PW_VERSION=$PW_VERSION bash "$SHARED_INSTALLER" "$PREFIX"
  else
    install_code_server
  fi
fi
CHROMIUM=${CHROMIUM:-$(command -v chromium || true)}
[ -n "$CHROMIUM" ] || { echo "chromium not found"; exit 2; }

step "build the .vsix"
(cd "$REPO/vscode-extension" &&
  { [ -d node_modules ] || npm ci --ignore-scripts --no-audit --no-fund; } &&
  npm run package >/dev/null)
VSIX=$REPO/vscode-extension/rootguard.vsix

WORK=$(mktemp -d "${TMPDIR:-/tmp}/rootguard-e2e.XXXXXX")
SERVER_PID=
cleanup() {
  if [ -n "$SERVER_PID" ]; then
    # code-server's own children (its entry process, extension hosts, our language server)
    # share its process group: end them all, then make sure nothing stayed
    kill -TERM -- "-$SERVER_PID" 2>/dev/null || true
    for _ in $(seq 1 20); do kill -0 -- "-$SERVER_PID" 2>/dev/null || break; sleep 0.25; done
    kill -KILL -- "-$SERVER_PID" 2>/dev/null || true
    wait "$SERVER_PID" 2>/dev/null || true
  fi
  if [ "${KEEP:-0}" = 1 ]; then echo "kept $WORK"; else rm -rf "$WORK"; fi
}
trap cleanup EXIT

# code-server, the extension host and the server run with this HOME, so the
# tooltip shows the demo as ~/src/shop and no real user configuration is read
export HOME=$WORK/home
export XDG_CONFIG_HOME=$HOME/.config XDG_STATE_HOME=$HOME/.local/state XDG_RUNTIME_DIR=$WORK/run
mkdir -p "$HOME/src" "$XDG_RUNTIME_DIR" && chmod 700 "$XDG_RUNTIME_DIR"
unset ROOTGUARD_CONFIG ROOTGUARD_ROOTS

step "demo monorepo (${DEMO:-large})"
read -r ROOT NARROW < <(cd "$REPO" && "$PYTHON" - "$HOME/src" "${DEMO:-large}" <<'PY'
import os, subprocess, sys
dest, size = sys.argv[1], sys.argv[2]
try:
    from lsp_bridge.cli.demo_repo import build_large_monorepo, build_monorepo
    demo = build_large_monorepo(dest) if size == "large" else build_monorepo(dest)
    print(demo.repo, demo.narrow)
except ImportError:  # a tiny stand-in: one package and a .env at the root
    repo = os.path.join(dest, "shop")
    narrow = os.path.join(repo, "packages", "checkout")
    os.makedirs(os.path.join(narrow, "src"))
    with open(os.path.join(narrow, "src", "index.ts"), "w") as f:
        f.write("export const checkout = 1;\n")
    key = "AKIA" + "Q" * 16
    with open(os.path.join(repo, ".env"), "w") as f:
        f.write(f"AWS_ACCESS_KEY_ID={key}\n")
    subprocess.run(["git", "init", "-q", repo], check=True, env={**os.environ, "GIT_CONFIG_NOSYSTEM": "1"})
    print(repo, narrow)
PY
)
echo "repository $ROOT, narrow folder $NARROW"
# What the buttons act on in the narrow folder: a version 1 project file (Migrate Config), and
# an unconfined stdio MCP server (Run MCP Server Confined), a stdlib JSON-RPC server with one tool.
mkdir -p "$NARROW/.vscode" "$NARROW/tools"
printf '# kept through the migration\n[safety]\nallow_temp_directory = false\nfollow_symlinks = true\n' > "$NARROW/.rootguard.toml"
cat > "$NARROW/tools/echo_mcp.py" <<'PY'
import json, sys
for line in sys.stdin:
    msg = json.loads(line)
    if "id" not in msg:
        continue
    method, result = msg.get("method"), {}
    if method == "initialize":
        result = {"protocolVersion": msg["params"].get("protocolVersion", "2025-03-26"),
                  "capabilities": {"tools": {}}, "serverInfo": {"name": "echo", "version": "1"}}
    elif method == "tools/list":
        result = {"tools": [{"name": "echo", "description": "Echo a text.",
                             "inputSchema": {"type": "object", "properties": {"text": {"type": "string"}}}}]}
    sys.stdout.write(json.dumps({"jsonrpc": "2.0", "id": msg["id"], "result": result}) + "\n")
    sys.stdout.flush()
PY
printf '{\n  // an unconfined stdio server: Run MCP Server Confined wraps it\n  "servers": {\n    "echo": {"type": "stdio", "command": "/usr/bin/python3", "args": ["${workspaceFolder}/tools/echo_mcp.py"]}\n  }\n}\n' \
  > "$NARROW/.vscode/mcp.json"

step "code-server profile"
DATA=$WORK/user-data
EXTENSIONS=$WORK/extensions
mkdir -p "$DATA/User" "$DATA/Machine" "$EXTENSIONS"
# No rootguard.serverCommand: the extension finds python3 on the login PATH and runs its bundle.
SETTINGS=$("$PYTHON" - <<'PY'
import json
print(json.dumps({
    "security.workspace.trust.enabled": False,
    "workbench.startupEditor": "none",
    "workbench.tips.enabled": False,
    "workbench.colorTheme": "Default Dark Modern",
    "extensions.autoCheckUpdates": False,
    "extensions.autoUpdate": False,
    "update.mode": "none",
    "telemetry.telemetryLevel": "off",
    "chat.disableAIFeatures": True,
    "git.openRepositoryInParentFolders": "always",
}, indent=2))
PY
)
# machine-scoped settings are read from the remote (Machine) settings in code-server
echo "$SETTINGS" > "$DATA/User/settings.json"
echo "$SETTINGS" > "$DATA/Machine/settings.json"

# code-server and its extension host see only the login environment: the
# login PATH (plus Node's directory) and nothing of this project.
LOGIN_PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
NODE_DIR=$(dirname "$(command -v node)")
case ":$LOGIN_PATH:" in *":$NODE_DIR:"*) ;; *) LOGIN_PATH=$LOGIN_PATH:$NODE_DIR ;; esac
if found=$(PATH=$LOGIN_PATH command -v rootguard); then
  echo "rootguard is on the login PATH ($found): the end to end must start the server from the .vsix alone"; exit 2
fi
if (cd / && PATH=$LOGIN_PATH python3 -c 'import lsp_bridge') 2>/dev/null; then
  echo "python3 on the login PATH has Root Guard installed: the end to end must start the server from the .vsix alone"; exit 2
fi
echo "login PATH: $LOGIN_PATH (python3: $(PATH=$LOGIN_PATH command -v python3 || echo none))"
code_server_env() {  # the login environment code-server and everything it starts get
  CS_ENV=(env -i HOME="$HOME" USER="${USER:-$(id -un)}" SHELL=/bin/bash LANG=C.UTF-8 PATH="$LOGIN_PATH"
          TMPDIR="${TMPDIR:-/tmp}" XDG_CONFIG_HOME="$XDG_CONFIG_HOME" XDG_STATE_HOME="$XDG_STATE_HOME"
          XDG_RUNTIME_DIR="$XDG_RUNTIME_DIR" EXTENSIONS_GALLERY='{}')
}
code_server() {
  code_server_env
  "${CS_ENV[@]}" "$CODE_SERVER" "$@"
}
CS_FLAGS=(--auth none --disable-telemetry --disable-update-check --disable-workspace-trust
          --extensions-dir "$EXTENSIONS" --user-data-dir "$DATA")

step "install the extension"
code_server "${CS_FLAGS[@]}" --install-extension "$VSIX" 2>&1 | tail -1

PORT=$(free_port)
step "start code-server on 127.0.0.1:$PORT"
# in a session of its own (a plain background command: setsid execs in place, so $! is
# code-server's pid and its process group, which cleanup ends as a whole)
code_server_env
setsid "${CS_ENV[@]}" "$CODE_SERVER" "${CS_FLAGS[@]}" --bind-addr "127.0.0.1:$PORT" --ignore-last-opened \
  >"$WORK/code-server.log" 2>&1 &
SERVER_PID=$!
for _ in $(seq 1 120); do
  if "$PYTHON" -c "import urllib.request, sys; urllib.request.urlopen('http://127.0.0.1:$PORT/healthz', timeout=2)" 2>/dev/null; then
    break
  fi
  kill -0 "$SERVER_PID" 2>/dev/null || { cat "$WORK/code-server.log"; exit 1; }
  sleep 0.5
done

step "drive the workbench"
rootguard_logs() {
  find "$DATA/logs" -name '*Root Guard*' -exec sh -c 'echo "--- $1"; tail -${2:-40} "$1"' _ {} "${1:-40}" \; 2>/dev/null || true
}
if ! CHROMIUM=$CHROMIUM NODE_PATH="$PREFIX/tools/node_modules" \
    SHOTS=${SHOTS:-$(dirname "$SCREENSHOT")} node "$REPO/scripts/e2e_code_server.mjs" "http://127.0.0.1:$PORT" "$NARROW" "$ROOT" "$SCREENSHOT"; then
  echo "--- code-server log (tail)"; tail -40 "$WORK/code-server.log"
  rootguard_logs 60
  exit 1
fi
# The server ran from the bundle inside the installed extension, with python3 from the login PATH.
if ! rootguard_logs 400 | grep -E "Starting the server \(python-on-path\): [^ ]*python3[^ ]* [^ ]*$(basename "$EXTENSIONS")/rootguard\.rootguard-[^/]*/bundled/tool/launch\.py lsp_bridge" ; then
  echo "the Root Guard log does not show the server starting from the bundle:"; rootguard_logs 40
  exit 1
fi
step "done: $SCREENSHOT"
