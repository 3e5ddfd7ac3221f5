"""The lessons as a student meets them: JupyterLab with Binder's configuration, in headless Chromium.

The student opens a lesson, runs every cell and sees every output the kernel sent: figures,
tables, text; the only errors are the unfinished exercises' NotImplementedError. Every lesson's
outputs show: each released lesson, as the test run executed it once (the `released` fixture),
is opened and what the page shows is compared with what the notebook holds. nbgrader's Validate
button is there; its instructor tools (Create Assignment, Formgrader, the course list) are not.
"""

from __future__ import annotations

import json
import re
import time
import urllib.error
import urllib.request

import nbformat
import pytest
from playwright.sync_api import expect

from labtools import ARTIFACTS, NOTEBOOK, PROMPTS, TIMINGS
from nbtools import LESSONS, errors, notebook_path, stray_errors

pytestmark = pytest.mark.slow  # minutes, not seconds: started first (conftest.py)


# What each cell shows, in notebook order, counted as `held` counts the notebook's outputs.
SHOWN = f"""() => [...document.querySelectorAll('{NOTEBOOK} .jp-Notebook .jp-Cell')].map(cell => {{
    const outputs = [...cell.querySelectorAll('.jp-OutputArea-output')];
    return {{outputs: outputs.length,
             images: outputs.filter(o => o.querySelector('img')).length,
             tables: outputs.filter(o => o.querySelector('table')).length,
             text: cell.querySelector('.jp-OutputArea')?.textContent ?? ''}};
}})"""

# A run is over when the cell it started from has its number, nothing is queued, the kernel idles.
SETTLED = f"""start => {{
    const prompts = [...document.querySelectorAll('{PROMPTS}')].map(p => p.textContent);
    const kernel = document.querySelector('{NOTEBOOK} .jp-Notebook-ExecutionIndicator');
    return /^\\[\\d+\\]:$/.test(prompts[start]) && !prompts.includes('[*]:')
        && kernel?.dataset.status === 'idle';
}}"""


def drawn(outputs: list) -> int:
    """How many outputs JupyterLab draws: a stream output right after one of the same stream joins it."""
    return sum(not (o.output_type == "stream" and before.get("output_type") == "stream" and before.name == o.name)
               for before, o in zip([{}] + outputs, outputs))


def held(nb) -> list[dict]:
    """Per cell: how many outputs it draws, how many of them figures and tables, its printed lines."""
    def count(cell, test):
        return sum(test(o.get("data", {})) for o in cell.get("outputs", []))

    return [{"outputs": drawn(cell.get("outputs", [])),
             "images": count(cell, lambda data: any(mime.startswith("image/") for mime in data)),
             "tables": count(cell, lambda data: "<table" in data.get("text/html", "")),
             "printed": [line.strip() for o in cell.get("outputs", []) if o.output_type == "stream"
                         for line in o.text.splitlines() if line.strip()]}
            for cell in nb.cells]


def menu(page, top: str, item: str | re.Pattern) -> None:
    page.locator(".lm-MenuBar-itemLabel", has_text=re.compile(f"^{top}$")).click()
    page.get_by_role("menuitem", name=item, exact=True).click()


def open_lesson(page, lesson: str, folder: str = "lessons") -> None:
    """File → Open from Path…, then wait for the kernel: the page is loaded once for all lessons."""
    menu(page, "File", "Open from Path…")
    page.locator(".jp-Dialog input").fill(f"{folder}/{lesson}/{lesson}.ipynb")
    page.keyboard.press("Enter")
    page.locator(f"{NOTEBOOK} .jp-Notebook-ExecutionIndicator[data-status='idle']").wait_for()
    page.get_by_text("Python 3 (ipykernel) | Idle").wait_for()


def close_lesson(page) -> None:
    """File → Close and Shut Down Notebook…: the kernel goes too."""
    menu(page, "File", re.compile("^Close and Shut Down"))
    page.locator(".jp-Dialog").get_by_role("button", name="Ok").click()
    page.locator(".jp-NotebookPanel").wait_for(state="detached")  # reopening it too soon races


def run_all(page) -> None:
    """Run → Run All Cells. A run stops at the first failing cell; then, like a student who leaves
    an exercise for later, Run → Run Selected Cell and All Below from the first cell not run."""
    menu(page, "Run", "Run All Cells")
    start = 0
    while True:
        # Every 200 ms, not every animation frame: the check walks every prompt of the notebook.
        page.wait_for_function(SETTLED, arg=start, timeout=120_000, polling=200)
        prompts = page.locator(PROMPTS).all_text_contents()
        if "[ ]:" not in prompts:
            return
        start = prompts.index("[ ]:")
        select_code_cell(page, start)
        menu(page, "Run", "Run Selected Cell and All Below")


def select_code_cell(page, index: int) -> None:
    """Click the cell's prompt until JupyterLab has made that cell the active one: cells out of view
    are laid out lazily (content-visibility), so the page can shift between scroll and click."""
    cell = page.locator(f"{NOTEBOOK} .jp-CodeCell").nth(index)
    for _ in range(5):
        cell.locator(".jp-InputArea-prompt").click()
        if "jp-mod-active" in cell.get_attribute("class").split():
            return
        page.wait_for_timeout(200)
    raise AssertionError(f"code cell {index} could not be selected")


def saved(page, lab, lesson: str) -> nbformat.NotebookNode:
    """Save (Ctrl+S), read back: the outputs exactly as JupyterLab holds them."""
    page.keyboard.press("Control+s")
    page.locator(".lm-TabBar-tab.jp-mod-current:not(.jp-mod-dirty)").wait_for()
    return nbformat.read(notebook_path("lessons", lesson, lab.root), as_version=4)


def test_lab_opens_on_the_lessons(page):
    assert page.url.split("?")[0].endswith("/lab/tree/lessons")
    assert sorted(page.locator(".jp-DirListing-itemText").all_text_contents()) == LESSONS


def test_students_can_validate_but_see_no_instructor_tools(page, lab):
    open_lesson(page, LESSONS[0])
    assert page.locator(f"{NOTEBOOK} .validate-button").is_visible()
    assert "Nbgrader" not in page.locator(".lm-MenuBar-itemLabel").all_text_contents()
    assert not page.locator("#nbgrader-create_assignemnt").count()  # nbgrader's id, typo included
    assert not page.locator(".lm-TabBar-tab", has_text="Create Assignment").count()

    page.keyboard.press("Control+Shift+C")  # the command palette offers every command there is
    palette = page.locator(".lm-CommandPalette")
    for name in ("Formgrader", "Course List", "Create Assignment", "Assignment List"):
        palette.locator(".lm-CommandPalette-input").fill(name)
        palette.get_by_text(f"No commands found that match '{name}'").wait_for()
    page.keyboard.press("Escape")
    for path in ("formgrader", "formgraders", "assignments"):  # the instructor server extensions
        with pytest.raises(urllib.error.HTTPError, match="404"):
            urllib.request.urlopen(lab.url(path))

    page.locator(f"{NOTEBOOK} .validate-button").click()  # and its server side answers students
    dialog = page.locator(".jp-Dialog")
    # The dialog's body can be drawn before its title: wait for both.
    expect(dialog).to_contain_text("Validation Results")
    expect(dialog).to_contain_text("NotImplementedError")
    page.keyboard.press("Escape")
    close_lesson(page)


@pytest.fixture(autouse=True)
def fresh_lab(page, lab):
    """Whatever a test leaves behind (an open dialog, a notebook, a kernel) is cleared after it, so
    one failure does not become the next lesson's failure."""
    yield
    if page.locator(".jp-NotebookPanel, .jp-Dialog").count():
        for kernel in json.load(urllib.request.urlopen(lab.url("api/kernels"))):
            urllib.request.urlopen(urllib.request.Request(lab.url(f"api/kernels/{kernel['id']}"),
                                                          method="DELETE"))
        page.goto(f"{lab.base}/lab/tree/lessons?reset&token={lab.token}")  # ?reset: no restored tabs
        page.locator(".jp-DirListing-item").first.wait_for()


def shows_what_it_holds(page, nb, lesson: str) -> None:
    """What the page shows of each cell is what the notebook holds: as many outputs, figures and
    tables, every printed line; at least one figure. A screenshot of the first figure is kept."""
    # A notebook opened with its outputs is drawn a batch of cells at a time: wait for all of them.
    page.wait_for_function(f"n => document.querySelectorAll('{NOTEBOOK} .jp-Notebook .jp-Cell').length === n",
                           arg=len(nb.cells), polling=200)
    shown = page.evaluate(SHOWN)
    figures = page.locator(f"{NOTEBOOK} .jp-OutputArea-output img")
    if figures.count():
        # Cells out of view are laid out lazily (content-visibility), so the first scroll lands short.
        for _ in range(3):
            figures.first.evaluate("img => img.scrollIntoView({block: 'center'})")
            page.wait_for_timeout(200)
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=ARTIFACTS / f"{lesson}.png")

    assert figures.count() > 0, "every lesson shows at least one figure"
    assert len(shown) == len(nb.cells)
    for index, (seen, kernel) in enumerate(zip(shown, held(nb))):
        counts = ("outputs", "images", "tables")
        assert {k: seen[k] for k in counts} == {k: kernel[k] for k in counts}, f"cell {index}: shown vs sent"
        missing = [line for line in kernel["printed"] if line not in seen["text"]]
        assert not missing, f"cell {index} does not show {missing[:3]}"


# One lesson runs in JupyterLab's own kernel, from Run All as a student would; every lesson's outputs
# are shown from the test run's one execution of it (below), not computed a second time here.
LIVE = LESSONS[0]


def test_a_lesson_runs_in_the_browser(page, lab):
    open_lesson(page, LIVE)
    start = time.perf_counter()
    run_all(page)
    TIMINGS[f"Run All {LIVE}"] = time.perf_counter() - start
    assert all(re.fullmatch(r"\[\d+\]:", p) for p in page.locator(PROMPTS).all_text_contents())
    nb = saved(page, lab, LIVE)
    shows_what_it_holds(page, nb, f"{LIVE}-run")
    assert errors(nb), "an unfinished lesson fails in its exercises"
    assert not stray_errors(nb)
    close_lesson(page)


@pytest.mark.parametrize("lesson", LESSONS)
def test_every_output_of_a_lesson_shows(lesson, page, lab, released):
    nb = released(lesson)
    path = notebook_path("executed", lesson, lab.root)
    path.parent.mkdir(parents=True, exist_ok=True)
    nbformat.write(nb, path)
    open_lesson(page, lesson, "executed")
    shows_what_it_holds(page, nb, lesson)
    close_lesson(page)
