#!/usr/bin/env bash
# Build a small pnpm-style monorepo in a temporary directory and show what
# widening a narrow package root to the repository hands over.
set -euo pipefail
here="$(cd "$(dirname "$0")/.." && pwd)"
"$here/scripts/bootstrap.sh" >&2
exec "$here/.venv/bin/rootguard" demo "$@"
