"""Long loops show progress, except under nbgrader and in tests, where outputs must not change."""

import re

import nbformat
import pytest
from nbclient import NotebookClient

from lab_utils.progress import progress


@pytest.mark.parametrize("env, shown", [({}, True), ({"NBGRADER_EXECUTION": "autograde"}, False),
                                        ({"LAB_PROGRESS": "0"}, False)])
def test_a_bar_only_where_outputs_may_change(env, shown, monkeypatch, capsys):
    for name in ("NBGRADER_EXECUTION", "LAB_PROGRESS"):
        monkeypatch.delenv(name, raising=False)
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    assert list(progress(range(5), "grid")) == list(range(5))
    assert ("grid" in capsys.readouterr().err) == shown


def test_a_notebook_keeps_what_was_done_in_place_of_the_bar(monkeypatch):
    """A widget left in a saved notebook shows its first state (0%) wherever it is opened without its
    widgets; what replaces it says how far the loop got."""
    monkeypatch.delenv("LAB_PROGRESS")
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(
        "from lab_utils.progress import progress\nfor n in progress(range(3), 'grid'):\n    print(n)")])
    NotebookClient(nb, kernel_name="python3").execute()
    outputs = nb.cells[0].outputs
    shown = [out["data"] for out in outputs if out["output_type"] == "display_data"]
    assert len(shown) == 1 and list(shown[0]) == ["text/plain"], f"a widget is left in the notebook: {shown}"
    assert re.fullmatch(r"grid: 3 done in \d\d:\d\d", shown[0]["text/plain"])
    assert "".join(out.get("text", "") for out in outputs) == "0\n1\n2\n", "the loop's own output is kept"


def test_the_suites_kernel_runs_cells_again_with_bars_in_them(monkeypatch, tmp_path):
    """tests/nbtools.Kernel (the trials, `make grading-strength`) runs a copy of a cell, and runs cells again:
    a bar's summary replaces the bar in the cell that runs, and one sent after its cell ran (a loop left
    unfinished, closed later) finds no outputs gone with the cell's copy."""
    from nbtools import Kernel

    monkeypatch.delenv("LAB_PROGRESS")
    nb = nbformat.v4.new_notebook(cells=[
        nbformat.v4.new_code_cell("from lab_utils.progress import progress\nlist(progress(range(3), 'grid'))"),
        nbformat.v4.new_code_cell("loop = progress(range(3), 'grid')\nnext(loop)"),
        nbformat.v4.new_code_cell("loop.close()\nprint('closed')")])
    with Kernel(nb, tmp_path) as kernel:
        ran = [kernel.run(index) for index in (0, 0, 1, 2)]
    assert all(out["output_type"] != "error" for cell in ran for out in cell.outputs)
    assert "grid: 3 done in" in str(ran[1].outputs) and "closed" in str(ran[3].outputs)
