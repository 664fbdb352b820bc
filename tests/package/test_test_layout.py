"""The tests mirror the code: every test module sits in a folder of ``tests/`` named after what it tests."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.helpers.paths import REPO

TESTS = REPO / "tests"
# Folders for what is not a package of dpr_components: the YAML pipelines, training/, benchmarks/,
# the package as a whole, the reliability suite and the shared helpers.
BESIDE_THE_PACKAGES = {"pipelines", "recipes", "benchmarks", "package", "reliability", "helpers"}


def _folders(root: Path) -> list[Path]:
    return sorted(p for p in root.iterdir() if p.is_dir() and not p.name.startswith((".", "__")))


def test_no_test_module_sits_at_the_top_of_tests() -> None:
    assert sorted(p.name for p in TESTS.glob("test_*.py")) == []


def test_every_test_folder_is_a_package_named_after_what_it_tests() -> None:
    packages = {p.name for p in _folders(REPO / "dpr_components") if (p / "__init__.py").is_file()}
    folders = _folders(TESTS)
    assert [f.name for f in folders if not (f / "__init__.py").is_file()] == []
    assert [f.name for f in folders if f.name not in packages | BESIDE_THE_PACKAGES] == []


def test_every_collected_test_is_in_exactly_one_tier(request: pytest.FixtureRequest) -> None:
    def tiers(item: pytest.Item) -> list[str]:
        return [name for name in ("unit", "integration") if item.get_closest_marker(name) is not None]

    assert [item.nodeid for item in request.session.items if len(tiers(item)) != 1] == []
