#!/usr/bin/env bash
# Set up what Root Guard needs on a fresh Debian machine, idempotently:
# system packages (when run as root), then a project virtualenv in .venv.
# Usage: scripts/bootstrap.sh [--test]   (--test adds test-only packages: pytest, the linters, npm packages)
set -euo pipefail
here="$(cd "$(dirname "$0")/.." && pwd)"
cd "$here"

want_test=0
[ "${1:-}" = "--test" ] && want_test=1

# bubblewrap: the sandbox of `rootguard run` and the mount-set test (unprivileged, not setuid);
# strace: `rootguard trace` and `rootguard probe --trace`.
packages=(git python3-venv bubblewrap strace)
if [ "$want_test" = 1 ]; then
  # Qt offscreen/xcb runtime, a virtual X server for tray screenshots, Neovim for the
  # third-party LSP client smoke test, Node for the VS Code extension.
  packages+=(libegl1 libgl1 libxkbcommon0 libxkbcommon-x11-0 libfontconfig1 libdbus-1-3
             libxcb-cursor0 libxcb-icccm4 libxcb-keysyms1 libxcb-shape0 xvfb xauth neovim)
  command -v node >/dev/null 2>&1 || packages+=(nodejs npm)
fi
missing=()
for pkg in "${packages[@]}"; do
  dpkg -s "$pkg" >/dev/null 2>&1 || missing+=("$pkg")
done
if [ ${#missing[@]} -gt 0 ]; then
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
    echo "bootstrap: installing ${missing[*]}" >&2
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq >/dev/null
    apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
  else
    echo "bootstrap: missing system packages (install them, e.g. with apt-get): ${missing[*]}" >&2
  fi
fi

python=${PYTHON:-python3}
if [ ! -x .venv/bin/python ]; then
  "$python" -m venv .venv
fi
stamp=.venv/.rootguard-installed
extras=tray,mcp
[ "$want_test" = 1 ] && extras=test
# The test extras include the others, so a test install serves the demo too.
if [ ! -f "$stamp" ] || [ pyproject.toml -nt "$stamp" ] || ! grep -qxE "$extras|test" "$stamp"; then
  .venv/bin/python -m pip install -q --upgrade pip >/dev/null
  .venv/bin/python -m pip install -q -e ".[$extras]"
  echo "$extras" > "$stamp"
fi

# The VS Code extension's locked npm packages (eslint, the TypeScript toolchain) for the
# tests and scripts/lint.sh; reinstalled when package-lock.json changes.
if [ "$want_test" = 1 ] && command -v npm >/dev/null 2>&1; then
  lock_stamp=vscode-extension/node_modules/.rootguard-package-lock.json
  if ! cmp -s vscode-extension/package-lock.json "$lock_stamp"; then
    echo "bootstrap: installing the VS Code extension's npm packages" >&2
    (cd vscode-extension && npm ci --ignore-scripts --no-audit --no-fund --loglevel=error >/dev/null)
    cp vscode-extension/package-lock.json "$lock_stamp"
  fi
fi

# The four agent CLIs the agent end-to-end tests drive (Claude Code, Codex, Gemini CLI, Copilot CLI), pinned by
# tests/agents/clis/package-lock.json, into .tools/agents/; skipped when the installed lock matches.
if [ "$want_test" = 1 ] && command -v npm >/dev/null 2>&1; then
  scripts/install_agents.sh
fi
