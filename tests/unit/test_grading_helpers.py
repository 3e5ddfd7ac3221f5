"""The own-implementation check catches imports and thin wrappers, and accepts real work."""

import pytest

from lab_utils import memory
from lab_utils.grading import assert_own_implementation
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
