"""A student's Markdown as feedback and Formgrader show it: rendered, then cleaned of what could run.

nbconvert cleans cell outputs when `sanitize_html` is set, but nbgrader's templates render a Markdown
cell's HTML as it is: a written answer's `<script>` or `onerror=` would run in the browser of whoever
opens the page (the instructor's, signed in to Jupyter), and its own styles could draw a fake score.
"""

from __future__ import annotations

import bleach
from jinja2 import pass_context
from traitlets.config import LoggingConfigurable

# What Markdown renders to (headings, lists, tables, code with its highlighting, links, images).
TAGS = {"a", "abbr", "b", "blockquote", "br", "code", "dd", "del", "div", "dl", "dt", "em", "h1", "h2", "h3", "h4",
        "h5", "h6", "hr", "i", "img", "kbd", "li", "ol", "p", "pre", "s", "span", "strong", "sub", "sup", "table",
        "tbody", "td", "th", "thead", "tr", "ul"}
PROTOCOLS = {"http", "https", "mailto", "data"}  # data: for images pasted into a cell (attachments)


def allowed(tag: str, name: str, value: str) -> bool:
    """No style or event handler anywhere; classes only as Markdown's renderer gives them (highlighted code,
    a heading's anchor link), so that no answer borrows the page's own panels."""
    if name in ("title", "id") or (tag, name) in (("img", "alt"), ("td", "align"), ("th", "align")):
        return True
    if (tag, name) in (("a", "href"), ("img", "src")):
        return not value.startswith("data:") or (tag == "img" and value.startswith("data:image/"))
    if name == "class":
        return tag in ("span", "code", "pre") or (tag, value) in (("div", "highlight"), ("a", "anchor-link"))
    return False


def clean(html: str) -> str:
    """Other tags shown as text, so that a reader sees what the answer tried; other attributes dropped."""
    return bleach.clean(html, tags=TAGS, attributes=allowed, protocols=PROTOCOLS, strip_comments=True)


class MarkdownWithoutScripts(LoggingConfigurable):
    """The exporter's own `markdown2html` filter, its HTML cleaned (c.HTMLExporter.filters)."""

    @pass_context
    def __call__(self, context, source: str) -> str:
        return clean(self.parent.markdown2html(context, source))

    jinja_pass_arg = __call__.jinja_pass_arg  # jinja reads it from the filter, an instance here
