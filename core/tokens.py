"""Token counting with tiktoken, offline.

tiktoken downloads its BPE files on first use, which fails without a network. The
`bpe-openai` package ships `cl100k_base` and `o200k_base` as `.tiktoken.gz` files
whose contents hash to exactly what tiktoken expects; we load those, check the hash,
and build `tiktoken.Encoding` objects ourselves. Nothing is fetched at run time. The parsed
table is kept in the user's cache (`$MOOT_CACHE_DIR`, else `~/.cache/moot`), checksummed,
so later runs start faster.
"""

from __future__ import annotations

import binascii
import gzip
import hashlib
import importlib.util
import marshal
import os
import threading
from collections.abc import Mapping, Sequence
from functools import lru_cache
from pathlib import Path

import tiktoken

from .storage.files import write_atomic

# The same values tiktoken's own `tiktoken_ext.openai_public` uses.
_ENDOFTEXT = "<|endoftext|>"
_ENCODINGS: dict[str, dict] = {
    "cl100k_base": {
        "sha256": "223921b76ee99bde995b7ff738513eef100fb51d18c93597a113bcffe865b2a7",
        "pat_str": r"""'(?i:[sdmt]|ll|ve|re)|[^\r\n\p{L}\p{N}]?+\p{L}++|\p{N}{1,3}+| ?[^\s\p{L}\p{N}]++[\r\n]*+|\s++$|\s*[\r\n]|\s+(?!\S)|\s""",  # noqa: E501 - tiktoken's own pattern, verbatim
        "special_tokens": {
            _ENDOFTEXT: 100257,
            "<|fim_prefix|>": 100258,
            "<|fim_middle|>": 100259,
            "<|fim_suffix|>": 100260,
            "<|endofprompt|>": 100276,
        },
    },
    "o200k_base": {
        "sha256": "446a9538cb6c348e3516120d7c08b09f57c36495e2acfffe59a5bf8b0cfb1a2d",
        "pat_str": "|".join(
            [
                r"""[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+(?i:'s|'t|'re|'ve|'m|'ll|'d)?""",
                r"""[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?""",
                r"""\p{N}{1,3}""",
                r""" ?[^\s\p{L}\p{N}]+[\r\n/]*""",
                r"""\s*[\r\n]+""",
                r"""\s+(?!\S)""",
                r"""\s+""",
            ]
        ),
        "special_tokens": {_ENDOFTEXT: 199999, "<|endofprompt|>": 200018},
    },
}

# OpenAI's chat format: every message costs 3 tokens of framing, a `name` one more,
# and every reply is primed with 3 (<|start|>assistant<|message|>).
TOKENS_PER_MESSAGE = 3
TOKENS_PER_NAME = 1
REPLY_PRIMING = 3

_lock = threading.Lock()


class EncodingUnavailable(RuntimeError):
    pass


def cache_dir() -> Path:
    """Where parsed token tables are kept between runs: `$MOOT_CACHE_DIR`, else the XDG cache."""
    explicit = os.environ.get("MOOT_CACHE_DIR")
    if explicit:
        return Path(explicit)
    xdg = os.environ.get("XDG_CACHE_HOME")
    return (Path(xdg) if xdg else Path.home() / ".cache") / "moot"


def _cache_file(name: str) -> Path:
    return cache_dir() / f"{name}-{_ENCODINGS[name]['sha256'][:16]}.marshal"


def _read_cached(name: str) -> dict[bytes, int] | None:
    """The parsed table from an earlier run, if its file is intact (a checksum guards it)."""
    try:
        data = _cache_file(name).read_bytes()
    except OSError:
        return None
    digest, payload = data[:64], data[64:]
    if hashlib.sha256(payload).hexdigest().encode() != digest:
        return None
    try:
        ranks = marshal.loads(payload)
    except (ValueError, EOFError, TypeError):
        return None
    return ranks if isinstance(ranks, dict) and len(ranks) > 50_000 else None


def _write_cached(name: str, ranks: dict[bytes, int]) -> None:
    """Keep the parsed table for the next run (a tenth of the start-up it costs); best effort."""
    path = _cache_file(name)
    payload = marshal.dumps(ranks)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        write_atomic(path, hashlib.sha256(payload).hexdigest().encode() + payload)
    except OSError:
        pass


def _load_ranks(name: str) -> dict[bytes, int]:
    cached = _read_cached(name)
    if cached is not None:
        return cached
    spec = _ENCODINGS[name]
    # find_spec locates the package without running its __init__, which loads every
    # table it ships (seconds of start-up we do not need).
    found = importlib.util.find_spec("bpe_openai")
    try:
        if found is None or found.origin is None:
            raise FileNotFoundError("bpe_openai")
        blob = (Path(found.origin).parent / "data" / f"{name}.tiktoken.gz").read_bytes()
    except FileNotFoundError as exc:  # pragma: no cover - install problem
        raise EncodingUnavailable(
            f"the {name} token table is missing; reinstall moot (it needs the bpe-openai package)"
        ) from exc
    contents = gzip.decompress(blob)
    if hashlib.sha256(contents).hexdigest() != spec["sha256"]:  # pragma: no cover
        raise EncodingUnavailable(f"the bundled {name} token table does not match tiktoken's hash")
    a2b = binascii.a2b_base64
    ranks = {a2b(token): int(rank) for token, rank in (line.split() for line in contents.splitlines() if line)}
    _write_cached(name, ranks)
    return ranks


_loaded: dict[str, tiktoken.Encoding] = {}


def get_encoding(name: str) -> tiktoken.Encoding:
    """The named encoding, built from bundled files (thread-safe, loaded once: a caller that
    comes while another thread builds it waits for that one, see `moot.commands.warmup`)."""
    found = _loaded.get(name)
    if found is not None:
        return found
    if name not in _ENCODINGS:
        raise EncodingUnavailable(f"unknown encoding {name!r}; known: {', '.join(_ENCODINGS)}")
    with _lock:
        if name not in _loaded:
            spec = _ENCODINGS[name]
            _loaded[name] = tiktoken.Encoding(
                name=name,
                pat_str=spec["pat_str"],
                mergeable_ranks=_load_ranks(name),
                special_tokens=spec["special_tokens"],
            )
        return _loaded[name]


def encoding_name_for_model(model: str | None) -> str:
    """gpt-4o, gpt-4.1, o-series and gpt-5 use o200k_base; everything else cl100k_base."""
    m = (model or "").lower().rsplit("/", 1)[-1]  # "openai/gpt-4o" on OpenRouter
    if m.startswith(("gpt-4o", "gpt-4.1", "gpt-4.5", "gpt-5", "chatgpt-4o", "o1", "o3", "o4", "gpt-oss")):
        return "o200k_base"
    return "cl100k_base"


def encoding_for_model(model: str | None) -> tiktoken.Encoding:
    return get_encoding(encoding_name_for_model(model))


def count_text(text: str, model: str | None = None) -> int:
    """Tokens in plain text. `encode_ordinary`: special-token strings are just text here."""
    if not text:
        return 0
    return len(encoding_for_model(model).encode_ordinary(text))


def count_message(message: Mapping[str, object], model: str | None = None) -> int:
    """One chat message with its framing (without the reply priming)."""
    return _count_message(tuple((k, str(v)) for k, v in message.items()), encoding_name_for_model(model))


@lru_cache(maxsize=256)
def _count_message(items: tuple[tuple[str, str], ...], encoding: str) -> int:
    # Cached: a view is counted when chosen and again per tier, and system prompts
    # and tasks repeat across calls. The key holds the text (a history message is tens of
    # KB, twice over once tiktoken has read it as UTF-8): a few hundred, not thousands.
    enc = get_encoding(encoding)
    n = TOKENS_PER_MESSAGE
    for key, value in items:
        n += len(enc.encode_ordinary(value))
        if key == "name":
            n += TOKENS_PER_NAME
    return n


def count_messages(messages: Sequence[Mapping[str, object]], model: str | None = None) -> int:
    """A whole chat request as OpenAI counts it: every message plus the reply priming."""
    return sum(count_message(m, model) for m in messages) + REPLY_PRIMING


MAX_CHARS_PER_TOKEN = 32
"""More characters than any but freak tokens hold (English averages 4): `truncate_to_tokens`
looks at most this many per token it keeps, so its cost follows the limit, not the text."""


def truncate_to_tokens(text: str, max_tokens: int, model: str | None = None) -> str:
    """A prefix of `text` with at most `max_tokens` tokens: the longest, unless the text runs
    past `MAX_CHARS_PER_TOKEN` characters a token (then the first `max_tokens` × that many
    characters). Only that head is tokenized, so cutting a message of megabytes costs what
    cutting its first page does (a signal is never held up behind it)."""
    if max_tokens <= 0:
        return ""
    head = text[: max_tokens * MAX_CHARS_PER_TOKEN]
    enc = encoding_for_model(model)
    tokens = enc.encode_ordinary(head)
    if len(tokens) <= max_tokens:
        return head
    # errors="ignore": a cut inside a multi-byte character drops it instead of adding U+FFFD
    return enc.decode(tokens[:max_tokens], errors="ignore")
