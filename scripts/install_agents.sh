#!/usr/bin/env bash
# Install the four agent CLIs the end-to-end tests drive (tests/test_agents_e2e.py, bench/bench_agents.py):
# Claude Code, Codex, Gemini CLI and Copilot CLI at the exact versions of tests/agents/clis/package-lock.json,
# from the npm registry, into .tools/agents/ (gitignored; ROOTGUARD_AGENTS_DIR overrides it). Skipped when the
# installed lock matches; about 1 GB on disk. Called by scripts/bootstrap.sh --test.
set -euo pipefail
here="$(cd "$(dirname "$0")/.." && pwd)"
src="$here/tests/agents/clis"
dest="${ROOTGUARD_AGENTS_DIR:-$here/.tools/agents}"
stamp="$dest/.installed-package-lock.json"
bins=(claude codex gemini copilot)

installed() {
  cmp -s "$src/package-lock.json" "$stamp" || return 1
  for bin in "${bins[@]}"; do [ -x "$dest/node_modules/.bin/$bin" ] || return 1; done
}
if installed; then
  exit 0
fi
if ! command -v npm >/dev/null 2>&1; then
  echo "install_agents: npm is missing: the agent CLIs are not installed (the agent end-to-end tests will say so)" >&2
  exit 1
fi
start=$(date +%s)
echo "install_agents: installing the agent CLIs into $dest" >&2
rm -f "$stamp"
mkdir -p "$dest"
cp "$src/package.json" "$src/package-lock.json" "$dest/"
# --ignore-scripts: no package's install script runs but Claude Code's own (below), which puts its native binary
# in place; the optional native modules some packages list (node-pty) are not needed by `-p` runs.
(cd "$dest" && npm ci --ignore-scripts --no-audit --no-fund --loglevel=error >/dev/null)
(cd "$dest/node_modules/@anthropic-ai/claude-code" && node install.cjs >/dev/null)
# Copilot CLI unpacks its runtime (~235 MB) into $XDG_CACHE_HOME/copilot on first run: once here, shared by
# every test run (the tests point XDG_CACHE_HOME at this directory for Copilot).
export DISABLE_AUTOUPDATER=1 COPILOT_AUTO_UPDATE=false
scratch="$(mktemp -d)"
trap 'rm -rf "$scratch"' EXIT
for bin in "${bins[@]}"; do
  if ! version=$(HOME="$scratch" XDG_CACHE_HOME="$dest/cache" CODEX_HOME="$scratch/codex" \
                 "$dest/node_modules/.bin/$bin" --version 2>/dev/null | head -1); then
    echo "install_agents: $bin --version failed after the install" >&2
    exit 1
  fi
  echo "install_agents: $bin: $version" >&2
done
cp "$src/package-lock.json" "$stamp"
echo "install_agents: done in $(( $(date +%s) - start )) s" >&2
