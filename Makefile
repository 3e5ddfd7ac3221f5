# The course's commands. `make lab` and `make test` set everything up on a fresh machine.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
READY := $(VENV)/.ready
# JupyterLab refuses to run as root unless told it may (containers, CI machines).
ROOT_FLAG := $(if $(filter 0,$(shell id -u)),--allow-root)
# The student view, as on Binder: starts on lessons/, nbgrader's Validate button without its
# instructor tools. postBuild installs the same folder on Binder; the browser test uses it too.
STUDENT_VIEW := JUPYTER_CONFIG_PATH=$(CURDIR)/jupyter_config

.PHONY: lab lab-instructor test test-timing release autograde feedback grades bench grading-strength clean

$(READY): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[test]'
	touch $(READY)

lab: $(READY)  ## open the course in JupyterLab, as students see it
	$(STUDENT_VIEW) $(BIN)/jupyter lab $(ROOT_FLAG)

lab-instructor: $(READY)  ## JupyterLab with nbgrader's instructor tools (Formgrader, Create Assignment)
	$(BIN)/jupyter lab $(ROOT_FLAG)

# Tests run in parallel (pytest-xdist): one worker per core; tests sharing a course or a server
# stay on one worker (tests/conftest.py). `make test TEST_ARGS=` runs them in one process.
TEST_ARGS ?= -n auto --dist loadgroup

test: $(READY)  ## run every test
	$(BIN)/python -m pytest $(TEST_ARGS)

test-timing: $(READY)  ## the whole suite in one process (as before) and as `make test` runs it, timed
	$(BIN)/python benchmarks/test_timing.py --parallel "$(TEST_ARGS)"

release: $(READY)  ## regenerate lessons/ from solutions/
	$(BIN)/python -m lab_utils.course release

# `make autograde LESSON=03_write_rules` (and feedback) handles one lesson only.
ONLY := $(if $(LESSON),--lesson $(LESSON))

autograde: $(READY)  ## grade every submission in submitted/<student>/<lesson>/
	$(BIN)/python -m lab_utils.course autograde $(ONLY)

feedback: $(READY)  ## HTML feedback per student and lesson, in feedback/
	$(BIN)/python -m lab_utils.course feedback $(ONLY)

grades: $(READY)  ## grades.csv, and where the class lost points: grades_by_exercise.csv and .png
	$(BIN)/python -m lab_utils.course grades

bench: $(READY)  ## the speed figures of the README, measured in one run
	$(BIN)/python benchmarks/bench.py

grading-strength: $(READY)  ## how many planted mistakes in the solutions lose points, and fail Validate first
	$(BIN)/python benchmarks/grading_strength.py --survivors

clean:
	rm -rf $(VENV) work artifacts/browser gradebook.db autograded feedback grades.csv grades_by_exercise.*
