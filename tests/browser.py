"""Headless Chromium for the tests that look at a page as a person would: a screenshot (decoded
here, with the standard library, to tell a drawn page from a blank one) and the DOM the browser
built. Tests skip cleanly when no Chromium is installed (`apt-get install chromium`)."""

from __future__ import annotations

import shutil
import struct
import subprocess
import zlib
from pathlib import Path

import pytest

FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
         "--disable-component-update", "--disable-sync", "--no-first-run", "--hide-scrollbars",
         "--disable-default-apps", "--mute-audio"]


def chromium() -> str:
    """The browser's path, or a skip (CI without Chromium still passes)."""
    for name in ("chromium", "chromium-browser", "google-chrome"):
        path = shutil.which(name)
        if path:
            return path
    pytest.skip("no Chromium installed (apt-get install chromium): the browser check is skipped")


def _run(args: list[str], tmp: Path, timeout: float) -> subprocess.CompletedProcess[str]:
    profile = tmp / "chromium-profile"
    profile.mkdir(exist_ok=True)
    return subprocess.run([chromium(), *FLAGS, f"--user-data-dir={profile}", *args], capture_output=True, text=True,
                          timeout=timeout, cwd=tmp)


def screenshot(url: str, out: Path, size: tuple[int, int] = (1000, 800), timeout: float = 90) -> Path:
    """A PNG of `url` as Chromium draws it."""
    done = _run([f"--window-size={size[0]},{size[1]}", f"--screenshot={out}", url], out.parent, timeout)
    assert out.exists(), f"no screenshot: {done.stderr[-2000:]}"
    return out


def dump_dom(url: str, tmp: Path, timeout: float = 90) -> str:
    """The document as Chromium parsed it (its own HTML parser: what a reader's browser builds)."""
    done = _run(["--dump-dom", url], tmp, timeout)
    assert done.returncode == 0 and done.stdout, done.stderr[-2000:]
    return done.stdout


def png_pixels(path: Path) -> tuple[int, int, list[bytes]]:
    """(width, height, rows of RGB(A) bytes) of an 8-bit truecolour PNG, unfiltered."""
    data = path.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n", "not a PNG"
    pos, idat, width = 8, b"", 0
    height = channels = 0
    while pos < len(data):
        length, kind = struct.unpack(">I4s", data[pos:pos + 8])
        body = data[pos + 8:pos + 8 + length]
        if kind == b"IHDR":
            width, height, depth, colour = struct.unpack(">IIBB", body[:10])
            assert depth == 8 and colour in (2, 6), f"unexpected PNG format {depth}/{colour}"
            channels = 3 if colour == 2 else 4
        elif kind == b"IDAT":
            idat += body
        pos += 12 + length
    raw = zlib.decompress(idat)
    stride = width * channels
    rows: list[bytes] = []
    prev = bytearray(stride)
    for y in range(height):
        start = y * (stride + 1)
        kind, line = raw[start], bytearray(raw[start + 1:start + 1 + stride])
        for i in range(stride):
            left = line[i - channels] if i >= channels else 0
            up = prev[i]
            if kind == 1:
                line[i] = (line[i] + left) & 0xFF
            elif kind == 2:
                line[i] = (line[i] + up) & 0xFF
            elif kind == 3:
                line[i] = (line[i] + ((left + up) >> 1)) & 0xFF
            elif kind == 4:
                ul = prev[i - channels] if i >= channels else 0
                p = left + up - ul
                pa, pb, pc = abs(p - left), abs(p - up), abs(p - ul)
                line[i] = (line[i] + (left if pa <= pb and pa <= pc else up if pb <= pc else ul)) & 0xFF
        rows.append(bytes(line))
        prev = line
    return width, height, rows


def ink(path: Path) -> tuple[float, int]:
    """(the share of pixels that differ from the most common colour, the number of colours):
    a blank page is (0.0, 1)."""
    width, _, rows = png_pixels(path)
    channels = len(rows[0]) // width
    counts: dict[bytes, int] = {}
    for row in rows:
        for x in range(0, len(row), channels):
            px = row[x:x + 3]
            counts[px] = counts.get(px, 0) + 1
    total = sum(counts.values())
    return 1 - max(counts.values()) / total, len(counts)
