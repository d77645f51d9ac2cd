"""`conversation`: a turn-based debate, built for 10,000 turns at a flat cost per turn.

Agents speak one at a time, round-robin in config order; each turn adds one message to
the shared transcript (the full transcript stays on disk, in the event log). Each turn's
view is:

    system prompt (the speaker's role, then the topic)
    rolling summary of everything older than the verbatim window
    the latest messages verbatim, labelled with speaker and turn (in view layout 3 with the
      speaker's earlier recall blocks where they were sent, while the summary stands: `_held`)
    the recall tier: old messages the summary covers that what is said now returns to
    the turn's task (and the moderator's notes)

Nothing falls out uncovered: every message is either verbatim in the view or covered
by the summary it carries. The summary rolls forward — the messages leaving the
window are folded into the previous summary, never the whole transcript — when
`summary_every` messages wait beyond the last `recent_messages`, when the verbatim
window would pass `recent_tokens` (or not fit the budget), and when the user asks. In
view layout 4 a roll appends: the messages leaving the window are summarized into a new
block after the previous summary's blocks, which stay byte for byte (a speaker's next
request repeats its previous one through them), and only when the blocks outgrow the
summary's cap are the oldest consolidated into one (`moot.core.context.summarize`).

`summary_scope = "shared"` (the seed): one summary, made by the judge, that every agent
reads. `"per-agent"`: each agent keeps its own, written from its role's point of view
(the judge keeps one too, for its synthesis). After the last turn the judge synthesizes
from its summary and the recent window.
"""

from __future__ import annotations

from .. import tokens
from ..config import ResolvedAgent
from ..context.recall_tier import RecallRequest, block_message, held_blocks
from ..context.view import ViewTooLarge, continued_heading, item_label, render_messages
from ..engine.calls import CallResult
from ..engine.summaries import SUMMARY_FLOOR
from ..engine.windows import Fit, reply_floor
from ..events import Warning_
from ..models.config import ConversationConfig
from ..models.state import Contribution, HeldRecall, RecallRecord, Summary, ViewRecord
from ..models.terms import SummaryTrigger
from ..search.recall import RecallScope
from ..storage.state import find_contribution
from .base import CallWindow, DebateContext, DebateProtocol, SynthesisInput
from .judging import converged

ESTIMATE_MARGIN = 64
"""Tokens of slack between the sum of the parts and the view as counted whole (joints, framing)."""
HEADER_TOKENS = 24
"""The verbatim block's heading and framing, on top of its messages' own tokens."""
TOKEN_HYSTERESIS = 0.5
"""A roll forced by tokens keeps the window at most this share of its cap, so the next
turn does not have to roll again at once."""
TOKEN_HYSTERESIS_6 = 0.25
"""From view layout 6: a quarter (a message or two at the defaults), so rolls come a third less
often; each makes every speaker read the new block and the window after it afresh (the share a
provider serves from cache at an 8,000-token view: 60.4 %, 55.8 % keeping half: `bench/cache.py`)."""

BLOCKS_PER_TIER = 6
"""View layout 4: one roll's block gets half of what the earlier blocks leave of the summary's
cap, and at least this share of it, so that a few rolls append before the blocks outgrow it and
the oldest are consolidated."""

NOTHING_TO_SUMMARIZE = "nothing to summarize yet"
"""How the warning that answers a `/summarize` with no summary starts (the TUI waits for it)."""


class ConversationProtocol(DebateProtocol):
    name = "conversation"
    step_word = "turn"
    task_kinds = ("turn", "summarize_conversation", "summarize_conversation_above", "clarify")
    opening_phase = "turn"
    SETTING = "debate.conversation.max_context_tokens"

    def __init__(self, ctx: DebateContext) -> None:
        super().__init__(ctx)
        self._held_tokens: dict[tuple[str, int, tuple[str, ...]], int] = {}
        """(reader, turn, items) → the tokens of the recall block the reader's view at that turn added."""

    def opening_params(self, agent: ResolvedAgent) -> dict[str, object]:
        return {"turn": 1, "turns": self.total_steps, "name": agent.name, "role": agent.role}

    def call_window(self) -> CallWindow:
        return {"context_tokens": self.conv.max_context_tokens, "max_tokens": self.conv.reserve_output_tokens,
                "setting": self.SETTING}

    @property
    def conv(self) -> ConversationConfig:
        return self.ctx.settings.conversation

    @property
    def total_steps(self) -> int:
        return self.ctx.settings.turns

    def speaker(self, turn: int) -> ResolvedAgent:
        agents = self.ctx.agents
        return agents[(turn - 1) % len(agents)]

    def _fit(self, agent: ResolvedAgent) -> Fit:
        """A turn's budget, fitted to the model's real window (see `moot.core.engine.windows`)."""
        return self.ctx.engine.fit(agent, self.conv.max_context_tokens, self.conv.reserve_output_tokens)

    def owner(self, speaker: ResolvedAgent) -> ResolvedAgent:
        """Whose summary the speaker reads: the judge's (shared) or its own (per-agent)."""
        return self.ctx.judge if self.conv.summary_scope == "shared" else speaker

    # ------------------------------------------------------------------ turns

    async def run(self) -> None:
        ctx = self.ctx
        total = self.total_steps
        score_every = self.conv.score_every if ctx.settings.termination == "convergence" else None
        for t in self.steps("turn"):
            speaker = self.speaker(t)
            if find_contribution(ctx.state, t, speaker.id, "message") is None:
                await ctx.gate.wait()
                await self._manual_rolls(t)
                await self._turn(t, speaker)
            if score_every and t % score_every == 0 and t < total:
                if await converged(ctx, t, self.score_input(t)):
                    return

    async def _turn(self, t: int, speaker: ResolvedAgent) -> None:
        ctx = self.ctx
        conv = self.conv
        owner = self.owner(speaker)
        if self.conv.summary_scope == "per-agent":
            await self._roll_if_due(ctx.judge, t, speaker)  # the judge's own, for its synthesis
        summary = await self._roll_if_due(owner, t, speaker)
        window = ctx.index.messages_after(summary, t)
        held, going_on = self._held(speaker, window, summary)
        record = self._record(speaker, t, summary, held)
        # What does not fit is rolled into the summary, never dropped.
        while True:
            dropped = self._overflow(record, window, held)
            if not dropped:
                break
            summary = await self._roll(owner, t, window[: len(dropped)], summary, "tokens",
                                       asked=self._asked(window, summary, speaker))
            window = window[len(dropped):]
            held, going_on = self._held(speaker, window, summary)
            record = self._record(speaker, t, summary, held)

        async def speak() -> CallResult:
            fit = self._fit(speaker)  # a window too small for a turn fails like the call
            return await ctx.call(speaker, record, history=window, budget=fit.input_budget,
                                  context_tokens=conv.max_context_tokens, max_tokens=conv.reserve_output_tokens,
                                  context_setting=self.SETTING, recall=self._recall(summary, held, going_on))

        result = await ctx.unless_failed(speaker, f"turn {t}", speak())
        if result is not None:
            ctx.add_contribution(speaker, t, "message", result)

    def _recall(self, summary: Summary | None, held: list[HeldRecall], going_on: bool) -> RecallRequest | None:
        """The recall tier of a turn: messages the summary covers (all of them, up to its last),
        within `recall_tokens`, beside the reader's earlier blocks its window holds (`held`);
        `going_on`: the reader's last view read this summary too, so the words of the window
        before the latest messages were searched then (see `RecallRequest.new_words`)."""
        cap = self.conv.recall_cap
        covered = self.ctx.index.contributions.get(summary.covered_through or "") if summary else None
        if not cap or covered is None:
            return None
        return RecallRequest(RecallScope(kinds=("message",), max_step=covered.round, population=covered.round), cap,
                             tuple(held), new_words=going_on)

    def _held(self, reader: ResolvedAgent, window: list[Contribution],
              summary: Summary | None) -> tuple[list[HeldRecall], bool]:
        """The reader's earlier recall blocks its view keeps (view layout 3), and whether its last
        view read the same summary.

        A block stays where it was sent, like a tool's result in an agent's history, so the
        reader's next requests share it as a cached prefix (`held_blocks`), for as long as the
        summary it was recalled beside stands: a new summary changes everything after the system
        message anyway, and the next view recalls afresh beside it. Found through the reader's
        latest message in the window and the view it was written from, which held the ones
        before. An item the debate let go of and cannot read back now is left out (its block is
        then new bytes: rare, and the record says what was sent)."""
        if self.ctx.index.layout < 3 or not self.conv.recall_cap or not window or summary is None:
            return [], False
        mine = next((c for c in reversed(window) if c.agent_id == reader.id), None)
        if mine is None or not mine.metadata.call_id:
            return [], False
        views = self.ctx.state.round(mine.round).calls
        previous = next((v for v in reversed(views) if v.call_id == mine.metadata.call_id), None)
        if previous is None or previous.summary_id != summary.id:
            return [], False
        contributions = self.ctx.index.contributions
        blocks = [b.model_copy(update={"items": [it for it in b.items if contributions.get(it.id) is not None]})
                  for b in held_blocks(previous, window[0].round)]
        return [b for b in blocks if b.items], True

    def _block_tokens(self, reader: ResolvedAgent, block: HeldRecall) -> int:
        """A held block's tokens in the reader's view, with the heading of the messages after it."""
        key = (reader.id, block.turn, tuple(it.id for it in block.items))
        n = self._held_tokens.get(key)
        if n is None:
            if len(self._held_tokens) >= 4096:
                self._held_tokens.clear()
            index = self.ctx.index
            probe = ViewRecord(call_id="", agent_id=reader.id, round=block.turn, phase="turn", model=reader.model)
            message = block_message(probe, index, block.items, lambda c: item_label(c, reader.id, index))
            n = self._held_tokens[key] = (tokens.count_message(message, reader.model)
                                          + tokens.count_text(continued_heading(True), reader.model) + 2)
        return n

    def _window_tokens(self, window: list[Contribution], reader: ResolvedAgent, held: list[HeldRecall]) -> int:
        """The verbatim window's tokens as `reader` reads it: its messages and its held recall blocks."""
        return self._tokens(window, reader) + sum(self._block_tokens(reader, b) for b in held)

    def _record(self, speaker: ResolvedAgent, t: int, summary: Summary | None,
                held: list[HeldRecall] | None = None) -> ViewRecord:
        record = self.ctx.record(speaker, t, "turn", params={
            "turn": t, "turns": self.total_steps, "name": speaker.name, "role": speaker.role})
        record.summary_id = summary.id if summary else None
        if held:
            record.recall = RecallRecord(cap=self.conv.recall_cap, held=held)
        return record

    def _overflow(self, record: ViewRecord, window: list[Contribution],
                  held: list[HeldRecall] | None = None) -> list[Contribution]:
        """The oldest messages that would not fit the view (none when everything fits).

        A cheap estimate first (the fixed messages, counted, plus each message's cached
        count); only a view near its budget is built for real to find out."""
        if not window:
            return []
        reader = self.ctx.agent(record.agent_id)
        fit = self._fit(reader)
        budget = fit.input_budget
        fixed = tokens.count_messages(render_messages(record, self.ctx.index), record.model)
        if fixed + self._window_tokens(window, reader, held or []) + ESTIMATE_MARGIN <= budget:
            return []
        scratch = record.model_copy(deep=True)
        try:
            self.ctx.engine.builder.build(scratch, window, budget, fit.stretch(reply_floor("turn", fit.max_tokens)))
        except ViewTooLarge:
            return list(window)  # nothing verbatim fits beside the rest: all of it goes into the summary
        dropped = set(scratch.dropped_ids)
        return [c for c in window if c.id in dropped]

    # ------------------------------------------------------------------ rolling the summary

    def _tokens(self, window: list[Contribution], reader: ResolvedAgent) -> int:
        builder = self.ctx.engine.builder
        return HEADER_TOKENS + sum(builder.item_tokens(c, reader.id, reader.model) for c in window)

    def _keep(self, window: list[Contribution], reader: ResolvedAgent, cap: int) -> int:
        """How many of the newest messages stay verbatim: at most `recent_messages`, within `cap` tokens."""
        builder = self.ctx.engine.builder
        used, kept = HEADER_TOKENS, 0
        for c in reversed(window[-self.conv.recent_messages:]):
            used += builder.item_tokens(c, reader.id, reader.model)
            if used > cap:
                break
            kept += 1
        return kept

    async def _roll_if_due(self, owner: ResolvedAgent, t: int, reader: ResolvedAgent,
                           step: int | None = None) -> Summary | None:
        """Roll `owner`'s summary when the window before turn `t` has grown past its count or
        its tokens (recorded at `step`, by default `t`)."""
        conv = self.conv
        summary = self.ctx.index.latest_summary.get(owner.id)
        window = self.ctx.index.messages_after(summary, t)
        trigger: SummaryTrigger | None = None
        cap = conv.window_cap  # the recall tier takes its share of `recent_tokens`
        if len(window) >= conv.recent_messages + conv.summary_every:
            trigger = "turns"
        elif self._tokens(window, reader) > cap:
            hysteresis = TOKEN_HYSTERESIS_6 if self.ctx.index.layout >= 6 else TOKEN_HYSTERESIS
            trigger, cap = "tokens", int(cap * hysteresis)
        if trigger is None:
            return summary
        keep = self._keep(window, reader, cap)
        fold = window[: len(window) - keep]
        if not fold:
            return summary
        asked = self._asked(window, summary, reader) if step is None else None
        return await self._roll(owner, step or t, fold, summary, trigger, asked=asked)

    def _asked(self, window: list[Contribution], summary: Summary | None,
               speaker: ResolvedAgent) -> tuple[ResolvedAgent, list[Contribution], list[HeldRecall]]:
        """Who writes a neutral summary rolled before `speaker`'s turn (layout 6), with its window
        and held recall blocks: the latest message's author, whose previous request lacks only that
        message (the speaker's lacks the last few); the speaker when that author is a person."""
        ids = {a.id: a for a in self.ctx.agents}
        last = ids.get(window[-1].agent_id) if window else None
        writer = last if last is not None and not last.is_person else speaker
        return writer, window, self._held(writer, window, summary)[0]

    async def _manual_rolls(self, t: int, step: int | None = None) -> None:
        """`/summarize` in a conversation rolls the summary forward now (at this turn boundary)."""
        ctx = self.ctx
        owners = [ctx.judge] if self.conv.summary_scope == "shared" else [*ctx.agents, ctx.judge]
        for owner in owners:
            requested, focus = ctx.summaries.take(owner.id)
            upto = ctx.summaries.take_from(owner.id)
            if self.conv.summary_scope == "shared":  # any agent's request rolls the one shared summary
                for a in ctx.agents:
                    more, f = ctx.summaries.take(a.id)
                    u = ctx.summaries.take_from(a.id)
                    requested, focus, upto = requested or more, focus or f, upto if upto is not None else u
            if not requested:
                continue
            summary = ctx.index.latest_summary.get(owner.id)
            window = ctx.index.messages_after(summary, t)
            whose = "the shared summary" if self.conv.summary_scope == "shared" else owner.id
            if upto is not None:  # `--from turn N`: everything before N, whatever the window's usual size
                fold = [c for c in window if c.round < upto]
                if not fold:
                    covered = f" (it covers turns 1–{window[0].round - 1})" if summary and window else ""
                    ctx.emit(Warning_(message=f"{NOTHING_TO_SUMMARIZE} before turn {upto} for {whose}: "
                                              f"no message before it is left out of the summary{covered}",
                                      agent_id=owner.id))
                    continue
            else:
                fold = window[: max(0, len(window) - self.conv.recent_messages)]
            if not fold and summary is None:
                ctx.emit(Warning_(message=f"{NOTHING_TO_SUMMARIZE} for {whose}: no message is older than "
                                          f"the last {self.conv.recent_messages}", agent_id=owner.id))
                continue
            await self._roll(owner, step or t, fold, summary, "manual", focus)
            if upto is not None:
                self._say_if_too_long(owner, window[len(fold):], upto)

    def _say_if_too_long(self, owner: ResolvedAgent, rest: list[Contribution], upto: int) -> None:
        """After `--from turn N`: warn when the turns kept verbatim outgrow the window, so the next
        roll will fold the oldest of them too (what the person asked for does not quite fit)."""
        conv = self.conv
        reader = self.ctx.agents[0] if owner.id == self.ctx.judge.id else owner
        if len(rest) < conv.recent_messages + conv.summary_every and self._tokens(rest, reader) <= conv.window_cap:
            return
        kept = f"turn {upto} is" if rest[-1].round == upto else f"turns {upto}–{rest[-1].round} are"
        self.ctx.emit(Warning_(message=f"{kept} more than the verbatim window holds "
                                       f"({conv.recent_messages + conv.summary_every - 1} messages, "
                                       f"{conv.window_cap:,} tokens): the next roll summarizes some of it too",
                               agent_id=owner.id))

    async def _roll(self, owner: ResolvedAgent, t: int, fold: list[Contribution], previous: Summary | None,
                    trigger: SummaryTrigger, focus: str | None = None,
                    asked: tuple[ResolvedAgent, list[Contribution], list[HeldRecall]] | None = None) -> Summary:
        """Fold `fold` into `previous` (rolling: the request holds the previous summary and the
        messages that aged out, never the whole transcript; in layout 4 their summary is appended
        to the previous one's blocks as a new block). In layout 6 a neutral one rolled before a turn
        is asked of a debater (`asked`, from `_asked`) as the continuation of its own view, which the
        provider serves nearly all of from its cache (`moot.core.context.view`)."""
        ctx = self.ctx
        conv = self.conv
        await ctx.gate.wait()
        shared = owner.id == ctx.judge.id
        writer, window, held = asked if asked and shared and ctx.index.layout >= 6 else (None, None, None)
        lens = ("neutrally, for all participants" if shared else
                f"from the point of view of {owner.name}, the {owner.role}: keep your own positions and "
                "commitments precise")
        cap, chars = self._summary_cap(owner), conv.summary_tokens * 5
        tier = (cap, chars) if ctx.index.layout >= 4 else (0, 0)  # append-only: one block's share of the cap
        if tier[0]:
            # Half of what the earlier blocks leave of the cap, and at least its `BLOCKS_PER_TIER`th:
            # the first block has the room a summary written whole would have had, later ones less.
            used = sum(tokens.count_text(b.text, owner.model) for b in (previous.blocks or [])) if previous else 0
            share = max(1 / BLOCKS_PER_TIER, (1 - used / cap) / 2)
            cap, chars = max(SUMMARY_FLOOR, int(cap * share)), max(100, int(chars * share))
        job = ctx.summaries.job(owner, step=t, trigger=trigger, items=fold, previous=previous, strategy="rolling",
                                focus=focus, max_tokens=cap, max_chars=chars,
                                context_tokens=conv.max_context_tokens, reserve=conv.summary_tokens,
                                task_key=f"{owner.id}/summarize_conversation", params={"lens": lens},
                                conversation=True, tier_tokens=tier[0], tier_chars=tier[1],
                                writer=writer if writer is not None and writer.id != owner.id else None,
                                window=window, held=held)
        return await ctx.summaries.make(job)

    def _summary_cap(self, owner: ResolvedAgent) -> int:
        """`summary_tokens`, or less where the turns that read the summary have less room: it gets
        half of what their prompts leave, the latest messages the other half."""
        ctx = self.ctx
        readers = ctx.agents if owner.id == ctx.judge.id else [owner]
        conv = self.conv
        caps = [ctx.summaries.reader_cap(a, "turn", "turn", share=0.5, context_tokens=conv.max_context_tokens,
                                         reply=conv.reserve_output_tokens,
                                         params={"turn": 1, "turns": self.total_steps, "name": a.name, "role": a.role})
                for a in readers]
        return min([conv.summary_tokens, *caps])

    # ------------------------------------------------------------------ the judge's material

    async def before_synthesis(self) -> None:
        """Bring the judge's window within bounds (and honour late requests) before it synthesizes."""
        ctx = self.ctx
        last = max(1, ctx.state.current_round)
        await self._manual_rolls(last + 1, step=last)
        await self._roll_if_due(ctx.judge, last + 1, ctx.judge, step=last)

    def _material(self, step: int) -> SynthesisInput:
        ctx = self.ctx
        summary = ctx.index.latest_summary.get(ctx.judge.id)
        window = ctx.index.messages_after(summary, step + 1)
        return SynthesisInput(step, summary.id if summary else None, [c.id for c in window], transcript=True)

    def synthesis_input(self) -> SynthesisInput | None:
        if self.ctx.index.message_count == 0:
            return None
        return self._material(max(1, self.ctx.state.current_round))

    def score_input(self, step: int) -> SynthesisInput:
        return self._material(step)
