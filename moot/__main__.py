"""`python -m moot`: the same as the `moot` command."""

import sys

from moot.cli import main

sys.exit(main())
