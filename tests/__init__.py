"""The test suite. Importing it (pytest does, before `tests.conftest`) turns bytecode writing
back on where the environment turned it off.

Where PYTHONDONTWRITEBYTECODE is set (some sandboxes and containers set it), each of the few
hundred `python -m moot` processes the tests start compiled every moot module it imports from
source again (about 0.15 s of CPU apiece), and each test worker compiled and assertion-rewrote
every test module again while collecting (about 5 s apiece). The .pyc files go where a plain
run puts them (`__pycache__/`, ignored by git); this runs before any moot import, so the
package's modules are cached by the test process itself, before its children start.
"""

import os
import sys

os.environ.pop("PYTHONDONTWRITEBYTECODE", None)
sys.dont_write_bytecode = False
