"""Progress bars for the course's long loops (the grid, campaigns, reflection cycles).

tqdm.auto draws a widget in Jupyter and a text bar elsewhere. Bars are off while nbgrader runs a
notebook (NBGRADER_EXECUTION is set) and when LAB_PROGRESS=0 (the test suite sets it), so outputs
that are graded or compared stay the same from run to run.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Iterator
from typing import TypeVar

from tqdm.auto import tqdm

T = TypeVar("T")


def enabled() -> bool:
    return not os.environ.get("NBGRADER_EXECUTION") and os.environ.get("LAB_PROGRESS") != "0"


def progress(items: Iterable[T], desc: str) -> Iterator[T]:
    """`items`, with a bar that disappears when the loop ends (its length known if `items` has one)."""
    return iter(tqdm(items, desc=desc, leave=False, disable=not enabled()))
