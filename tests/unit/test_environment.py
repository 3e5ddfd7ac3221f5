"""Binder's environment.yml and pyproject.toml pin the same packages at the same versions."""

import tomllib

import yaml

from lab_utils.paths import ROOT


def test_environment_yml_pins_what_pyproject_pins():
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["dependencies"]
    environment = yaml.safe_load((ROOT / "environment.yml").read_text())
    pip = next(d["pip"] for d in environment["dependencies"] if isinstance(d, dict))
    assert sorted(pip) == sorted(project)
    assert all("==" in pin for pin in project), "every dependency is pinned exactly"
