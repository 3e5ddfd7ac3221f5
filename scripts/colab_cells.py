"""Colab: stamp each lesson's first code cell; write the README's install command and Colab badges.

On Colab nothing of the course is installed when a lesson opens, so the first code cell must
stand alone: if it finds itself on Colab (`google.colab` is imported there) it installs the course
from its repository with pip, and elsewhere it does nothing. The repository URL is written in one
place, pyproject.toml's [project.urls] Repository; this script renders the cell, the README's
install command and its "Open in Colab" badges from it.

Run from the repository root after editing solutions/ (then `make release` copies the cell into
lessons/):  .venv/bin/python scripts/colab_cells.py
"""

from __future__ import annotations

import tomllib
from pathlib import Path

import nbformat

from lab_utils.course.publish import repository_url

ROOT = Path(__file__).resolve().parent.parent
CELL_ID = "colab-install"
MARKERS = ("<!-- written by scripts/colab_cells.py from pyproject.toml's Repository -->",
           "<!-- end of what scripts/colab_cells.py writes -->")


# Colab's runtime already has pandas, matplotlib, pydantic, tqdm and Jupyter; installing the course's
# pins of those over a running kernel would break it. Only what Colab lacks is installed, pinned.
COLAB_LACKS = ("anthropic", "httpx2", "rank-bm25", "phonenumbers")


def colab_pins(root: Path = ROOT) -> list[str]:
    """pyproject.toml's exact pins of the packages Colab lacks."""
    project = tomllib.loads((root / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    pins = {pin.split("==")[0]: pin for pin in project["dependencies"]}
    return [pins[name] for name in COLAB_LACKS]


def colab_cell(url: str, pins: list[str]) -> str:
    """The source of every lesson's first code cell."""
    return (
        "# On Colab, install the course first (a minute); anywhere else this cell does nothing.\n"
        "import sys\n"
        "\n"
        'if "google.colab" in sys.modules:\n'
        "    import subprocess\n"
        "\n"
        "    # Colab keeps its own pandas, pydantic and the like, not the course's pins: pip's report of that\n"
        "    # mismatch is left out. A real failure (no network, a wrong address) still shows and stops the cell.\n"
        f'    pip = [sys.executable, "-m", "pip", "install", "--quiet", "--no-warn-conflicts"]\n'
        f'    subprocess.run([*pip, "--no-deps", "git+{url}"], check=True)\n'
        f"    subprocess.run([*pip, {', '.join(repr(p) for p in pins)}], check=True)\n"
    )


def colab_link(url: str, folder: str, lesson: str) -> str:
    """Colab opens a notebook of a GitHub repository from its path on the main branch."""
    github = url.removeprefix("https://github.com/")
    return f"https://colab.research.google.com/github/{github}/blob/main/{folder}/{lesson}/{lesson}.ipynb"


def readme_block(url: str, lessons: list[str]) -> str:
    """The README's install command and one "Open in Colab" badge per lesson."""
    image = "https://colab.research.google.com/assets/colab-badge.svg"
    return "\n".join([
        "```bash", f"pip install git+{url}   # lab_utils with the course data", "```", "",
        *(f"- {lesson} [![Open in Colab]({image})]({colab_link(url, 'lessons', lesson)})" for lesson in lessons)])


def lessons(root: Path = ROOT) -> list[str]:
    return sorted(p.name for p in (root / "solutions").iterdir() if (p / f"{p.name}.ipynb").exists())


def stamp(path: Path, source: str) -> bool:
    """Make `source` the notebook's first code cell (added, or updated in place); True if changed."""
    nb = nbformat.read(path, as_version=4)
    old = list(nb.cells)
    kept = [c for c in old if c.get("id") != CELL_ID]
    first = next((i for i, c in enumerate(kept) if c.cell_type == "code"), len(kept))
    cell = nbformat.v4.new_code_cell(source)
    cell.id = CELL_ID
    nb.cells = kept[:first] + [cell] + kept[first:]
    if [(c.get("id"), c.source) for c in nb.cells] == [(c.get("id"), c.source) for c in old]:
        return False
    nbformat.write(nb, path)
    return True


def write_readme_block(readme: Path, text: str) -> bool:
    """Replace the text between the two markers in the README; True if changed."""
    old = readme.read_text(encoding="utf-8")
    start, end = MARKERS
    if start not in old or end not in old:
        raise ValueError(f"{readme.name} lacks the lines {start} and {end}, between which this script writes")
    head, rest = old.split(start, 1)
    new = f"{head}{start}\n{text}\n{end}{rest.split(end, 1)[1]}"
    readme.write_text(new, encoding="utf-8")
    return new != old


def main() -> None:
    url = repository_url()
    cell = colab_cell(url, colab_pins())
    for lesson in lessons():
        path = ROOT / "solutions" / lesson / f"{lesson}.ipynb"
        print(f"{'stamped' if stamp(path, cell) else 'up to date'}: {path.relative_to(ROOT)}")
    changed = write_readme_block(ROOT / "README.md", readme_block(url, lessons()))
    print(f"README install command and badges {'written' if changed else 'up to date'}; now run `make release`")


if __name__ == "__main__":
    main()
