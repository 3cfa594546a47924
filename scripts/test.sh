#!/usr/bin/env bash
# Run every test: the linters (scripts/lint.sh: ruff, mypy, import-linter, eslint), then the Python suite (which also
# builds and unit-tests the VS Code extension).
set -euo pipefail
here="$(cd "$(dirname "$0")/.." && pwd)"
"$here/scripts/bootstrap.sh" --test
cd "$here"
scripts/lint.sh
export QT_QPA_PLATFORM=offscreen
exec .venv/bin/python -m pytest -q -p no:cacheprovider "$@"
