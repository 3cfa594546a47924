"""``python -m tray``: the Root Guard tray."""

import sys

from .cli import main

sys.exit(main())
