"""``python -m lsp_bridge``: the Root Guard language server on stdio."""

import sys

from lsp_bridge.lsp.stdio import main

sys.exit(main(sys.argv[1:]))
