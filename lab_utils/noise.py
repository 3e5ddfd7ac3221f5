"""Closed tickets as both kinds of memory see them: the known history, and generated noise.

Each closed ticket has its raw observations (what the naive write stores, line by line) and
its crystallized memories (what the disciplined write is offered). The known history is data
(data/support/history.json). The noise is generated from a seed: a busy desk's other
tickets — many of them complaints about exports with other causes, from other customers,
plus admin requests from the known customers — so a scaling experiment has something to
drown in. The same seed always gives the same tickets.
"""

from __future__ import annotations

import json
import random
from dataclasses import dataclass
from pathlib import Path

from lab_utils.paths import DATA_DIR

HISTORY_FILE = DATA_DIR / "support" / "history.json"
FIRST_NOISE_TICKET = 10_000  # above every ticket id of the known history


@dataclass(frozen=True)
class ClosedTicket:
    ticket: str
    customer: str
    raw: list[str]  # observations of the loop, one per line
    memories: list[dict]  # crystallized: {"text", "kind", "verified"}


def load_history(path: Path = HISTORY_FILE) -> list[ClosedTicket]:
    return [ClosedTicket(**t) for t in json.loads(Path(path).read_text(encoding="utf-8"))]


@dataclass(frozen=True)
class _Problem:
    subjects: tuple[str, ...]
    bodies: tuple[str, ...]
    search: str
    kb: str
    cause: str
    fix: str
    guess: str | None = None
    # May a known customer file it? Not the problems the history already resolved for them
    # (an empty export with another cause would contradict t-8801).
    for_known_customers: bool = False


_PROBLEMS = (
    _Problem(("Export is empty", "Empty export file", "Export has no rows"),
             ("The export finishes but the file is empty.", "Our export file is empty again.",
              "Downloaded the export, there are no rows in it."),
             "export empty file", "kb-102", "the date range of the export was in the future",
             "reset the date range", "the export service is probably down"),
    _Problem(("Export stuck", "Export never finishes", "Export hangs at 0%"),
             ("The export has been at 0% for an hour.", "Export job stuck since this morning."),
             "export stuck", "kb-105", "a paused sync job blocked the export queue",
             "resumed the sync job, the export completed", for_known_customers=True),
    _Problem(("Export missing columns", "Columns missing in export"),
             ("Our custom fields are not in the exported file.", "The export lost two columns."),
             "export missing columns", "kb-107", "custom fields were hidden in the export template",
             "made the fields visible in the template", "the plan probably does not export custom fields",
             for_known_customers=True),
    _Problem(("Export emailed to the wrong person", "Who gets the export email"),
             ("The weekly export email goes to a former employee.",),
             "export email recipient", "kb-109", "the export recipient was a deactivated user",
             "changed the recipient to the new admin", for_known_customers=True),
    _Problem(("Cannot log in", "Login fails", "Password not accepted"),
             ("I cannot log in since yesterday.", "My password is not accepted anymore."),
             "login password expired", "kb-201", "the password had expired under the workspace policy",
             "sent a reset link", for_known_customers=True),
    _Problem(("Add seats", "Need more seats"),
             ("We hired five people, please add seats.", "How do we add seats to our plan?"),
             "add seats", "kb-402", "the seat limit of the plan was reached",
             "added seats and prorated the invoice", for_known_customers=True),
    _Problem(("Change billing address", "Wrong address on invoice"),
             ("We moved offices, please update the billing address.",),
             "billing address change", "kb-405", "the billing address was outdated",
             "updated the address and reissued the last invoice", for_known_customers=True),
    _Problem(("Rotate API key", "API key leaked"),
             ("We accidentally pushed our API key to a public repository.",),
             "rotate api key", "kb-331", "a leaked API key", "revoked the key and issued a new one",
             for_known_customers=True),
    _Problem(("Slow search", "Search takes long"),
             ("Searching records takes ten seconds.", "Search is very slow today."),
             "slow search", "kb-515", "a reindex was running after the migration",
             "waited for the reindex to finish", "the plan probably has a lower search quota"),
    _Problem(("Import failed", "CSV import error"),
             ("Importing our CSV fails at row 1.", "The import says the file is invalid."),
             "csv import error", "kb-120", "the file used semicolons as separators",
             "chose the semicolon separator in the import dialog"),
    _Problem(("Notifications missing", "No email notifications"),
             ("We no longer get notification emails.",),
             "notifications not sent", "kb-610", "notification emails landed in the spam folder",
             "allow-listed the sender domain", for_known_customers=True),
)

_PLANS = (("starter", 1, 5), ("team", 5, 15), ("pro", 8, 30), ("business", 20, 80), ("enterprise", 40, 400))

# Known customers keep the plan the history gives them.
_KNOWN_PLANS = {"C-4471": ("enterprise", 40), "C-2210": ("pro", 12), "C-3302": ("pro", 8),
                "C-5120": ("business", 30), "C-6078": ("team", 5), "C-7311": ("business", 25),
                "C-8004": ("starter", 3), "C-9130": ("enterprise", 120)}
KNOWN_SHARE = 0.15  # how often a noise ticket comes from a known customer


def _ticket(rng: random.Random, number: int, customer: str, plan: tuple[str, int],
            problems: tuple[_Problem, ...]) -> ClosedTicket:
    p = rng.choice(problems)
    ticket = f"t-{number}"
    subject, body = rng.choice(p.subjects), rng.choice(p.bodies)
    name, seats = plan
    raw = [f"read_ticket({ticket}): Subject: {subject}. Body: {body} customer_id={customer}",
           f"get_subscription({customer}): plan={name}, status=active, seats={seats}"]
    if p.guess and rng.random() < 0.5:
        raw.append(f"guess: {p.guess}")
    raw += [f'search_kb("{p.search}") -> {p.kb}',
            f"close_ticket({ticket}): cause was {p.cause}, {p.fix} ({p.kb})"]
    episode = (f"{ticket}: {customer} reported: {subject.lower()}. Cause: {p.cause}. "
               f"{p.fix.capitalize()} ({p.kb}); confirmed.")
    memories = [{"text": episode, "kind": "episode", "verified": True}]
    if customer not in _KNOWN_PLANS:
        # The history already holds the known customers' plans; a paraphrase of it would
        # test dedupe, not retrieval.
        memories.append({"text": f"{customer} is on the {name} plan with {seats} seats.",
                         "kind": "fact", "verified": True})
    return ClosedTicket(ticket, customer, raw, memories)


def generate_tickets(n: int, seed: int = 0) -> list[ClosedTicket]:
    """n closed tickets of a busy desk, the same for the same seed."""
    rng = random.Random(seed)
    customers = sorted({f"C-{rng.randrange(1000, 10000)}" for _ in range(max(10, n // 3))} - set(_KNOWN_PLANS))
    plans = {}
    for customer in customers:
        name, low, high = rng.choice(_PLANS)
        plans[customer] = (name, rng.randint(low, high))
    known_problems = tuple(p for p in _PROBLEMS if p.for_known_customers)
    tickets = []
    for number in range(FIRST_NOISE_TICKET, FIRST_NOISE_TICKET + n):
        if rng.random() < KNOWN_SHARE:
            customer = rng.choice(sorted(_KNOWN_PLANS))
            plan, problems = _KNOWN_PLANS[customer], known_problems
        else:
            customer = rng.choice(customers)
            plan, problems = plans[customer], _PROBLEMS
        tickets.append(_ticket(rng, number, customer, plan, problems))
    return tickets
