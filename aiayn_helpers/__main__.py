"""``python -m aiayn_helpers translate|train|evaluate ...``: see :mod:`.cli`."""

import sys

from .cli import main

sys.exit(main())
