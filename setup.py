"""One build step pyproject.toml cannot say: the wheel carries the course data.

data/ stays at the top of the repository, where the lessons and tools of a clone read it; a
built wheel (and `pip install .`) gets a copy inside the package, as lab_utils/data, where
lab_utils.paths finds it when no clone is around. An editable install reads the clone's data/.
"""

import shutil
from pathlib import Path

from setuptools import setup
from setuptools.command.build_py import build_py


class BuildWithData(build_py):
    def run(self) -> None:
        if self.editable_mode:  # the clone's lab_utils and data/ are read in place
            return super().run()
        built = Path(self.build_lib) / "lab_utils"
        # build/ outlives a build: what an earlier one put there (a data file deleted since) would ship again.
        shutil.rmtree(built, ignore_errors=True)
        super().run()
        self.copy_tree(str(Path(__file__).parent / "data"), str(built / "data"))


setup(cmdclass={"build_py": BuildWithData})
