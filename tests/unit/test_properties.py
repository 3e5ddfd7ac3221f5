"""Property tests for COURSE.md §7 that were still missing.

Already property-tested elsewhere, not repeated here:
- a query never returns another owner's record:
  test_temporal_properties.py::test_no_query_ever_returns_another_owners_record
- no patch naming anything outside the five settings passes validation (the proposer cannot
  widen its own permissions): test_proposer_validator.py::
  test_no_patch_naming_anything_outside_the_five_settings_passes, and
  test_whatever_passes_changes_one_or_two_settings_within_bounds
- redact() on a bare phone number or email: test_rules.py::test_no_phone_digits_survive_redact,
  test_no_email_survives_redact

Added here: PII embedded in support sentences never reaches the file through remember()
(the raw bytes of memory.jsonl are checked, not the return value), ticket ids survive, and
what remember() stores is exactly what a restart loads.
"""

from __future__ import annotations

import json
import re
import tempfile
from pathlib import Path

from hypothesis import HealthCheck, Phase, assume, given, settings
from hypothesis import strategies as st

from lab_utils.memory import MemoryStore
from pii_shapes import NOT_A_PHONE, is_isbn13
from lab_utils.rules import remember

# -- the PII strategies -------------------------------------------------------------------

ALNUM = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"
_word = st.text(ALNUM, min_size=1, max_size=8)
# What counts as a phone here is fixed by the test, not read from lab_utils.rules, so a change
# of rules.MIN_PHONE_DIGITS cannot quietly relax the check.
PHONE_DIGITS = 7


@st.composite
def emails(draw) -> str:
    """jane.doe+billing@mail.support.acme-corp.co.uk and the like: dots, plus tags, subdomains."""
    parts = draw(st.lists(_word, min_size=1, max_size=4))
    joints = draw(st.lists(st.sampled_from([".", "_", "-"]), min_size=len(parts) - 1,
                           max_size=len(parts) - 1))
    local = parts[0] + "".join(j + p for j, p in zip(joints, parts[1:]))
    if draw(st.booleans()):
        local += "+" + draw(_word)
    labels = draw(st.lists(st.builds(lambda a, b: a + (f"-{b}" if b else ""), _word, st.none() | _word),
                           min_size=1, max_size=3))
    tld = draw(st.text("abcdefghijklmnopqrstuvwxyz", min_size=2, max_size=6))
    return f"{local}@{'.'.join(labels + [tld])}"


def _digits(low: int, high: int):
    return st.integers(low, high).flatmap(lambda n: st.text("0123456789", min_size=n, max_size=n))


@st.composite
def generated_phones(draw, separators=(" ", "-", ".", "")) -> str:
    """International (+CC or 00CC, an optional (0) trunk, an area code maybe in brackets) or
    national ((0AA) or 0AA, or a US area code), then 2-4 groups of 2-4 digits; at least 7 digits."""
    sep = st.sampled_from(separators)
    style = draw(st.sampled_from(["plus", "double-zero", "national", "us"]))
    if style in ("plus", "double-zero"):
        number = ("+" if style == "plus" else "00") + str(draw(st.integers(1, 999)))
        number += draw(st.sampled_from(["", " (0)", "(0)"])) + draw(sep)
        area = draw(_digits(1, 4))
    elif style == "national":
        number, area = "", "0" + draw(_digits(1, 3))
    else:
        number, area = "", draw(_digits(3, 3))
    number += f"({area})" if draw(st.booleans()) else area
    for group in draw(st.lists(_digits(2, 4), min_size=2, max_size=4)):
        number += draw(sep) + group
    if sum(c.isdigit() for c in number) < PHONE_DIGITS:
        number += draw(sep) + draw(_digits(4, 4))
    assume(not NOT_A_PHONE.fullmatch(number) and not is_isbn13(number))  # a decimal, a date, a book: no phone
    return number


# The formats the course names, always in the mix.
NAMED_PHONES = ["+380 67 123 4567", "+1 (415) 555-0134", "(044) 123-45-67", "415-555-0134",
                "0049-30-1234567", "+44 20 7946 0958", "+44 (0)20 7946 0958", "415.555.0134",
                "+380.67.123.44.55", "0671234455"]
phones = st.sampled_from(NAMED_PHONES) | generated_phones()
ticket_ids = st.builds("{}-{}".format, st.sampled_from(["t", "T", "C", "kb", "INV"]), _digits(2, 5))

FILLER = ("customer asked for a callback about the empty export please reach them at "
          "the admin contact is billing said escalate to before friday thanks").split()
WRAPPERS = [("", ""), ("(", ")"), ("<", ">"), ("", ","), ("", "."), ("", ";"), ('"', '"'),
            ("tel:", ""), ("mailto:", ""), ("[", "]")]

# A phone that starts like a date (0612-34-56-78) was kept whole as a "date" (BUG-11, fixed; tested
# by the property below); the main property still leaves that one shape out.
DATE_SHAPED = re.compile(r"\d{4}-\d{2}-\d{2}(?!\d)")


@st.composite
def support_sentences(draw, phone_numbers=phones):
    """(sentence, emails, phones, ticket ids): PII and tickets among filler words, in any order."""
    found = {"email": draw(st.lists(emails(), max_size=2)),
             "phone": draw(st.lists(phone_numbers, max_size=2)),
             "ticket": draw(st.lists(ticket_ids, min_size=1, max_size=2))}
    assume(found["email"] or found["phone"])
    items = draw(st.permutations([x for values in found.values() for x in values]))
    parts = []
    for item in items:
        parts += draw(st.lists(st.sampled_from(FILLER), max_size=4))
        before, after = draw(st.sampled_from(WRAPPERS))
        parts.append(before + item + after)
    parts += draw(st.lists(st.sampled_from(FILLER), max_size=4))
    return " ".join(parts), found["email"], found["phone"], found["ticket"]


# -- what is on disk ----------------------------------------------------------------------

_TS = re.compile(r'"ts": [-+0-9.eE]+')  # the write time: digits that are not the customer's
# A digit run with what people put between phone digits (typographic spaces and dashes too).
_DIGIT_RUN = re.compile(r"\d(?:[ \t().+\-/\u00a0\u202f\u2009\u2013\u2012]*\d)*")


def long_digit_runs(raw: str) -> list[str]:
    """Runs of >= 7 digits once separators are stripped, outside the timestamp."""
    runs = (re.sub(r"\D", "", run) for run in _DIGIT_RUN.findall(_TS.sub("", raw)))
    return [run for run in runs if len(run) >= PHONE_DIGITS]


def remembered(sentence: str) -> tuple[str, dict]:
    """The raw text of memory.jsonl after remember(sentence), and the record written."""
    with tempfile.TemporaryDirectory() as folder:
        store = MemoryStore(Path(folder) / "memory.jsonl")
        assert remember(store, sentence, "episode", "support") == "stored m-001"
        raw = store.path.read_bytes().decode("utf-8")
    return raw, json.loads(raw)


def assert_no_pii_on_disk(raw: str, emails_written: list[str]) -> None:
    for email in emails_written:
        assert email not in raw
    assert long_digit_runs(raw) == [], raw


FAST = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@FAST
@given(support_sentences())
def test_no_email_or_phone_reaches_the_file_through_remember(case):
    sentence, emails_written, phones_written, tickets = case
    for phone in phones_written:
        assume(not DATE_SHAPED.match(phone))  # BUG-11, below
    raw, record = remembered(sentence)
    assert_no_pii_on_disk(raw, emails_written)
    for ticket in tickets:  # ids are what support queries name: never redacted
        assert ticket in record["text"]


def test_the_digit_check_sees_a_phone_however_it_is_written():
    # The check the properties rely on: it must flag a phone left on disk, separators or not.
    assert long_digit_runs('{"text": "call +44 (0)20 7946\u00a00958", "ts": 1767225600.123456}') == [
        "4402079460958"]
    assert long_digit_runs('{"text": "t-8801, C-4471 and kb-101", "ts": 1767225600.123456}') == []


# BUG-10 and BUG-11, fixed: the main property's phones could now be widened to cover these shapes.
NO_SHRINK = settings(FAST, max_examples=25, phases=[Phase.explicit, Phase.generate])


@NO_SHRINK
@given(support_sentences(generated_phones(separators=("\u00a0", "\u202f", "\u2013"))))
def test_phones_with_typographic_separators_do_not_reach_the_file(case):
    sentence, emails_written, phones_written, _ = case
    assume(phones_written)
    raw, _ = remembered(sentence)
    assert_no_pii_on_disk(raw, emails_written)


@NO_SHRINK
@given(support_sentences(st.builds(  # month 13-99: never a real date
    "{}-{}-{}{}".format, _digits(4, 4), st.integers(13, 99), _digits(2, 2),
    st.sampled_from(["-78", " 789 1234", "", "-12-34"]))))
def test_phones_starting_like_a_date_do_not_reach_the_file(case):
    sentence, emails_written, phones_written, _ = case
    assume(phones_written)
    raw, _ = remembered(sentence)
    assert_no_pii_on_disk(raw, emails_written)


# -- round trip ---------------------------------------------------------------------------

@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(st.text(min_size=1, max_size=40).filter(str.strip),
                          st.sampled_from(["episode", "fact"]), ticket_ids, st.booleans()),
                max_size=8))
def test_what_remember_stores_a_restart_loads(writes):
    # Any text (line and paragraph separators, NUL, quotes, other scripts) survives the file.
    with tempfile.TemporaryDirectory() as folder:
        store = MemoryStore(Path(folder) / "memory.jsonl")
        outcomes = [remember(store, text, kind, source, verified) for text, kind, source, verified in writes]
        assert len(store.items) == sum(o.startswith("stored") for o in outcomes)
        assert MemoryStore(store.path).items == store.items
