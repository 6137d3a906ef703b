"""``python -m clawlog``: the same as the ``clawlog`` command."""

import sys

from clawlog.cli import main

sys.exit(main())
