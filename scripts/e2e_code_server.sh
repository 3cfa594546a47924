#!/usr/bin/env bash
# End-to-end check of the Root Guard VS Code extension in a real VS Code
# (code-server, VS Code 1.100) driven by headless Chromium:
#   1. installs code-server, Chromium and playwright-core into .tools/ (once; needs
#      root for apt-get; only the Debian and npm registries are contacted),
#   2. builds the .vsix and installs it,
#   3. builds the demo monorepo, opens a workspace with packages/checkout only,
#   4. adds the repository root by rewriting the .code-workspace file,
#   5. waits for the status bar warning and saves docs/screenshots/statusbar-warning.png.
#
#   scripts/e2e_code_server.sh            (PYTHON=... to choose the interpreter)
# Environment: PYTHON (default .venv/bin/python), TOOLS (default .tools),
# CS_VERSION (default 4.100.3), DEMO=large|small (default large: the seed's
# 340 -> 61,000 files; small is quicker), KEEP=1 keeps the temporary directory,
# SCREENSHOT=path, REPORT_SCREENSHOT=path also captures the widening report.
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
  install_code_server
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
  if [ -n "$SERVER_PID" ]; then kill "$SERVER_PID" 2>/dev/null || true; wait "$SERVER_PID" 2>/dev/null || true; fi
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

step "code-server profile"
DATA=$WORK/user-data
EXTENSIONS=$WORK/extensions
mkdir -p "$DATA/User" "$DATA/Machine" "$EXTENSIONS"
SETTINGS=$("$PYTHON" - "$PYTHON" <<'PY'
import json, sys
print(json.dumps({
    "rootguard.serverCommand": [sys.argv[1], "-m", "lsp_bridge"],
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
WORKSPACE_FILE=$WORK/demo.code-workspace
printf '{\n  "folders": [{"path": "%s"}],\n  "settings": {}\n}\n' "$NARROW" > "$WORKSPACE_FILE"

export EXTENSIONS_GALLERY='{}'
CS_FLAGS=(--auth none --disable-telemetry --disable-update-check --disable-workspace-trust
          --extensions-dir "$EXTENSIONS" --user-data-dir "$DATA")

step "install the extension"
"$CODE_SERVER" "${CS_FLAGS[@]}" --install-extension "$VSIX" 2>&1 | tail -1

PORT=$(free_port)
step "start code-server on 127.0.0.1:$PORT"
"$CODE_SERVER" "${CS_FLAGS[@]}" --bind-addr "127.0.0.1:$PORT" --ignore-last-opened >"$WORK/code-server.log" 2>&1 &
SERVER_PID=$!
for _ in $(seq 1 120); do
  if "$PYTHON" -c "import urllib.request, sys; urllib.request.urlopen('http://127.0.0.1:$PORT/healthz', timeout=2)" 2>/dev/null; then
    break
  fi
  kill -0 "$SERVER_PID" 2>/dev/null || { cat "$WORK/code-server.log"; exit 1; }
  sleep 0.5
done

step "drive the workbench"
URL="http://127.0.0.1:$PORT/?workspace=$WORKSPACE_FILE"
if ! CHROMIUM=$CHROMIUM NODE_PATH="$PREFIX/tools/node_modules" \
    node "$REPO/scripts/e2e_code_server.mjs" "$URL" "$WORKSPACE_FILE" "$ROOT" "$SCREENSHOT"; then
  echo "--- code-server log (tail)"; tail -40 "$WORK/code-server.log"
  find "$DATA/logs" -name '*Root Guard*' -exec sh -c 'echo "--- $1"; tail -40 "$1"' _ {} \; 2>/dev/null || true
  exit 1
fi
step "done: $SCREENSHOT"
