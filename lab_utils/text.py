"""Turning text into tokens, and how alike two texts are."""

from __future__ import annotations

import re

# Identifiers such as C-4471, t-8801 and kb-101 stay whole: they are what support queries name.
_TOKEN = re.compile(r"[a-z0-9]+(?:-[a-z0-9]+)*")

# Words too common to tell two support notes apart.
STOPWORDS = frozenset(
    "a an and are as at be but by did do for from has have how i in is it its me my "
    "no not of on or our so that the their there this to was we were what when which "
    "who why will with you your".split()
)


def tokenize(text: str) -> list[str]:
    """Lower-case word tokens without stopwords, keeping hyphenated identifiers whole."""
    return [t for t in _TOKEN.findall(text.lower()) if t not in STOPWORDS]


def similarity(a: str, b: str) -> float:
    """Token Jaccard similarity in [0, 1]; 0 when either text has no tokens."""
    ta, tb = set(tokenize(a)), set(tokenize(b))
    return len(ta & tb) / len(ta | tb) if ta and tb else 0.0
