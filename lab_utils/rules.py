"""The disciplined write: rules applied where memory is written, not where it is read.

`remember` runs four rules in a fixed order and says what happened:

1. gate    a fact that is not verified is rejected: a guess never becomes "experience";
2. redact  emails and phone numbers become [EMAIL] and [PHONE] before anything reaches disk;
3. dedupe  a memory whose token Jaccard similarity with an existing one is >= SIM_DUP is
           skipped, naming the memory it repeats;
4. cap     at CAP memories the oldest episode leaves to make room; facts stay. When only
           facts are left, the new memory is refused (and nothing is removed): the cap is
           a bound, and verified facts are worth more than whatever came last.

`forget_source` is provenance in action: one call removes every memory of a ticket,
through the store's atomic rewrite.
"""

from __future__ import annotations

import heapq
import math
import re
import weakref

from lab_utils.files import utf8_encodable
from lab_utils.memory import KINDS, Memory, MemoryStore
from lab_utils.text import tokenize

SIM_DUP = 0.8  # token Jaccard at or above this is a duplicate (>=, not >)
CAP = 200  # the most memories a store keeps

REJECTED_UNVERIFIED = "rejected: unverified claim"

# -- redact --------------------------------------------------------------------------------

# Every quantifier that can meet a long run is possessive (*+, ++): no backtracking into it,
# so redact() stays linear on a pasted blob (a megabyte without a space, a long URL, base64).
# An email starts only where a run of its characters starts (the lookbehind): a match that
# starts inside the run would end at the same "@" anyway, and trying each start is quadratic.
_EMAIL = re.compile(r"(?<![\w.+-])[\w.+-]++@[\w-]++(?:\.[\w-]++)+")

# What people put between the digit groups of a phone, including the non-breaking, narrow
# no-break and thin spaces and the non-breaking and en dashes of text pasted from documents.
_SEP = r"[ \t().\-\u00a0\u202f\u2009\u2011\u2013]"

# A real-looking calendar date: month 01-12, day 01-31 (0612-34-56 is no date).
_DATE = r"\d{4}-(?:0[1-9]|1[0-2])-(?:0[1-9]|[12]\d|3[01])"

# One pattern, two alternatives tried at the same place: a date is consumed first and kept, so
# 2026-01-05 is never read as a phone number. A date with a time is kept whatever follows; a
# bare date only if no further digit group follows it (another date may: a range), so
# 0612-12-04-78 and 0049-10-12 34 567 are phones. Otherwise a phone candidate: an optional +
# or "(", then digit groups joined by separators. It may not continue an identifier (t-8801,
# C-4471, kb-101 stay whole).
_DATE_OR_PHONE = re.compile(
    rf"(?P<date>\b{_DATE}(?:[T ]\d{{2}}:\d{{2}}(?::\d{{2}})?\b|\b(?!{_SEP}(?!{_DATE})\d)))"
    rf"|(?<![\w+\-])(?P<phone>[+(]?\d(?:{_SEP}*+\d)++)"
)
MIN_PHONE_DIGITS = 7  # shorter digit runs are counts, order numbers and ticket numbers


def _is_phone(candidate: str) -> bool:
    # Erring on the side of [PHONE]: a long order number lost is cheap, a phone on disk is not.
    return sum(c.isdigit() for c in candidate) >= MIN_PHONE_DIGITS


def _phone_or_keep(match: re.Match) -> str:
    phone = match.group("phone")
    return "[PHONE]" if phone is not None and _is_phone(phone) else match.group(0)


def redact(text: str) -> str:
    """Replace emails by [EMAIL] and phone numbers (local or international) by [PHONE]."""
    return _DATE_OR_PHONE.sub(_phone_or_keep, _EMAIL.sub("[EMAIL]", text))


def find_pii(text: str) -> list[str]:
    """The emails and phone numbers in `text`, as written, in order: what redact replaces."""
    found = [(m.start(), m.group()) for m in _EMAIL.finditer(text)]
    without_emails = _EMAIL.sub(lambda m: " " * len(m.group()), text)  # same offsets, no digits
    found += [(m.start(), m.group("phone")) for m in _DATE_OR_PHONE.finditer(without_emails)
              if m.group("phone") is not None and _is_phone(m.group("phone"))]
    return [span for _, span in sorted(found)]


# -- what Rule 1 keeps out: raw observations ----------------------------------------------

# A trace line of the agent loop: a tool call `name(args):` / `name(args) ->`, or a label of
# the loop itself (guess:, reply:, note:). Knowledge reads as a sentence instead.
_RAW = re.compile(r"\s*(?:[a-z_][a-z0-9_]*\([^()]*\)\s*(?::|->)|(?i:guess|reply|note)\s*:)")


def is_raw_observation(text: str) -> bool:
    """Is `text` a line of the loop's trace rather than a crystallized memory?"""
    return _RAW.match(text) is not None


# -- dedupe --------------------------------------------------------------------------------


class _TokenPostings:
    """Which memories hold each token, for one store, kept up to date as the store grows.

    A memory B is a duplicate of a new text A only if Jaccard(A, B) >= SIM_DUP, which needs
    |A & B| >= SIM_DUP * |A|: B shares at least `need` of A's tokens. Then B must contain at
    least one of ANY |A| - need + 1 tokens of A (otherwise it misses more than |A| - need).
    So only the posting lists of A's rarest |A| - need + 1 tokens are read, and each memory
    found there is checked exactly, on token sets kept from indexing (the Jaccard of
    text.similarity, without tokenizing the memory again): the same decision as a full
    scan, without touching the memories that share only common words.
    """

    def __init__(self) -> None:
        self._items: list[Memory] | None = None
        self._seen = 0  # how many of self._items are indexed
        self._postings: dict[str, list[int]] = {}  # token -> positions in store.items
        self._token_sets: list[frozenset[str]] = []  # position -> the memory's tokens
        self._last: Memory | None = None  # the last indexed memory, to notice a rewrite

    def _refresh(self, items: list[Memory]) -> None:
        grew_only = items is self._items and len(items) >= self._seen and (
            self._seen == 0 or items[self._seen - 1] is self._last)
        if not grew_only:  # a rewrite (forget_source, the cap) replaced the list: start over
            self._items, self._seen, self._postings, self._token_sets = items, 0, {}, []
        for pos in range(self._seen, len(items)):
            tokens = frozenset(tokenize(items[pos].text))
            self._token_sets.append(tokens)
            for token in tokens:
                self._postings.setdefault(token, []).append(pos)
        self._seen = len(items)
        self._last = items[-1] if items else None

    def first_duplicate(self, items: list[Memory], text: str, threshold: float) -> Memory | None:
        """The earliest memory in store order whose similarity to `text` is >= threshold."""
        self._refresh(items)
        tokens = set(tokenize(text))
        if not tokens:
            return None  # similarity() is 0 for a text without tokens
        # Rounding can only lower `need`: a few extra candidates, never a missed duplicate.
        need = max(1, math.ceil(threshold * len(tokens) - 1e-9))
        rarest = sorted(tokens, key=lambda t: (len(self._postings.get(t, ())), t))
        candidates = {pos for t in rarest[: len(tokens) - need + 1] for pos in self._postings.get(t, ())}
        for pos in sorted(candidates):
            shared = len(tokens & self._token_sets[pos])
            if shared / (len(tokens) + len(self._token_sets[pos]) - shared) >= threshold:
                return items[pos]
        return None


_POSTINGS: weakref.WeakKeyDictionary[MemoryStore, _TokenPostings] = weakref.WeakKeyDictionary()


def find_duplicate(store: MemoryStore, text: str, threshold: float = SIM_DUP) -> Memory | None:
    """The first memory `text` repeats (similarity >= threshold), or None."""
    postings = _POSTINGS.setdefault(store, _TokenPostings())
    return postings.first_duplicate(store.items, text, threshold)


# -- the write -----------------------------------------------------------------------------


def _check_input(text: str, kind: str, source: str, verified: bool) -> None:
    if kind not in KINDS:
        raise ValueError(f"kind must be one of {KINDS}, not {kind!r}")
    if not isinstance(text, str) or not text.strip():
        raise ValueError(f"text must be a non-empty string, not {text!r}")
    if not isinstance(source, str) or not source.strip():
        raise ValueError(f"source (the ticket a memory comes from) is required, not {source!r}")
    # A lone surrogate ("\ud800") cannot be written as UTF-8: refuse it here, not mid-write.
    for name, value in (("text", text), ("source", source)):
        if not utf8_encodable(value):
            raise ValueError(f"{name} must be valid Unicode text, but it holds a lone surrogate "
                             "(such as \\ud800) that no UTF-8 file can store")
    if not isinstance(verified, bool):
        # "false" is truthy: a string here would slip a guess through the gate.
        raise ValueError(f"verified must be True or False, not {verified!r}")


def _oldest_episodes(store: MemoryStore, n: int) -> list[Memory]:
    """The n oldest episodes (fewer if there are fewer); equal times keep store order."""
    return heapq.nsmallest(n, (m for m in store.items if m.kind == "episode"), key=lambda m: m.ts)


def remember(store: MemoryStore, text: str, kind: str, source: str, verified: bool = False,
             *, cap: int = CAP) -> str:
    """Write one memory through gate -> redact -> dedupe -> cap; returns what happened.

    "stored m-005", "rejected: unverified claim", "duplicate of m-002, skipped",
    "stored m-201 (cap 200: evicted m-001, the oldest episode)" or
    "rejected: cap 200 reached and facts are never evicted". Bad input (unknown kind, blank
    text, no source, a lone surrogate, a non-bool verified) raises ValueError and stores nothing.
    """
    _check_input(text, kind, source, verified)
    if kind == "fact" and not verified:
        return REJECTED_UNVERIFIED
    text = redact(text)
    duplicate = find_duplicate(store, text)
    if duplicate is not None:
        return f"duplicate of {duplicate.id}, skipped"
    evicted = ""
    excess = len(store.items) + 1 - cap  # how many must leave to make room
    if excess > 0:
        oldest = _oldest_episodes(store, excess)
        if len(oldest) < excess:  # refuse before removing anything
            return f"rejected: cap {cap} reached and facts are never evicted"
        gone = [m.id for m in oldest]
        store._rewrite([m for m in store.items if m.id not in gone])
        evicted = f" (cap {cap}: evicted {', '.join(gone)}, the oldest episode{'s' * (len(gone) > 1)})"
    return f"stored {store._append(kind, text, source, verified).id}{evicted}"


def forget_source(store: MemoryStore, source: str) -> int:
    """Remove every memory that came from `source`; returns how many left. Atomic."""
    return store._rewrite([m for m in store.items if m.source != source])
