"""A written answer's HTML is shown, in feedback and Formgrader, without what could run or pose as the page's own."""

import os

import nbgrader
import nbformat
from nbconvert.exporters import HTMLExporter
from nbformat.v4 import new_markdown_cell, new_notebook

from lab_utils.course.config import load

# An outside tester's written answer: a script, an event handler and a styled "score".
ATTACK = ('Record m004 answers steps 6 and 9.\n\n<div style="color:green;font-size:28px">Score: 34.0 / 34.0</div>\n'
          '<script>window.__pwned = 1;</script>\n<img src="x" onerror="document.body.dataset.pwned=1">\n'
          '<a href="javascript:alert(1)">more</a> <div class="panel panel-primary">fake panel</div>\n')
HONEST = ("## Why\n\nThe check `x < y` fails *first*; see [the docs](https://example.org).\n\n"
          "```python\nif a < b:\n    pass\n```\n\n| step | answer |\n|---|---|\n| 6 | m004 |\n")
FORMGRADER = os.path.join(os.path.dirname(nbgrader.__file__), "server_extensions", "formgrader")


def rendered(source: str) -> str:
    """The answer cell as `make feedback` renders it: the course's settings, nbgrader's feedback template."""
    config = load()
    config.HTMLExporter.template_name = "feedback"
    config.HTMLExporter.extra_template_basedirs = [os.path.join(FORMGRADER, "templates")]
    config.HTMLExporter.extra_template_paths = [os.path.join(FORMGRADER, "static", "node_modules", "bootstrap", "dist",
                                                             "css")]
    meta = {"nbgrader": {"solution": True, "grade": True, "grade_id": "explain", "points": 2, "score": 0.0,
                         "locked": False, "schema_version": 3}}
    nb = new_notebook(cells=[new_markdown_cell(source, metadata=meta)])
    page, _ = HTMLExporter(config=config).from_notebook_node(nbformat.from_dict(nb), resources={"nbgrader": {
        "notebook": "x", "score": 0, "max_score": 2, "late_penalty": 0}})
    return page[page.index("Student's answer"):]


def test_a_written_answer_runs_nothing_and_draws_no_score():
    page = rendered(ATTACK)
    for payload in ("<script", "onerror", "font-size", "javascript:", "panel-primary"):
        assert payload not in page, payload
    assert "&lt;script&gt;window.__pwned" in page, "a tag it may not use is shown as text"
    assert "Score: 34.0 / 34.0" in page and "fake panel" in page, "the text itself stays"


def test_markdown_renders_as_before():
    page = rendered(HONEST)
    assert "<h2" in page and "<em>first</em>" in page and '<a href="https://example.org">' in page
    assert "<code>x &lt; y</code>" in page and "<table>" in page and 'class="highlight' in page
