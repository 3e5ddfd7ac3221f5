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
import unicodedata
import weakref
from collections.abc import Iterator

import phonenumbers

from lab_utils.files import utf8_encodable
from lab_utils.memory import KINDS, Memory, MemoryStore
from lab_utils.text import tokenize

SIM_DUP = 0.8  # token Jaccard at or above this is a duplicate (>=, not >)
CAP = 200  # the most memories a store keeps

REJECTED_UNVERIFIED = "rejected: unverified claim"

# -- redact --------------------------------------------------------------------------------

# Text is NFC-normalized first: "josé" typed as "jose" + a combining accent is the same address.
# Every quantifier that can meet a long run is possessive (*+, ++) and every pattern starts only
# where a run starts (the lookbehinds), so redact() stays linear on a pasted blob.

# An email: a quoted local part ("john doe"@example.com) or a run of what RFC 5322 allows before
# the "@" (letters of any script, digits, !#$%&'*+-/=?^_`{|}~ and dots), then a domain of labels
# in any script, or an address literal ([127.0.0.1]).
_LABEL = r"[^\s@<>()\[\]{},;:\"'.!?/\\|=*+&%$#~^`]++"
_EMAIL = re.compile(r'(?:"(?:[^"\\\r\n]|\\.){1,64}+"|(?<![^\s<>()\[\],;:"])[^\s@<>()\[\],;:"]++)'
                    rf"@(?:\[[^\]\s]{{1,64}}\]|{_LABEL}(?:\.{_LABEL})++)")

# What people put between the digit groups of a phone, including "/" (0221/1234567) and the
# non-breaking, narrow no-break and thin spaces and the dashes of text pasted from documents.
_SEP = r"[ \t().\-/\u00a0\u202f\u2009\u2010\u2011\u2012\u2013]"
_EXTENSION = r"(?i:[ \t]*+(?:;ext=|ext\.?|extension|x|\#)[ \t]*+\d{1,6}+)"
# A phone candidate: optional tel: (RFC 3966), "+" or "(", digit groups joined by separators,
# an optional extension. It may not continue an identifier, a version or a decimal (t-8801,
# C-4471, v2.1, #4e32ff), nor a number with thousands (1,234,567); after a comma that ends a
# word or an email it may start (jane@acme.com,+380671234455). Whether it IS a phone is decided afterwards, in Python (_is_phone):
# a pattern that could fail at its end would be retried from every later digit (quadratic).
_CANDIDATE = re.compile(rf"(?<![\w+\-/.#])(?<!\d,)(?:tel:)?+[+(]?+\+?+\d(?:{_SEP}*+\d)*+{_EXTENSION}?+")

MIN_PHONE_DIGITS = 7  # a run this long is a phone unless it has the shape of something else
MIN_SHORT_PHONE_DIGITS = 5  # small territories' numbers (+290 22158): only with a phone word near

_D = r"(?:0?[1-9]|[12]\d|3[01])"  # day
_M = r"(?:0?[1-9]|1[0-2])"  # month
_Y = r"(?:1[89]\d\d|20\d\d)"  # a plausible four-digit year
_DATE = (rf"(?:{_Y}(?P<s1>[-/.]){_M}(?P=s1){_D}|{_D}(?P<s2>[-/.]){_M}(?P=s2)(?:{_Y}|\d\d)"
         rf"|{_M}(?P<s3>[-/.]){_D}(?P=s3)(?:{_Y}|\d\d))")
# Shapes of numbers that are not personal, matched against the whole candidate:
_NOT_A_PHONE = re.compile(
    rf"{_DATE}"                                     # 2026-01-05, 21.05.2021, 3/15/2024, 1.19.14
    r"|(?:0|[1-9]\d*)\.\d+"                          # a decimal: 3.14159265 (not 010.0000)
    r"|\d+(?:\.\d+)*\.\d\.\d+(?:\.\d+)*"             # a version with a one-digit part: 10.0.19041
    r"|1\d{9}|1\d{12}"                              # a Unix timestamp in s or ms (2001-2033)
    r"|\d{5}-\d{4}"                                  # a US ZIP+4 code: 02540-4119
    r"|(?P<low>\d{4,})\s*[-\u2013]\s*(?P<high>\d{4,})"  # a range, checked in _is_range
)
# A date that opens a run of digit groups, then a space: it is no part of the number after it ("opened
# 2026-01-05 5550134" holds one phone, 5550134; "2026-01-05 09:14" no phone at all).
_LEADING_DATE = re.compile(rf"\(?{_DATE}\)?\s+(?=[+(]?\d)")
# A compact date, then an hour: "20120102 08" + ":00".
_DATE_THEN_HOUR = re.compile(rf"{_Y}(?:0[1-9]|1[0-2])(?:0[1-9]|[12]\d|3[01])(?:T|\s+)\d{{1,2}}")
# Labels that say what the number is: an identifier, a code, money.
_LABELLED = re.compile(
    r"(?i:\b(?:isbn(?:-1[03])?|issn|ean(?:-?13)?|gtin|upc|barcode|order|invoice|inv|ticket|case|ref|sku"
    r"|tracking|version|build|release)\b\W{0,4}(?:(?:no|nr|number|id)\b\W{0,3})?"
    r"|[$€£¥₴₹]\s?|\b(?:usd|eur|gbp|uah|chf|pln)\s?)$")
_CURRENCY_AFTER = re.compile(r"(?i:\s?(?:[$€£¥₴₹]|(?:usd|eur|gbp|uah|chf|pln)\b))")
# Words that say a number nearby (40 characters either side) is a phone: they admit the short
# numbers of small territories.
_PHONE_WORD = re.compile(r"(?i:\b(?:call|phone|tel|telephone|mobile|cell|fax|whatsapp|sms|dial|ring"
                         r"|callback|number)\b)")


def _digits(candidate: str) -> str:
    return "".join(c for c in candidate if c.isdigit())


def _ean_checksum_ok(digits: str) -> bool:
    total = sum(int(d) * (3 if i % 2 else 1) for i, d in enumerate(digits[:-1]))
    return (10 - total % 10) % 10 == int(digits[-1])


def _is_isbn(number: str) -> bool:
    """An ISBN-13 (978/979, EAN check digit) or an ISBN-10 in its four hyphenated groups."""
    digits = _digits(number)
    if len(digits) == 13 and digits.startswith(("978", "979")):
        return _ean_checksum_ok(digits)
    # (An ISBN-10 whose check digit is X ends in "-X": it continues as a word, see _is_phone.)
    return len(digits) == 10 and re.fullmatch(r"\d{1,5}-\d{1,7}-\d{1,7}-\d", number) is not None \
        and sum((10 - i) * int(d) for i, d in enumerate(digits)) % 11 == 0


def _is_range(match: re.Match) -> bool:
    """1000-2000, 1998-2024: two numbers of one length, rising, round or years (a phone's are not)."""
    low, high = match.group("low"), match.group("high")
    years = all(re.fullmatch(_Y, n) for n in (low, high))
    return len(low) == len(high) and int(low) < int(high) and (years or high.endswith("00"))


def _is_international(candidate: str) -> bool:
    return "+" in candidate or candidate.lstrip("(").startswith(("00", "011"))


def _possible_international(candidate: str) -> bool:
    """Is the number a possible one for its country code, as libphonenumber knows them?"""
    digits = _digits(candidate)
    digits = digits[2:] if digits.startswith("00") else digits[3:] if digits.startswith("011") else digits
    try:
        return phonenumbers.is_possible_number(phonenumbers.parse("+" + digits))
    except phonenumbers.NumberParseException:
        return False


def _is_phone(text: str, match: re.Match) -> bool:
    candidate = match.group().removeprefix("tel:")
    number = re.sub(_EXTENSION + "$", "", candidate).strip("()+ ")
    before, after = text[max(0, match.start() - 40):match.start()], text[match.end():match.end() + 40]
    if re.match(r"[-./]?[^\W_]", after) or before.endswith(":") and before[-2:-1].isdigit():
        return False  # it continues a word or a time: 2024-03-15T14:30Z, a SHA, 1.2.post1, 09:14:07.123
    if after.startswith(":") and _DATE_THEN_HOUR.fullmatch(number):  # 20120102 08:00
        return False
    if _LABELLED.search(before) or _CURRENCY_AFTER.match(after):
        return False
    if _is_international(candidate):
        return sum(map(str.isdigit, number)) >= MIN_PHONE_DIGITS or _possible_international(number)
    shape = _NOT_A_PHONE.fullmatch(number)
    if shape and (shape.group("low") is None or _is_range(shape)) or _is_isbn(number):
        return False
    digits = sum(map(str.isdigit, number))
    return digits >= MIN_PHONE_DIGITS or (
        digits >= MIN_SHORT_PHONE_DIGITS and _PHONE_WORD.search(before + " " + after) is not None)


def _pii_spans(text: str) -> list[tuple[int, int, str]]:
    """(start, end, placeholder) of every email and phone in `text` (already NFC), in order."""
    spans = [(m.start(), m.end(), "[EMAIL]") for m in _EMAIL.finditer(text)]
    # Same offsets, no digits, and no separator: the numbers on either side of an email stay apart.
    without_emails = _EMAIL.sub(lambda m: "\0" * len(m.group()), text)
    spans += [(m.start(), m.end(), "[PHONE]") for m in _phone_candidates(without_emails)
              if _is_phone(without_emails, m)]
    return sorted(spans)


def _phone_candidates(text: str) -> Iterator[re.Match]:
    """Each run of digit groups that may be a phone, less the dates that open it (_LEADING_DATE)."""
    for match in _CANDIDATE.finditer(text):
        while (date := _LEADING_DATE.match(match.group())) is not None:
            match = _CANDIDATE.match(text, match.start() + date.end())
        yield match


def redact(text: str) -> str:
    """Replace emails by [EMAIL] and phone numbers (local or international) by [PHONE].

    The text is NFC-normalized first, so the result is NFC too.
    """
    text = unicodedata.normalize("NFC", text)
    out, last = [], 0
    for start, end, placeholder in _pii_spans(text):
        out += [text[last:start], placeholder]
        last = end
    return "".join(out) + text[last:]


def find_pii(text: str) -> list[str]:
    """The emails and phone numbers in `text` (NFC-normalized), in order: what redact replaces."""
    text = unicodedata.normalize("NFC", text)
    return [text[start:end] for start, end, _ in _pii_spans(text)]


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
    "rejected: cap 200 reached and facts are never evicted". A fact whose verified is false in any
    way is rejected; other bad input (unknown kind, blank text, no source, a lone surrogate, a
    verified that is no bool) raises ValueError and stores nothing.
    """
    if kind == "fact" and not verified:  # the gate first, as lesson 03 states it: None and 0 reject a fact too
        return REJECTED_UNVERIFIED
    _check_input(text, kind, source, verified)
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
    """Remove every memory that came from `source`; returns how many it removed. Atomic."""
    return store._rewrite([m for m in store.items if m.source != source])
