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
from tqdm.notebook import tqdm as notebook_tqdm

T = TypeVar("T")


def enabled() -> bool:
    return not os.environ.get("NBGRADER_EXECUTION") and os.environ.get("LAB_PROGRESS") != "0"


def progress(items: Iterable[T], desc: str) -> Iterator[T]:
    """`items`, with a bar while the loop runs (its length known if `items` has one). A text bar
    disappears when the loop ends; in a notebook the widget's place then says how many items were
    done and how long they took, since a widget left there would show its first state, 0%, wherever
    the notebook is opened without its widgets (a download, nbconvert, another machine)."""
    if not enabled():
        yield from items
    elif not issubclass(tqdm, notebook_tqdm):
        yield from tqdm(items, desc=desc, leave=False)
    else:
        from IPython.display import display  # only in a notebook, where IPython runs it

        bar = tqdm(items, desc=desc, leave=False, display=False)
        place = display(bar.container, display_id=True)
        try:
            yield from bar
        finally:
            bar.close()
            done = f"{desc}: {bar.n} done in {bar.format_interval(bar.format_dict['elapsed'])}"
            place.update({"text/plain": done}, raw=True)
