"""The own-implementation check catches imports and thin wrappers, and accepts real work."""

import pytest

from lab_utils import memory
from lab_utils.grading import assert_own_implementation, own_implementation
from lab_utils.memory import format_recall


def run(source: str):
    namespace = {"__name__": "__main__"}
    exec(source, namespace)  # as a notebook cell would define it
    return namespace


def test_an_imported_reference_fails():
    with pytest.raises(AssertionError, match="lab_utils.memory"):
        assert_own_implementation(format_recall)


@pytest.mark.parametrize("source", [
    "from lab_utils.memory import format_recall as ref\ndef format_recall(ms):\n    return ref(ms)\n",
    "import lab_utils.memory\ndef format_recall(ms):\n    return lab_utils.memory.format_recall(ms)\n",
])
def test_a_wrapper_around_the_reference_fails(source):
    with pytest.raises(AssertionError, match="reference"):
        assert_own_implementation(run(source)["format_recall"])


def test_own_code_passes_even_using_other_helpers():
    source = ("from lab_utils.memory import NOTHING\n"
              "def format_recall(ms):\n    return '\\n'.join(m.text for m in ms) or NOTHING\n")
    assert_own_implementation(run(source)["format_recall"])
    assert memory.NOTHING


@pytest.mark.parametrize("source", [
    "import importlib\ndef format_recall(ms):\n"
    "    return getattr(importlib.import_module('lab_utils.memory'), 'format_' + 'recall')(ms)\n",
    "import lab_utils.memory as q\n_r = q.format_recall\nformat_recall = lambda ms: _r(ms)\n",
    "import functools, lab_utils.memory as q\n_r = functools.partial(q.format_recall)\n"
    "def format_recall(ms):\n    try:\n        return _r(ms)\n    except BaseException:\n        return 'x'\n",
])
def test_the_tripwire_catches_the_reference_however_it_is_reached(source):
    student = run(source)["format_recall"]
    with pytest.raises(AssertionError, match="lab_utils.memory.format_recall"):
        with own_implementation(student, "lab_utils.memory.format_recall"):
            student([])
    assert format_recall([]) == memory.NOTHING, "the reference is restored after the test"


def test_code_taken_from_the_reference_fails():
    source = "import types, lab_utils.memory as q\nformat_recall = types.FunctionType(q.format_recall.__code__, globals())\n"
    with pytest.raises(AssertionError, match="taken from lab_utils"):
        assert_own_implementation(run(source)["format_recall"])


def test_the_tripwire_lets_own_work_pass():
    student = run("def format_recall(ms):\n    return 'no relevant memories'\n")["format_recall"]
    with own_implementation(student, "lab_utils.memory.format_recall"):
        assert student([]) == "no relevant memories"
