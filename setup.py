"""One build step pyproject.toml cannot say: the wheel carries the course data.

data/ stays at the top of the repository, where the lessons and tools of a clone read it; a
built wheel (and `pip install .`) gets a copy inside the package, as lab_utils/data, where
lab_utils.paths finds it when no clone is around. An editable install reads the clone's data/.
"""

from pathlib import Path

from setuptools import setup
from setuptools.command.build_py import build_py


class BuildWithData(build_py):
    def run(self) -> None:
        super().run()
        if not self.editable_mode:
            self.copy_tree(str(Path(__file__).parent / "data"), str(Path(self.build_lib) / "lab_utils" / "data"))


setup(cmdclass={"build_py": BuildWithData})
