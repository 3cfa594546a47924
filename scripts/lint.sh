#!/usr/bin/env bash
# Run the linters as CI does (scripts/test.sh runs this before pytest); each must pass.
# Needs what `scripts/bootstrap.sh --test` installs. Configuration: pyproject.toml
# ([tool.ruff], [tool.mypy], [tool.importlinter]) and vscode-extension/eslint.config.mjs.
set -euo pipefail
cd "$(dirname "$0")/.."

step() { echo "lint: $*" >&2; "$@"; }

step .venv/bin/ruff check --quiet lsp_bridge tray tests bench
step .venv/bin/mypy                    # strict on lsp_bridge/core, normal on the rest of lsp_bridge and tray
step .venv/bin/lint-imports --no-cache # the layering contracts
if command -v npm >/dev/null 2>&1; then
  (cd vscode-extension && step npm run --silent lint)
else
  echo "lint: eslint skipped: npm is not installed (the extension's tests are skipped too)" >&2
fi
