"""Spending with reservations: a call may start only if its worst case still fits.

Before each call the runner reserves an upper bound on its cost: the request's input tokens,
over-estimated from its size, at the dearer of the input and cache-write prices, plus
`max_tokens` of output. After the call the reservation is replaced by the real cost from the
answer's usage, as the model layer's meter counts it. A call that got no answer is released: the
meter counted nothing for it, and the study stops there with the model layer's error.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from lab_utils.llm import canonical, cost_usd, price

# English and JSON average nearer 4 bytes a token; 3 over-estimates on purpose.
BYTES_PER_TOKEN = 3
# Structured outputs add their own instructions to the input; a generous allowance.
OVERHEAD_TOKENS = 600
# The most input one call may carry; the request builder stays well below it.
MAX_INPUT_TOKENS = 12_000


class RequestTooLarge(ValueError):
    """A request whose input cannot be bounded by MAX_INPUT_TOKENS."""


def input_bound(body: dict) -> int:
    """An upper bound on the input tokens of a Messages request body."""
    tokens = math.ceil(len(canonical(body).encode()) / BYTES_PER_TOKEN) + OVERHEAD_TOKENS
    if tokens > MAX_INPUT_TOKENS:
        raise RequestTooLarge(f"request of about {tokens} input tokens exceeds the bound of "
                              f"{MAX_INPUT_TOKENS}; shorten the evidence")
    return tokens


def worst_case_usd(body: dict) -> float:
    p = price(body["model"])
    return (input_bound(body) * max(p.input, p.cache_write) + body["max_tokens"] * p.output) / 1e6


@dataclass(frozen=True)
class Reservation:
    usd: float
    model: str


class Budget:
    """A spending limit shared by every call of a study."""

    def __init__(self, limit_usd: float) -> None:
        if limit_usd < 0:
            raise ValueError(f"budget must not be negative (got {limit_usd})")
        self.limit_usd = limit_usd
        self.spent_usd = 0.0  # the real costs of the answers that arrived
        self.held_usd = 0.0  # reservations of calls still in flight

    @property
    def remaining_usd(self) -> float:
        return self.limit_usd - self.spent_usd - self.held_usd

    def reserve(self, body: dict) -> Reservation | None:
        """Hold the worst case of this call; None if it does not fit what remains."""
        usd = worst_case_usd(body)
        if usd > self.remaining_usd:
            return None
        self.held_usd += usd
        return Reservation(usd, body["model"])

    def settle(self, reservation: Reservation, usage) -> float:
        """Replace the reservation by the real cost of the answer (cache writes included)."""
        real = cost_usd(usage, reservation.model)
        self.held_usd -= reservation.usd
        self.spent_usd += real
        return real

    def release(self, reservation: Reservation) -> None:
        """A call that got no answer: it costs nothing, and its reservation is free again."""
        self.held_usd -= reservation.usd
