"""``python -m lsp_bridge.cli``: the ``rootguard`` command."""

import sys

from lsp_bridge.cli.main import main

sys.exit(main())
