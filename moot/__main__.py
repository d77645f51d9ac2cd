"""`python -m moot`: the same as the `moot` command."""

import sys

from .cli import main

sys.exit(main())
