"""Debate protocols: who speaks when, with which task and view. See `base.py` for the contract."""

from __future__ import annotations

from ..models.terms import ProtocolName
from .base import DebateProtocol
from .conversation import ConversationProtocol
from .rounds import RoundsProtocol
from .simultaneous import SimultaneousProtocol

PROTOCOLS: dict[ProtocolName, type[DebateProtocol]] = {
    "rounds": RoundsProtocol,
    "conversation": ConversationProtocol,
    "simultaneous": SimultaneousProtocol,
}
