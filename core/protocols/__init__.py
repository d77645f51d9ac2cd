"""Debate protocols: who speaks when, with which task and view. See `base.py` for the contract."""

from __future__ import annotations

from ..models.terms import ProtocolName
from .adaptive import AdaptiveProtocol
from .base import DebateProtocol
from .conversation import ConversationProtocol
from .council import CouncilProtocol
from .rounds import RoundsProtocol
from .simultaneous import SimultaneousProtocol
from .vote import SingleProtocol, VoteProtocol

PROTOCOLS: dict[ProtocolName, type[DebateProtocol]] = {
    "rounds": RoundsProtocol,
    "conversation": ConversationProtocol,
    "simultaneous": SimultaneousProtocol,
    "single": SingleProtocol,
    "vote": VoteProtocol,
    "council": CouncilProtocol,
    "adaptive": AdaptiveProtocol,
}
