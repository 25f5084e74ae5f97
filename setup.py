"""The build's one step beyond pyproject.toml: the example trace into the package.

The example trace lives at the top of the repository, in ``traces/`` beside the recipe that makes
it; the wheel carries it as package data, ``agentx/data/example.parquet``, where
``agentx.core.examples`` finds it in an installed agentx. ``build_py`` copies it there, so git
holds one copy and the wheel a real file (the sdist has ``traces/``: MANIFEST.in). An editable
install builds nothing: ``agentx.core.examples`` then finds the file in ``traces/`` itself.
"""

from __future__ import annotations

import os

from setuptools import setup
from setuptools.command.build_py import build_py

# in the package (relative to the build directory): in the repository
BUNDLED = {
    os.path.join("agentx", "data", "example.parquet"): os.path.join("traces", "example.parquet")
}


class BuildPy(build_py):
    def _bundled(self) -> dict[str, str]:
        return {os.path.join(self.build_lib, dest): src for dest, src in BUNDLED.items()}

    def build_package_data(self) -> None:
        super().build_package_data()
        for target, src in self._bundled().items():
            self.mkpath(os.path.dirname(target))
            self.copy_file(src, target)

    def get_output_mapping(self) -> dict[str, str]:
        # what an editable install in strict mode links into its tree
        return {**super().get_output_mapping(), **self._bundled()}

    def get_outputs(self, include_bytecode: bool = True) -> list[str]:
        outputs = super().get_outputs(include_bytecode)
        return outputs + [t for t in self._bundled() if t not in outputs]


setup(cmdclass={"build_py": BuildPy})
