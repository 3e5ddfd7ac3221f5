# The course's commands. `make lab` and `make test` set everything up on a fresh machine.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
READY := $(VENV)/.ready
BENCH_READY := $(VENV)/.bench-ready
# JupyterLab refuses to run as root unless told it may (containers, CI machines).
ROOT_FLAG := $(if $(filter 0,$(shell id -u)),--allow-root)
# The student view, as on Binder: starts on lessons/, nbgrader's Validate button without its
# instructor tools. postBuild installs the same folder on Binder; the browser test uses it too.
STUDENT_VIEW := JUPYTER_CONFIG_PATH=$(CURDIR)/jupyter_config
# The course commands act on the folder this Makefile is in (a clone, or a copy of it).
COURSE := --root $(CURDIR)

.PHONY: lab lab-instructor test test-quick test-timing release autograde feedback grades student-repo bench grading-strength backup clean

$(READY): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[test]'
	touch $(READY)

lab: $(READY)  ## open the course in JupyterLab, as students see it
	$(STUDENT_VIEW) $(BIN)/jupyter lab $(ROOT_FLAG)

lab-instructor: $(READY)  ## JupyterLab with nbgrader's instructor tools (Formgrader, Create Assignment)
	$(BIN)/jupyter lab $(ROOT_FLAG)

# Tests run in parallel (pytest-xdist): one worker per core, a test file to one worker, so a course or
# a server that a file's tests share is built once; files in the order conftest.py gives (slow ones
# first), not xdist's largest-first. `make test TEST_ARGS=` runs them in one process.
TEST_ARGS ?= -n auto --dist loadfile --no-loadscope-reorder

test: $(READY)  ## run every test
	$(BIN)/python -m pytest $(TEST_ARGS)

# As `make test`, a file to one worker: a server a file's tests share never runs beside another file's
# tests (test_hostile_input's forked children hung while test_live_http's server thread ran in their worker).
test-quick: $(READY)  ## every test but the modules marked slow (notebooks, grading day, browser, docs), in parallel
	$(BIN)/python -m pytest $(TEST_ARGS) -m "not slow"

test-timing: $(READY)  ## `make test` beside the suite in one process, as it is and as it was before it ran in parallel, timed
	$(BIN)/python benchmarks/test_timing.py --parallel "$(TEST_ARGS)"

release: $(READY)  ## regenerate lessons/ from solutions/
	$(BIN)/python -m lab_utils.course release $(COURSE)

# `make autograde LESSON=03_write_rules` (and feedback) handles one lesson only, `STUDENT=ada`
# one student; `JOBS=2` grades in two processes; `UNSAFE=1` grades without the sandbox.
ONLY := $(if $(LESSON),--lesson $(LESSON)) $(if $(STUDENT),--student $(STUDENT))
JOBS ?= 1

autograde: $(READY)  ## grade every submission in submitted/<student>/<lesson>/, sandboxed
	$(BIN)/python -m lab_utils.course autograde $(COURSE) $(ONLY) --jobs $(JOBS) $(if $(UNSAFE),--unsafe)

feedback: $(READY)  ## HTML feedback per student and lesson, in feedback/
	$(BIN)/python -m lab_utils.course feedback $(COURSE) $(ONLY)

grades: $(READY)  ## grades.csv, grades_canvas.csv (LMS), where the class lost points: grades_by_exercise.*
	$(BIN)/python -m lab_utils.course grades $(COURSE)

student-repo: $(READY)  ## the students' repository, without answers: make student-repo DIR=../lab-students [URL=…]
	$(if $(DIR),,$(error say where: make student-repo DIR=../lab-students))
	$(BIN)/python -m lab_utils.course publish $(COURSE) $(DIR) $(if $(URL),--url $(URL))

# The bench extra (bm25s, the reference beside store recall) on top of what $(READY) installed.
$(BENCH_READY): $(READY)
	$(BIN)/python -m pip install --quiet -e '.[bench]'
	touch $(BENCH_READY)

bench: $(BENCH_READY)  ## the speed figures of the README, measured in one run
	$(BIN)/python benchmarks/bench.py

grading-strength: $(READY)  ## how many planted mistakes in the solutions lose points, and fail Validate first
	$(BIN)/python benchmarks/grading_strength.py --survivors

# The gradebook holds hand grades no command can remake: copy it aside, never delete it silently.
backup: $(READY)  ## a dated copy of gradebook.db in backups/
	$(BIN)/python -m lab_utils.course backup $(COURSE)

clean:  ## remove what commands remake (the gradebook and submissions stay)
	rm -rf $(VENV) work artifacts/browser autograded feedback grades.csv grades_canvas.csv grades_by_exercise.* autograde_logs
