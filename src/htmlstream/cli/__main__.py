"""``python -m htmlstream.cli``: the ``htmlstream`` command."""

import sys

from htmlstream.cli import main

sys.exit(main())
