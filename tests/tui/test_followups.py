"""Feedback lines after a command: replaced by what happened, or by the refusal of the process
that runs the debate (an attached watch)."""

from __future__ import annotations

from moot.core.events import ControlChanged, DebateInterrupted, Warning_
from moot.tui.followups import Followups, after_pause, after_resume, after_stop


def test_an_attached_command_refused_by_the_debate_process_says_so_and_waits_no_more() -> None:
    f = Followups()
    f.add(*after_resume("cmd-1"))
    f.add(*after_stop("D", "cmd-2"))
    assert f.on_event(Warning_(message="someone else's warning")) is None
    line = f.on_event(Warning_(message="command cmd-1 (resume) refused: the debate is not paused",
                               command_id="cmd-1"))
    assert line == "refused: command cmd-1 (resume) refused: the debate is not paused"
    assert all(item.command_id == "cmd-2" for item in f.waiting)  # the stop still waits
    assert f.on_event(ControlChanged(action="stop", command_id="cmd-2")) == "stop: taken by the debate's process"
    assert f.on_event(DebateInterrupted(status="stopped")) == "stopped and saved — continue with `moot resume D`"
    assert not f.waiting


def test_a_pause_in_this_process_says_paused_once_no_call_is_in_flight() -> None:
    f = Followups()
    f.add(*after_pause(None))
    assert f.on_event(ControlChanged(action="pause")) is None
    assert f.on_event(ControlChanged(action="pause", effective=True)) == (
        "paused: no call in flight — /resume (or p) continues")
    assert not f.waiting


def test_a_summary_request_with_nothing_to_summarize_is_answered_by_its_warning() -> None:
    from moot.core.protocols.conversation import NOTHING_TO_SUMMARIZE
    from moot.tui.followups import after_summarize

    f = Followups()
    f.add(*after_summarize(["judge"], None))
    assert f.on_event(Warning_(message="the summarize answer was cut", agent_id="judge")) is None
    message = f"{NOTHING_TO_SUMMARIZE} for the shared summary: no message is older than the last 50"
    assert f.on_event(Warning_(message=message, agent_id="judge")) == message
    assert not f.waiting
