"""``python -m pintime.cli``: the ``pintime`` command. Guarded: ``pintime measure``'s worker process
(multiprocessing's spawn) imports this module again, as ``__mp_main__``, and must not run a command."""

import sys

from pintime.cli import main

if __name__ == "__main__":
    sys.exit(main())
