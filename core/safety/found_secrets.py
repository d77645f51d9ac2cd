"""Secrets found by what a file says, not by its name: a private key pasted into
`deploy_notes.txt`, a database password in a runbook, a cloud key in a shell history.

The detectors are `detect-secrets` (Yelp's scanner, used as a pre-commit hook): private key
blocks, AWS, Azure, GitHub, GitLab, Slack, Stripe, npm, PyPI, OpenAI, Twilio, SendGrid and
other token formats, JWTs, URL userinfo and `password = …`-style assignments (its keyword
detector, which knows each file type's syntax). Its own heuristics leave out what only looks
like a secret (a `${TEMPLATE}`, a UUID, an id, a value read from elsewhere). Its entropy
detectors are not used (every hash and identifier in a codebase would be masked), nor those of
public IP addresses. Verification, which would send a found secret to its service, is never on.

A file holding a private key is left out of the references altogether (`holds_private_key`);
in any other file each found secret is replaced by `***` (`mask_found`), on its own line, so
line numbers stay true.
"""

from __future__ import annotations

import re
import threading
from collections.abc import Callable
from typing import Any

MASK = "***"
HALT_EVERY_LINES = 1024
_DETECTORS = (
    "PrivateKeyDetector", "AWSKeyDetector", "AzureStorageKeyDetector", "ArtifactoryDetector", "BasicAuthDetector",
    "DiscordBotTokenDetector", "GitHubTokenDetector", "GitLabTokenDetector", "JwtTokenDetector", "KeywordDetector",
    "MailchimpDetector", "NpmDetector", "OpenAIDetector", "PypiTokenDetector", "SendGridDetector", "SlackDetector",
    "SquareOAuthDetector", "StripeDetector", "TelegramBotTokenDetector", "TwilioKeyDetector",
)
_TOKEN_CHARS = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_-")
"""A found value is widened to the run of these around it: some detectors report only a token's
prefix (`ghp` of `ghp_…`), and the whole token is what must go."""
_MIN_EVERYWHERE = 6
"""A found value at least this long is masked wherever it appears in its file (shorter ones could
be ordinary words)."""
_lock = threading.Lock()
_loaded: list[Any] = []
_keyword_words: list[re.Pattern[str]] = []


def _detectors() -> list[Any]:
    """The detector instances, made once (tool calls run in several threads)."""
    with _lock:
        if not _loaded:
            from detect_secrets.core.plugins.util import get_mapping_from_secret_type_to_class
            from detect_secrets.settings import get_settings

            # Never verify: verifying a found key means sending it to the service it opens.
            get_settings().disable_filters("detect_secrets.filters.common.is_ignored_due_to_verification_policies")
            classes: list[Any] = list(get_mapping_from_secret_type_to_class().values())
            by_name = {cls.__name__: cls for cls in classes}
            _loaded.extend(by_name[name]() for name in _DETECTORS if name in by_name)
            from detect_secrets.plugins import keyword

            # Its regular expressions are slow on long lines and each needs one of these words:
            # looking for the words first makes the scan of prose ten times faster, same findings.
            _keyword_words.append(re.compile("|".join(keyword.DENYLIST)))  # on the line lowered: faster
        return _loaded


def holds_private_key(text: str) -> bool:
    """True when `text` holds a private key block (PEM, OpenSSH, PGP, PuTTY)."""
    detector = next(d for d in _detectors() if type(d).__name__ == "PrivateKeyDetector")
    return any(regex.search(text) for regex in detector.denylist)


def _likely_not_secret(value: str, line: str, detector: Any) -> bool:
    from detect_secrets.filters import heuristic as h

    return bool(h.is_templated_secret(value) or h.is_prefixed_with_dollar_sign(value) or h.is_sequential_string(value)
                or h.is_potential_uuid(value) or h.is_likely_id_string(value, line, detector)
                or h.is_indirect_reference(line) or h.is_not_alphanumeric_string(value))


def _mask_value(line: str, value: str) -> str:
    out: list[str] = []
    pos = 0
    while (at := line.find(value, pos)) >= 0:
        start, end = at, at + len(value)
        while start > pos and line[start - 1] in _TOKEN_CHARS:
            start -= 1
        while end < len(line) and line[end] in _TOKEN_CHARS:
            end += 1
        out += [line[pos:start], MASK]
        pos = end
    out.append(line[pos:])
    return "".join(out)


def found_in_line(line: str, filename: str) -> set[str]:
    """The secret values the detectors find in one line of the file `filename` (its name picks
    the keyword detector's syntax: `.py`, `.yaml`, `.ini`, …)."""
    found: set[str] = set()
    detectors = _detectors()
    worded = _keyword_words[0].search(line.lower()) is not None
    for detector in detectors:
        if type(detector).__name__ == "KeywordDetector" and not worded:
            continue
        for secret in detector.analyze_line(filename=filename, line=line, line_number=0):
            value = secret.secret_value
            if value and not _likely_not_secret(value, line, detector):
                found.add(value)
    return found


class ScanHalted(Exception):
    """`mask_found` was told to stop (whoever asked no longer waits for the text)."""


def mask_found(text: str, filename: str, halted: Callable[[], bool] | None = None) -> str:
    """`text` with every secret the detectors find replaced by `***` (the token around it too).
    A value found on one line is masked on every line of the file: a password assigned once
    and quoted again in a connection string goes in both places. `halted` is asked every few
    thousand lines (a large file takes seconds); when it says so, `ScanHalted` is raised."""
    lines = text.split("\n")
    found: dict[int, set[str]] = {}
    for i, line in enumerate(lines):
        if halted is not None and i % HALT_EVERY_LINES == 0 and halted():
            raise ScanHalted
        if len(line.strip()) >= 8:  # nothing shorter is a secret worth a detector's time
            found[i] = found_in_line(line, filename)
    everywhere = sorted({v for values in found.values() for v in values if len(v) >= _MIN_EVERYWHERE},
                        key=len, reverse=True)
    if not everywhere and not any(found.values()):
        return text
    for i in range(len(lines)):
        for value in sorted(found.get(i, set()).union(everywhere), key=len, reverse=True):
            lines[i] = _mask_value(lines[i], value)
    return "\n".join(lines)
