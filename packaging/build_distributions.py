"""Build the project's distributions: the code, and the trained models as distributions of their own.

    python packaging/build_distributions.py build --out dist     # every wheel and sdist, sizes checked
    python packaging/build_distributions.py stage --out DIR      # the model distributions' sources only

The code's wheel and sdist hold no weights (``dpr_components/models`` is left out); their long description,
the package index's page, is ``packaging/PYPI.md`` (``readme`` in pyproject.toml), written for an install
with pip. Each model
distribution of ``dpr_components.encoders.bundled.MODEL_DISTRIBUTIONS`` is staged as a small package
holding its models (copied from ``dpr_components/models``) and built from there. Every file written
must stay within a package index's default limit of 100 MB per file (PyPI's)."""

from __future__ import annotations

import argparse
import importlib.util
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path
from types import ModuleType
from typing import Any

REPO = Path(__file__).resolve().parents[1]


def _bundled() -> ModuleType:
    """``dpr_components/encoders/bundled.py`` read on its own (it needs only the standard library): this
    runs before the project or its dependencies are installed, as ``run.sh`` does on a new machine."""
    path = REPO / "dpr_components" / "encoders" / "bundled.py"
    spec = importlib.util.spec_from_file_location("dpr_components_bundled_models", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up there
    spec.loader.exec_module(module)
    return module


BUNDLED = _bundled()
MODEL_DISTRIBUTIONS, PACKAGED_MODELS_DIR = BUNDLED.MODEL_DISTRIBUTIONS, BUNDLED.PACKAGED_MODELS_DIR

MAX_FILE_BYTES = 100 * 1000 * 1000  # PyPI's default upload limit per file
# every shipped model's, as its model card states them
MODEL_LICENCES = (
    "Apache-2.0. The models are derived from all-MiniLM-L6-v2 (Apache-2.0) and trained on Natural Questions "
    "(CC BY-SA 3.0) and SQuAD v1.1 (CC BY-SA 4.0), passages from English Wikipedia (CC BY-SA)."
)
PYPROJECT = """[build-system]
requires = ["setuptools>=77"]
build-backend = "setuptools.build_meta"

[project]
name = "{name}"
version = "{version}"
description = "Trained models of dpr-components: {models}"
readme = "README.md"
requires-python = "{python}"
license = "Apache-2.0"
license-files = ["LICENSE"]
classifiers = ["Programming Language :: Python :: 3"]

[tool.setuptools]
packages = ["{package}"]

[tool.setuptools.package-data]
{package} = ["py.typed", "*/*", "*/*/*"]
"""


def project() -> dict:
    """The code's ``[project]`` table: the version and Python range the model distributions share."""
    return tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))["project"]


def stage(distribution: Any, out: Path) -> Path:
    """A source folder for ``distribution`` (a ``ModelDistribution``): its package with the models, a
    pyproject, a README and the license."""
    meta = project()
    source = out / distribution.name
    if source.exists():
        shutil.rmtree(source)
    package = source / distribution.package
    package.mkdir(parents=True)
    for model in distribution.models:
        shutil.copytree(PACKAGED_MODELS_DIR / model, package / model, ignore=shutil.ignore_patterns(".*"))
    names = ", ".join(f"bundled:{model}" for model in distribution.models)
    (package / "__init__.py").write_text(f'"""The models {names} of dpr-components."""\n', encoding="utf-8")
    (package / "py.typed").write_text("", encoding="utf-8")
    (source / "README.md").write_text(
        f"# {distribution.name}\n\nThe trained models {names} of dpr-components, read by `bundled:` names; "
        f"each folder's README.md is its model card.\n\n## Licence\n\n{MODEL_LICENCES}\n",
        encoding="utf-8",
    )
    (source / "LICENSE").write_bytes((REPO / "LICENSE").read_bytes())
    pyproject = PYPROJECT.format(
        name=distribution.name,
        version=meta["version"],
        models=names,
        python=meta["requires-python"],
        package=distribution.package,
    )
    (source / "pyproject.toml").write_text(pyproject, encoding="utf-8")
    return source


def build(source: Path, out: Path) -> None:
    """The wheel and sdist of the project at ``source`` into ``out`` (no isolation: this environment's setuptools)."""
    command = [sys.executable, "-m", "build", "--no-isolation", "--wheel", "--sdist", "--outdir", str(out), str(source)]
    subprocess.run(command, check=True, stdout=subprocess.DEVNULL)


def check_sizes(out: Path) -> list[tuple[str, int]]:
    """Every file in ``out`` with its size; ``SystemExit`` naming those over the limit."""
    sizes = sorted((path.name, path.stat().st_size) for path in out.iterdir() if path.is_file())
    too_large = [f"{name} ({size / 1e6:.1f} MB)" for name, size in sizes if size > MAX_FILE_BYTES]
    if too_large:
        raise SystemExit(f"over the {MAX_FILE_BYTES / 1e6:.0f} MB limit per file: {', '.join(too_large)}")
    return sizes


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("what", choices=["build", "stage"])
    parser.add_argument("--out", type=Path, required=True)
    args = parser.parse_args(argv)
    args.out.mkdir(parents=True, exist_ok=True)
    staging = args.out if args.what == "stage" else args.out / ".staging"
    sources = [stage(distribution, staging) for distribution in MODEL_DISTRIBUTIONS]
    if args.what == "stage":
        print("\n".join(str(source) for source in sources))
        return 0
    build(REPO, args.out)
    for source in sources:
        build(source, args.out)
    shutil.rmtree(staging)
    for name, size in check_sizes(args.out):
        print(f"{size / 1e6:8.1f} MB  {name}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
