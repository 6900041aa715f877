"""Build hook only (the project's metadata is in pyproject.toml).

A wheel holds packages, not the repository's top-level ``topologies/`` and ``scenarios/``;
without them an installed clustersim cannot resolve ``platform: cori_knl_cores`` or
``clustersim predict knl_4253``.  ``build_py`` copies both folders' YAML files into the built
package as ``clustersim/_shipped/`` (looked up by ``clustersim/shipped.py``), so the files stay
in one place in the repository.  setuptools' ``package-dir`` cannot map them instead while the
packages are found automatically.
"""

from pathlib import Path

from setuptools import setup
from setuptools.command.build_py import build_py

ROOT = Path(__file__).resolve().parent


class BuildWithShippedFiles(build_py):
    def run(self) -> None:
        super().run()
        for kind in ("topologies", "scenarios"):
            target = Path(self.build_lib) / "clustersim" / "_shipped" / kind
            target.mkdir(parents=True, exist_ok=True)
            for src in sorted((ROOT / kind).glob("*.yaml")):
                self.copy_file(str(src), str(target / src.name))


setup(cmdclass={"build_py": BuildWithShippedFiles})
