# The course's commands. `make lab` and `make test` set everything up on a fresh machine.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
READY := $(VENV)/.ready
# JupyterLab refuses to run as root unless told it may (containers, CI machines).
ROOT_FLAG := $(if $(filter 0,$(shell id -u)),--allow-root)

.PHONY: lab test release autograde feedback grades bench clean

$(READY): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[test]'
	touch $(READY)

lab: $(READY)  ## open the course in JupyterLab
	$(BIN)/jupyter lab --notebook-dir=lessons $(ROOT_FLAG)

test: $(READY)  ## run every test
	$(BIN)/python -m pytest

release: $(READY)  ## regenerate lessons/ from solutions/
	$(BIN)/python -m lab_utils.course release

autograde: $(READY)  ## grade every submission in submitted/<student>/<lesson>/
	$(BIN)/python -m lab_utils.course autograde

feedback: $(READY)  ## HTML feedback per student and lesson, in feedback/
	$(BIN)/python -m lab_utils.course feedback

grades: $(READY)  ## grades.csv and a per-exercise summary
	$(BIN)/python -m lab_utils.course grades

clean:
	rm -rf $(VENV) work gradebook.db autograded feedback grades.csv
