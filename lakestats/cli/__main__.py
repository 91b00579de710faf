"""``python -m lakestats.cli``: the ``lakestats`` command."""

import sys

from lakestats.cli import main

sys.exit(main())
