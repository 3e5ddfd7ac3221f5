"""Numbers that look like phones but are something else: the phone generators of the property
tests skip them, because redact() rightly keeps them (issue 12 counts each as a false positive).

A decimal (100.0000), a dotted, slashed or dashed date (01.05.2021), a range of years or round
numbers (1998-2024, 1000-2000), a US ZIP+4 code (02540-4119), a Unix timestamp (1000001234,
2001-09-09 in seconds) and an ISBN-13 (978 or 979, then a good check digit: 979 092-0159-520). Written here, not read from lab_utils.rules, so the tests do not depend
on the code they check.
"""

import re

_DAY, _MONTH, _YEAR = r"(?:0?[1-9]|[12]\d|3[01])", r"(?:0?[1-9]|1[0-2])", r"(?:1[89]\d\d|20\d\d)"
NOT_A_PHONE = re.compile(
    r"(?:0|[1-9]\d*)\.\d+"
    rf"|{_YEAR}([-/.]){_MONTH}\1{_DAY}|{_DAY}([-/.]){_MONTH}\2(?:{_YEAR}|\d\d)|{_MONTH}([-/.]){_DAY}\3(?:{_YEAR}|\d\d)"
    rf"|{_YEAR}\s*[-\u2013]\s*{_YEAR}|(\d+)00\s*[-\u2013]\s*\d+00"
    r"|\d{5}-\d{4}"
    r"|1\d{9}|1\d{12}")


def is_isbn13(number: str) -> bool:
    """13 digits, 978 or 979 first, and the EAN check: weights 1 and 3 in turn add up to a multiple of 10."""
    digits = [int(c) for c in number if c.isdigit()]
    return (len(digits) == 13 and digits[:2] == [9, 7] and digits[2] in (8, 9)
            and sum(d * (3 if i % 2 else 1) for i, d in enumerate(digits)) % 10 == 0)
