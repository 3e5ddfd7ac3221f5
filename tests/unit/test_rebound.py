"""A module the lesson imported, rebound by the student's cell, is named once by the next test."""

from lab_utils import metrics, rebound, rules

IMPORTS = ["", "from lab_utils import metrics, rules\nfrom lab_utils.rules import redact",
           "rules = ['guess:', 'note:']"]


def test_a_rebound_module_is_found_and_the_rest_is_not():
    namespace = {"In": IMPORTS, "rules": ["guess:", "note:"], "metrics": metrics, "redact": lambda text: text}
    # `redact` is no module: an answer may well define its own function of that name.
    assert rebound.rebound_modules(namespace) == [("rules", "lab_utils.rules")]
    assert rebound.rebound_modules({**namespace, "rules": rules}) == []
    assert rebound.rebound_modules({"rules": []}) == [], "outside IPython there is no history to read"


def test_it_is_said_once_on_stderr(capsys):
    namespace = {"In": IMPORTS, "rules": ["guess:", "note:"], "metrics": metrics}
    rebound.warn_if_rebound(namespace)
    rebound.warn_if_rebound(namespace)
    said = capsys.readouterr().err.splitlines()
    assert said == ["`rules` is a list now, not the module lab_utils.rules that the lesson imported: rename yours, "
                    "or the lesson's cells that use it fail."]
