"""The rule lint: what reflection keeps must be an instruction the agent can follow.

"Output is sometimes too long; be careful" is true and useless: next time the agent reads
it, there is nothing to do. "When answering a family-office question, never exceed 5
bullet points" can be followed directly. A rule passes when it has one of two shapes,
each naming a concrete trigger:

    When|If|Before|After|Whenever <trigger>, then|always|never|do not <action>.
    Always|Never|Do not <action> when|if|before|after|whenever <trigger>.

and no hedging word. The check is lexical and English-only, by design: the reflection
prompt asks for this form, and the lint rejects what ignores it.
"""

from __future__ import annotations

import re

_TRIGGER = r"(?:when|whenever|if|before|after)"
_MODAL = r"(?:then|always|never|do not|don't)"
TRIGGER_FIRST = re.compile(rf"^{_TRIGGER}\s+(?P<trigger>.+?),\s*{_MODAL}\s+(?P<action>.+)$", re.I)
ACTION_FIRST = re.compile(rf"^(?:always|never|do not|don't)\s+(?P<action>.+?)\s+{_TRIGGER}\s+(?P<trigger>.+)$", re.I)

# Words that describe or hedge instead of instructing, and triggers that name no situation.
VAGUE = re.compile(r"\b(?:sometimes|seems?|appears?|careful|try to|maybe|might|perhaps|probably|"
                   r"consider|tends? to|generally|usually|often|etc)\b", re.I)
EMPTY_TRIGGER = re.compile(r"^(?:needed|necessary|appropriate|possible|relevant|required|"
                           r"in doubt|it makes sense|applicable)$", re.I)
MIN_WORDS = 2  # one word rarely names a situation ("when exporting")


def lint_rule(rule: str) -> list[str]:
    """What is wrong with a rule; an empty list means it passes."""
    text = " ".join(rule.split()).rstrip(".")
    problems = [f"vague wording {m.group(0)!r}" for m in VAGUE.finditer(text)]
    match = TRIGGER_FIRST.match(text) or ACTION_FIRST.match(text)
    if match is None:
        problems.append("not an executable imperative: write 'When <trigger>, always|never|then "
                        "<action>' or 'Always|Never <action> when <trigger>'")
        return problems
    trigger = match.group("trigger").strip()
    if EMPTY_TRIGGER.match(trigger) or len(trigger.split()) < MIN_WORDS:
        problems.append(f"trigger too vague: {trigger!r} does not name a concrete situation")
    if len(match.group("action").split()) < 2:
        problems.append(f"action too short: {match.group('action')!r}")
    return problems
