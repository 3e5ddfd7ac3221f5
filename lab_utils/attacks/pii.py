"""How well a redactor holds on real-world formats: the PII test set and its scores.

The set has three parts:
- the public test suites' own cases (Presidio, scrubadub, CommonRegex, python-email-validator,
  libphonenumber's matcher tests), in data/pii/cases.json with the source of each;
- libphonenumber's example number of every region (fixed line and mobile), generated from the
  pinned `phonenumbers` package in national, international, E.164 and RFC 3966 form, and, for the
  separators people also use, the international groups joined by "/", ".", "-" or with the area
  code in brackets, and with an extension;
- negatives that look numeric but are not personal (dates, versions, codes, prices, ids).

A positive is removed completely when no letter or digit of its PII is left: what remains of the
text, placeholders aside, holds no letter or digit the text without the PII lacks. A negative is
changed when the redactor returns anything but the (NFC) text itself.
"""

from __future__ import annotations

import json
import re
import unicodedata
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from functools import lru_cache

import pandas as pd
import phonenumbers
from phonenumbers import PhoneNumberFormat, PhoneNumberType

from lab_utils.paths import DATA_DIR

CASES_FILE = DATA_DIR / "pii" / "cases.json"
PLACEHOLDER = re.compile(r"\[(?:EMAIL|PHONE)\]")

# Sentences the example numbers are written into, in turn; one says "call", two say nothing.
TEMPLATES = ("Please call me at {}.", "Reach me on {}, thanks.", "Customer left {} for the callback.")
FORMATS = {"national": PhoneNumberFormat.NATIONAL, "international": PhoneNumberFormat.INTERNATIONAL,
           "E.164": PhoneNumberFormat.E164, "RFC 3966": PhoneNumberFormat.RFC3966}
SEPARATORS = {"slash": "/", "dot": ".", "dash": "-"}


@dataclass(frozen=True)
class Case:
    group: str  # the row of the table it counts in
    text: str
    pii: tuple[str, ...]  # exact substrings; empty for a negative
    region: str = "US"  # for phonenumbers' own matcher, which needs a default region


def _nfc(text: str) -> str:
    return unicodedata.normalize("NFC", text)


def suite_cases() -> list[Case]:
    data = json.loads(CASES_FILE.read_text(encoding="utf-8"))
    group = {"email": "suites: emails", "phone": "suites: phones"}
    return [Case(group.get(c["kind"], f"negatives ({c['source']})"), c["text"], tuple(c["pii"]))
            for c in data["cases"]]


def _example_numbers() -> Iterator[tuple[str, phonenumbers.PhoneNumber]]:
    for region in sorted(phonenumbers.SUPPORTED_REGIONS):
        seen = set()
        for kind in (PhoneNumberType.FIXED_LINE, PhoneNumberType.MOBILE):
            number = phonenumbers.example_number_for_type(region, kind)
            if number is not None and number.national_number not in seen:
                seen.add(number.national_number)
                yield region, number


def _with_separator(international: str, sep: str) -> str:
    code, *groups = international.split(" ")
    return code + sep + sep.join(groups) if groups else international


@lru_cache(maxsize=1)
def example_cases() -> tuple[Case, ...]:
    cases = []
    for i, (region, number) in enumerate(_example_numbers()):
        template = TEMPLATES[i % len(TEMPLATES)]
        international = phonenumbers.format_number(number, PhoneNumberFormat.INTERNATIONAL)
        written = {f"examples: {name}": phonenumbers.format_number(number, fmt)
                   for name, fmt in FORMATS.items()}
        code, *groups = international.split(" ")
        written |= {f"separators: {name}": _with_separator(international, sep)
                    for name, sep in SEPARATORS.items()}
        if len(groups) > 1:
            written["separators: brackets"] = f"{code} ({groups[0]}) {' '.join(groups[1:])}"
        written["separators: extension"] = f"{international} ext. {i % 90 + 10}"
        cases += [Case(group, template.format(phone), (phone,), region) for group, phone in written.items()]
    return tuple(cases)


def all_cases() -> list[Case]:
    return suite_cases() + list(example_cases())


def removed_completely(case: Case, redacted: str) -> bool:
    """No letter or digit of the case's PII is left in `redacted`."""
    without = _nfc(case.text)
    for pii in case.pii:
        without = without.replace(_nfc(pii), " ")
    left = Counter(c for c in PLACEHOLDER.sub(" ", redacted) if c.isalnum())
    allowed = Counter(c for c in without if c.isalnum())
    return not (left - allowed)


def _judge(cases: list[Case], outputs: list[str]) -> pd.DataFrame:
    rows = [{"group": case.group, "measure": "removed completely" if case.pii else "changed",
             "hit": removed_completely(case, out) if case.pii else out != _nfc(case.text),
             "text": case.text, "output": out} for case, out in zip(cases, outputs)]
    return pd.DataFrame(rows)


def judged(redactor: Callable[[str], str], cases: list[Case]) -> pd.DataFrame:
    """One row per case: its group, what is measured, whether it holds, and the redactor's output."""
    return _judge(cases, [redactor(case.text) for case in cases])


def _shares(frame: pd.DataFrame) -> pd.DataFrame:
    return frame.groupby(["group", "measure"], sort=False)["hit"].agg(cases="size", share="mean")


def score(redactor: Callable[[str], str], cases: list[Case]) -> pd.DataFrame:
    """Per group: how many cases, and the share removed completely (positives) or changed (negatives)."""
    return _shares(judged(redactor, cases))


def mistakes(redactor: Callable[[str], str], cases: list[Case]) -> pd.DataFrame:
    """The cases the redactor gets wrong: a positive not removed completely, a negative changed."""
    frame = judged(redactor, cases)
    wrong = frame["hit"] == (frame["measure"] == "changed")
    return frame[wrong].drop(columns="hit").reset_index(drop=True)


def matcher_redact(case: Case) -> str:
    """phonenumbers' own PhoneNumberMatcher as a redactor of the case's text, for its region."""
    text = _nfc(case.text)
    out, last = [], 0
    for match in phonenumbers.PhoneNumberMatcher(text, case.region):
        out += [text[last:match.start], "[PHONE]"]
        last = match.end
    return "".join(out) + text[last:]


def table(redact: Callable[[str], str], cases: list[Case] | None = None) -> pd.DataFrame:
    """redact's scores beside phonenumbers' matcher (phones only; each example number's region)."""
    cases = all_cases() if cases is None else cases
    ours = score(redact, cases)
    theirs = _shares(_judge(cases, [matcher_redact(case) for case in cases]))
    both = ours.rename(columns={"share": "redact"}).join(theirs["share"].rename("phonenumbers matcher"))
    emails = both.index.get_level_values("group").str.contains("email")
    both.loc[emails, "phonenumbers matcher"] = float("nan")  # it looks for phones only
    return both


# The goals of issue 12: (which rows pool into the goal, the bound).
GOALS = {"suites' positives removed completely": ("suites:", ">= 95%"),
         "example numbers removed completely (4 forms)": ("examples:", ">= 99%"),
         "other separators and extensions removed completely": ("separators:", ""),
         "negatives changed": ("negatives", "<= 5%")}


def _pooled(part: pd.DataFrame, column: str) -> float:
    known = part[part[column].notna()]
    return (known[column] * known["cases"]).sum() / known["cases"].sum() if len(known) else float("nan")


def summary(scores: pd.DataFrame) -> pd.DataFrame:
    """The table's rows pooled into the goals: one share per goal and per redactor."""
    groups = scores.index.get_level_values("group")
    rows = {}
    for goal, (prefix, bound) in GOALS.items():
        part = scores[groups.str.startswith(prefix)]
        rows[goal] = {"cases": int(part["cases"].sum()), "redact": _pooled(part, "redact"),
                      "phonenumbers matcher": _pooled(part, "phonenumbers matcher"), "goal": bound}
    return pd.DataFrame(rows).T
