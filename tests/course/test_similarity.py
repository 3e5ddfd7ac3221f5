"""Near-copies: a copied-and-renamed answer is flagged, independent answers and blanks are not."""

import ast
import shutil

import nbformat
import pytest

from lab_utils.course import similarity
from lab_utils.paths import ROOT

LESSON = "01_naive_memory"
EXERCISE = "memory-from-json"
FIELDS = 'FIELDS = {"id": str, "kind": str, "text": str, "source": str, "ts": (int, float), "verified": bool}\n\n'
ADA = FIELDS + '''
def memory_from_json(line, where):
    try:
        record = json.loads(line)
    except ValueError as problem:
        raise ValueError(f"{where}: cannot parse JSON: {problem}") from None
    if type(record) is not dict:
        raise ValueError(f"{where}: a record must be an object")
    unknown = sorted(set(record) - set(FIELDS))
    if unknown:
        raise ValueError(f"{where}: unknown fields {unknown}")
    record.setdefault("verified", False)
    for field, expected in FIELDS.items():
        if field not in record:
            raise ValueError(f"{where}: missing field {field!r}")
        value = record[field]
        if isinstance(value, bool) != (expected is bool) or not isinstance(value, expected):
            raise ValueError(f"{where}: wrong type for {field!r}")
    if record["kind"] not in {"episode", "fact"}:
        raise ValueError(f"{where}: bad kind {record['kind']!r}")
    return Memory(**record)
'''
# Ada's answer with every name changed, other messages, comments and blank lines.
COPY = FIELDS + '''
def memory_from_json(raw, location):
    # parse it
    try:
        obj = json.loads(raw)
    except ValueError as e:
        raise ValueError(f"{location}: this is not JSON ({e})") from None

    if type(obj) is not dict:
        raise ValueError(f"{location}: expected an object")
    extra_keys = sorted(set(obj) - set(FIELDS))
    if extra_keys:
        raise ValueError(f"{location}: fields not allowed: {extra_keys}")
    obj.setdefault("verified", True)
    for name, wanted in FIELDS.items():  # check each field
        if name not in obj:
            raise ValueError(f"{location}: no {name!r}")
        v = obj[name]
        if isinstance(v, bool) != (wanted is bool) or not isinstance(v, wanted):
            raise ValueError(f"{location}: {name!r} has a bad type")
    if obj["kind"] not in {"episode", "fact"}:
        raise ValueError(f"{location}: kind {obj['kind']!r}?")
    return Memory(**obj)
'''
BOB = '''CHECKS = {
    "id": lambda v: isinstance(v, str), "kind": lambda v: v in ("episode", "fact"),
    "text": lambda v: isinstance(v, str), "source": lambda v: isinstance(v, str),
    "ts": lambda v: type(v) in (int, float), "verified": lambda v: type(v) is bool,
}


def memory_from_json(line: str, where: str) -> Memory:
    """Parse one JSONL line into a Memory; raise ValueError naming `where` and the problem."""
    def fail(why):
        return ValueError(f"{where}: {why}")
    try:
        data = json.loads(line)
    except json.JSONDecodeError:
        raise fail("the line is not JSON") from None
    if not isinstance(data, dict):
        raise fail("not a JSON object")
    problems = [f"unknown field {k}" for k in data if k not in CHECKS]
    problems += [f"missing field {k}" for k in CHECKS if k not in data and k != "verified"]
    problems += [f"field {k} is wrong" for k, ok in CHECKS.items() if k in data and not ok(data[k])]
    if problems:
        raise fail(", ".join(problems))
    return Memory(data["id"], data["kind"], data["text"], data["source"], data["ts"], data.get("verified", False))
'''


def answer(released, source):
    nb = nbformat.read(released, as_version=4)
    for cell in nb.cells:
        if cell.metadata.get("nbgrader", {}).get("grade_id") == EXERCISE:
            cell.source = source
    return nb


@pytest.fixture
def course(tmp_path):
    for folder in ("solutions", "lessons"):
        shutil.copytree(ROOT / folder / LESSON, tmp_path / folder / LESSON)
    released = tmp_path / "lessons" / LESSON / f"{LESSON}.ipynb"
    solution = nbformat.read(tmp_path / "solutions" / LESSON / f"{LESSON}.ipynb", as_version=4)
    reference = next(c.source for c in solution.cells if c.metadata.get("nbgrader", {}).get("grade_id") == EXERCISE)
    renamed_reference = reference.replace("data", "payload").replace("err", "problem").replace("name", "key")
    hand_ins = {"ada": answer(released, ADA), "bob": answer(released, BOB), "cy": answer(released, COPY),
                "dee": nbformat.read(released, as_version=4), "eve": nbformat.read(released, as_version=4),
                "fay": answer(released, renamed_reference)}
    for student, nb in hand_ins.items():
        folder = tmp_path / "submitted" / student / LESSON
        folder.mkdir(parents=True)
        nbformat.write(nb, folder / f"{LESSON}.ipynb")
    (tmp_path / "submitted" / "gus" / LESSON).mkdir(parents=True)
    (tmp_path / "submitted" / "gus" / LESSON / f"{LESSON}.ipynb").write_text('{"cells": [')
    return tmp_path


def test_copies_are_flagged_with_the_exercise_and_the_other_party(course):
    found = similarity.near_copies(course, LESSON)
    assert set(found) == {"ada", "cy", "fay"}, found
    assert found["ada"].startswith(f"near-copy of cy's answer in {EXERCISE} (up to ")
    assert found["cy"].startswith(f"near-copy of ada's answer in {EXERCISE} (up to ")
    assert found["fay"].startswith(f"near-copy of the reference solution in {EXERCISE} (up to ")


def test_independent_answers_and_blanks_are_not_similar(course):
    ada, bob = similarity.tokens(ADA), similarity.tokens(BOB)
    assert similarity.similarity(ada, bob) < similarity.THRESHOLD
    assert similarity.similarity(ada, similarity.tokens(COPY)) >= similarity.THRESHOLD
    found = similarity.near_copies(course, LESSON)
    assert not {"bob", "dee", "eve", "gus"} & set(found), "two blank lessons are alike, but not copies"


def test_the_lab_utils_reference_counts_as_a_source(course):
    library = (ROOT / "lab_utils" / "memory.py").read_text()
    node = next(n for n in ast.parse(library).body if isinstance(n, ast.FunctionDef) and n.name == "memory_from_json")
    copied = FIELDS + ast.get_source_segment(library, node)
    nbformat.write(answer(course / "lessons" / LESSON / f"{LESSON}.ipynb", copied),
                   course / "submitted" / "bob" / LESSON / f"{LESSON}.ipynb")
    assert "near-copy of lab_utils.memory.memory_from_json" in similarity.near_copies(course, LESSON)["bob"]
