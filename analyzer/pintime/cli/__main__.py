"""``python -m pintime.cli``: the ``pintime`` command."""

import sys

from pintime.cli import main

sys.exit(main())
