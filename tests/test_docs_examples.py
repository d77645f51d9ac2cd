"""The README's and the docs site's examples run as written.

A fenced `bash` block right after a `<!-- runnable -->` line is run with bash, as a person
would paste it after the quickstart: `moot` on the PATH, no API key (so the demo provider), a
fresh folder as the working directory. The runnable blocks of one page share that folder and
run in the order they appear, so a later block can use what an earlier one made (a debate
named with `--id`, a `moot.toml`). Every block must exit 0.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
MARK = "<!-- runnable -->"
BLOCK = re.compile(rf"^{re.escape(MARK)}\s*\n```bash\n(.*?)^```", re.M | re.S)


def pages() -> list[Path]:
    docs = sorted((ROOT / "docs").rglob("*.md")) if (ROOT / "docs").is_dir() else []
    return [ROOT / "README.md", *docs]


def runnable(page: Path) -> list[str]:
    return BLOCK.findall(page.read_text(encoding="utf-8"))


def test_the_marker_is_only_ever_above_a_bash_block() -> None:
    """A marker above anything else would be skipped silently: refused here instead."""
    for page in pages():
        text = page.read_text(encoding="utf-8")
        assert text.count(MARK) == len(runnable(page)), f"{page.relative_to(ROOT)}: a {MARK} not above ```bash"


def test_the_readme_has_runnable_examples() -> None:
    assert len(runnable(ROOT / "README.md")) >= 2


PAGES = [p for p in pages() if runnable(p)]


@pytest.mark.parametrize("page", PAGES, ids=[str(p.relative_to(ROOT)) for p in PAGES])
def test_every_runnable_block_of_a_page_runs_as_written(page: Path, tmp_path: Path) -> None:
    bin_dir = Path(sys.executable).parent
    env = {k: v for k, v in os.environ.items() if k not in ("OPENAI_API_KEY", "OPENROUTER_API_KEY",
                                                             "MOOT_STATE_DIR", "MOOT_PLAIN")}
    env.update({"PATH": f"{bin_dir}{os.pathsep}{env.get('PATH', '')}", "MOOT_DEMO_DELAY": "0",
                "MOOT_CONFIG_DIR": str(tmp_path / "config"), "HOME": str(tmp_path / "home"),
                "MOOT_WINDOW_CACHE": str(tmp_path / "windows.json")})
    (tmp_path / "home").mkdir()
    work = tmp_path / "work"
    work.mkdir()
    for i, block in enumerate(runnable(page), 1):
        r = subprocess.run(["bash", "-euo", "pipefail", "-c", block], cwd=work, env=env, capture_output=True,
                           text=True, timeout=240, stdin=subprocess.DEVNULL)
        assert r.returncode == 0, f"{page.relative_to(ROOT)} block {i}:\n{block}\nexit {r.returncode}\n{r.stderr[-2000:]}"
        assert "Traceback" not in r.stderr, r.stderr[-2000:]
