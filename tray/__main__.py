"""``python -m tray``: the Root Guard tray."""

import sys

from tray.cli import main

sys.exit(main())
