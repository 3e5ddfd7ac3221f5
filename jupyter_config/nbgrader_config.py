"""nbgrader's settings for students: loaded wherever JUPYTER_CONFIG_PATH names this folder (make lab,
Binder, and `make validate` in the students' repository)."""

c = get_config()  # noqa: F821 (nbgrader provides get_config)
# `nbgrader validate` cuts every line at this width; the tests' messages name the broken rule in full.
c.Validator.width = 160
