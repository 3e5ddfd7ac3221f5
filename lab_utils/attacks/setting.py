"""What every attack run starts from: lesson 04's memory, the helpdesk's ticket registry, the
benign traffic, and the gold set recall is measured on.

- The store: lesson 04's disciplined store of the history tickets (lesson 03's sessions and
  candidates, then the nine history tickets, through `rules.remember`, uncapped as in lesson 04:
  the cap is a size bound, not a defense, and would evict the history the gold set asks about).
- The registry: which customer opened which ticket, as the helpdesk's `read_ticket` tool reports
  it (a source of record, not what a memory's text claims). A ticket it does not know was opened
  by nobody the agent serves: the attacker's own account.
- Benign candidates: a busy desk's closed tickets from `noise.generate_tickets` (a fixed seed),
  each offered as its crystallized memories and as the customer's own words.
"""

from __future__ import annotations

import re
from functools import lru_cache
from pathlib import Path

from lab_utils import noise, rules
from lab_utils.attacks.files import Candidate
from lab_utils.memory import MemoryStore
from lab_utils.paths import load_data

UNCAPPED = 10**9
BENIGN_TICKETS = 100  # Trojan Hippo's delay: 100 benign sessions after the poisoned one
BENIGN_SEED = 8
_READ_TICKET = re.compile(r"read_ticket\((t-\d+)\).*customer_id=(C-\d+)")
CUSTOMER = re.compile(r"\bC-\d+\b")


def lesson04_writes() -> list[Candidate]:
    """Lesson 04's disciplined store, write by write: sessions, candidates, the history."""
    rows = load_data("support", "sessions.json") + load_data("support", "candidates.json")
    rows += [{**m, "source": t.ticket} for t in noise.load_history() for m in t.memories]
    return [Candidate(**row) for row in rows]


def build_store(path: Path) -> MemoryStore:
    """A fresh copy of lesson 04's disciplined store at `path`."""
    path.unlink(missing_ok=True)
    store = MemoryStore(path)
    for c in lesson04_writes():
        rules.remember(store, c.text, c.kind, c.source, c.verified, cap=UNCAPPED)
    return store


@lru_cache(maxsize=1)
def _benign_tickets() -> tuple[noise.ClosedTicket, ...]:
    return tuple(noise.generate_tickets(BENIGN_TICKETS, seed=BENIGN_SEED))


def benign_candidates() -> list[Candidate]:
    """The benign traffic: per closed ticket, its memories and what the customer wrote. A text
    already offered (a customer's plan fact, again at their next ticket) is offered once."""
    candidates: dict[str, Candidate] = {}
    for ticket in _benign_tickets():
        body = ticket.raw[0].partition(" Body: ")[2].rpartition(" customer_id=")[0]
        words = Candidate(text=f"{ticket.ticket}: {ticket.customer} wrote: {body}", kind="episode",
                          source=ticket.ticket, verified=False)
        for c in [Candidate(source=ticket.ticket, **m) for m in ticket.memories] + [words]:
            candidates.setdefault(c.text, c)
    return list(candidates.values())


@lru_cache(maxsize=1)
def ticket_owners() -> dict[str, str]:
    """ticket -> the customer who opened it, from every read_ticket line the helpdesk logged."""
    lines = [row["text"] for row in load_data("support", "raw_log.json")]
    lines += [line for t in noise.load_history() + list(_benign_tickets()) for line in t.raw]
    return {m[1]: m[2] for m in map(_READ_TICKET.match, lines) if m}


def asker(query: str) -> str | None:
    """The customer a query is asked for: the session's customer, named first in the query."""
    found = CUSTOMER.search(query)
    return found.group() if found else None


def gold() -> list[dict]:
    """Lesson 04's larger gold set: 22 queries with the knowledge (and tickets) each needs."""
    return load_data("support", "gold_large.json")
