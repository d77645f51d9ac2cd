"""Debate protocols: who speaks when, with which task and view. See `base.py` for the contract."""

from __future__ import annotations

from moot.core.models import ProtocolName
from moot.core.protocols.base import DebateProtocol
from moot.core.protocols.conversation import ConversationProtocol
from moot.core.protocols.rounds import RoundsProtocol
from moot.core.protocols.simultaneous import SimultaneousProtocol

PROTOCOLS: dict[ProtocolName, type[DebateProtocol]] = {
    "rounds": RoundsProtocol,
    "conversation": ConversationProtocol,
    "simultaneous": SimultaneousProtocol,
}
