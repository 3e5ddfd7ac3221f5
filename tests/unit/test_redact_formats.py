"""redact() on real-world formats (issue 12): the leaks and false positives it had, and the goals
measured on the PII test set (public suites' cases, every region's example numbers, negatives)."""

from __future__ import annotations

import json
import unicodedata

import pytest

from lab_utils.attacks import pii
from lab_utils.rules import find_pii, redact

LEAKS = ["415/666-7777", "650/253/1234", "0221/1234567", "user+mailbox/department=shipping@example.tld",
         "ops+billing=eu@example.com", '"quoted with space"@example.com', "me@[127.0.0.1]",
         unicodedata.normalize("NFD", "josé@example.com"), "(523)222-8888EXT623", "tel:+1-650-253-0000",
         "+290 22158"]
FALSE_POSITIVES = ["ISBN 978-0-306-40615-7", "0-306-40615-2", "ISSN 0317-8471", "EAN 4006381333931",
                   "9fceb02d0ae598e95dc970b74767f19372d61af8", "1767225600", "3.14159265358979", "1000-2000",
                   "1998-2024", "21.05.2021", "2024-03-15T14:30Z", "2024-03-15T14:30:00+02:00",
                   "2026.10.19.post1", "10.0.19041", "€1 234 567", "order 55120093", "C-4471", "order 5512",
                   "on 2026-01-05 09:14"]


@pytest.mark.parametrize("pii_text", LEAKS)
def test_the_leaks_of_the_issue_are_removed_completely(pii_text):
    out = redact(f"Customer wrote: {pii_text} (callback please)")
    assert out in (f"Customer wrote: {placeholder} (callback please)" for placeholder in ("[PHONE]", "[EMAIL]")), out


@pytest.mark.parametrize("text", FALSE_POSITIVES)
def test_numbers_that_are_not_personal_stay(text):
    assert redact(f"Logged {text} in the ticket.") == f"Logged {text} in the ticket."


def test_short_national_numbers_need_a_phone_word_nearby():
    assert redact("call me on 22158") == "call me on [PHONE]"
    assert redact("22158 is my mobile") == "[PHONE] is my mobile"
    assert redact("we exported 22158 rows") == "we exported 22158 rows"


def test_text_is_nfc_normalized_and_find_pii_agrees_with_redact():
    decomposed = unicodedata.normalize("NFD", "Zoë wrote from zoë@example.de")
    assert redact(decomposed) == "Zoë wrote from [EMAIL]"
    assert unicodedata.is_normalized("NFC", redact(decomposed))
    assert find_pii(decomposed) == ["zoë@example.de"]


def test_every_case_cites_a_source_the_file_describes():
    data = json.loads(pii.CASES_FILE.read_text(encoding="utf-8"))
    assert {c["source"] for c in data["cases"]} <= set(data["sources"])
    for case in data["cases"]:
        assert all(p in case["text"] for p in case["pii"]), case
        assert (case["kind"] == "none") == (not case["pii"]), case


def test_example_numbers_cover_every_region_in_four_forms():
    regions = {case.region for case in pii.example_cases()}
    assert len(regions) == len(pii.phonenumbers.SUPPORTED_REGIONS)
    forms = {case.group for case in pii.example_cases() if case.group.startswith("examples:")}
    assert forms == {f"examples: {name}" for name in pii.FORMATS}


def test_removed_completely_sees_a_partial_leak():
    case = pii.Case("suites: phones", "call 415/666-7777 now", ("415/666-7777",))
    assert pii.removed_completely(case, "call [PHONE] now")
    assert not pii.removed_completely(case, "call 415/[PHONE] now")


def test_redact_meets_the_goals_on_the_test_set():
    goals = pii.summary(pii.table(redact))["redact"]
    assert goals["suites' positives removed completely"] >= 0.95
    assert goals["example numbers removed completely (4 forms)"] >= 0.99
    assert goals["negatives changed"] <= 0.05


@pytest.mark.parametrize("text, phone", [("opened 2026-01-05 5550134", "5550134"),
                                         ("(2026-01-05) 555 0134", "555 0134"),
                                         ("since 21.05.2021 +380 67 123 4455", "+380 67 123 4455")])
def test_a_date_beside_a_phone_stays_out_of_it(text, phone):
    assert find_pii(text) == [phone]
    assert redact(text) == text.replace(phone, "[PHONE]")


@pytest.mark.parametrize("phone", ["01.23.45.67.89", "+1 01-01-00", "+1 (00)-01-01-00", "0044 12.05.2026"])
def test_a_phone_with_a_group_shaped_like_a_date_is_one_phone(phone):
    assert find_pii(f"call {phone} after six") == [phone]
