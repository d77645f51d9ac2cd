"""Prompt slots: on a llama.cpp server each speaker may keep a slot of its own."""

from __future__ import annotations

from collections.abc import Sequence


def kept_slots(llama_cpp: bool, slots: int | None, speakers: Sequence[str]) -> dict[str, int]:
    """On a llama.cpp server with a slot for each of its speakers, each speaker keeps one, so
    its next request finds its own previous prompt in that slot's cache (a request landing on
    another speaker's slot recomputes its whole prompt). With fewer slots than speakers the
    server chooses, as it would for anyone."""
    if not llama_cpp or slots is None or len(speakers) > slots:
        return {}
    return {name: i for i, name in enumerate(speakers)}
