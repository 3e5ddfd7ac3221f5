"""The packet: what the reflecting model reads, recent activity under a token cap.

A few recent conversations plus system events (real and transient errors, skill reads,
hand edits, aborts), in time order. The whole history would not fit and would bury the
few runs that matter, so the packet keeps at most `max_conversations` conversations and,
while it is over `token_cap`, drops its oldest item.
"""

from __future__ import annotations

import datetime as dt
import math
from collections import Counter
from dataclasses import dataclass
from typing import Iterable, Literal

from lab_utils.reflection.records import RunRecord

MAX_CONVERSATIONS = 6
TOKEN_CAP = 10_000


def estimate_tokens(text: str) -> int:
    """A fixed, cheap estimate: one token per CJK character, one per 4 other characters.

    Real tokenizers differ by a few tens of percent; a cap needs a bound, not a count.
    """
    cjk = sum(1 for ch in text if "\u2e80" <= ch <= "\u9fff" or "\uff00" <= ch <= "\uffef")
    return cjk + math.ceil((len(text) - cjk) / 4)


@dataclass(frozen=True)
class PacketItem:
    at: dt.datetime
    kind: Literal["conversation", "event"]
    run_id: str
    text: str

    @property
    def tokens(self) -> int:
        return estimate_tokens(self.text)


@dataclass(frozen=True)
class Packet:
    items: tuple[PacketItem, ...]
    dropped: int  # items left out to stay under the cap
    token_cap: int

    @property
    def tokens(self) -> int:
        return sum(item.tokens for item in self.items)

    def render(self) -> str:
        return "\n".join(item.text for item in self.items)


def _stamp(at: dt.datetime) -> str:
    return at.strftime("%Y-%m-%d %H:%M")


def conversation(run: RunRecord) -> PacketItem:
    ticket = f" (ticket {run.ticket})" if run.ticket else ""
    tools = ", ".join(call.name for call in run.tool_calls) or "none"
    lines = [f"[{_stamp(run.started_at)}] conversation {run.run_id}{ticket}; tools: {tools}; "
             f"outcome: {run.outcome}"]
    lines += [f"  {turn.role}: {turn.text}" for turn in run.messages]
    return PacketItem(run.started_at, "conversation", run.run_id, "\n".join(lines))


def events(run: RunRecord) -> list[PacketItem]:
    """The system events of a run, stamped when it ended."""
    facts = [f"tool {call.name} failed: {call.error} (real error)" + (f": {call.detail}" if call.detail else "")
             for call in run.tool_calls if call.real_error]
    transient = Counter(call.error for call in run.tool_calls if call.transient)
    if transient:
        kinds = ", ".join(f"{kind} x{n}" for kind, n in sorted(transient.items()))
        count = transient.total()
        facts.append(f"{count} transient error{'s' if count > 1 else ''} ({kinds}): "
                     "the environment, not the agent")
    facts += [f"read skill {name}" for name in run.skills_read]
    if run.user_edited:
        facts.append("a human edited the result by hand")
    if run.outcome == "aborted":
        facts.append("the user aborted the run")
    return [PacketItem(run.ended_at, "event", run.run_id, f"[{_stamp(run.ended_at)}] {run.run_id}: {fact}")
            for fact in facts]


def build_packet(runs: Iterable[RunRecord], *, max_conversations: int = MAX_CONVERSATIONS,
                 token_cap: int = TOKEN_CAP) -> Packet:
    runs = sorted(runs, key=lambda r: (r.ended_at, r.run_id))
    recent = runs[-max_conversations:] if max_conversations else []
    items = [conversation(run) for run in recent] + [e for run in runs for e in events(run)]
    # Stable sort: a run's conversation (stamped at its start) comes before its events.
    items.sort(key=lambda item: item.at)
    total = sum(item.tokens for item in items)
    dropped = 0
    while items and total > token_cap:
        total -= items.pop(0).tokens
        dropped += 1
    return Packet(tuple(items), dropped, token_cap)
