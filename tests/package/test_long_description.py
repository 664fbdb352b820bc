"""What someone who installed with pip reads: the package's long description (its page on the package index),
the model cards shipped in the model distributions, and the README a clone opens with."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tests.helpers.paths import REPO
from tests.package.readme_blocks import README, fenced_blocks, long_description, marked_blocks

MODEL_CARDS = sorted((REPO / "dpr_components" / "models").glob("*/README.md"))
LINK = re.compile(
    r"!?\[[^\]]*\]\((?P<target>[^)\s]+)[^)]*\)|^\[[^\]]+\]:\s*(?P<reference>\S+)|href=\"(?P<href>[^\"]+)\"", re.M
)
# what exists only in a clone of the repository
CLONE_ONLY = ("./run.sh", "pipelines/", "examples/", "indexes/example", "python -m training", "docs/", "benchmarks/")
# why a block of an example is not run by the tests, by what it holds
NOT_RUN_BECAUSE = {
    "pip install": "installs from the network",
    "haystack serve": "serves until stopped (tests/package/test_wheel.py serves the installed package)",
    "train_dpr": "trains for minutes on data of the user's",
    "haystack run adapt": "trains for minutes on a store of the user's (tests/pipelines/test_adapt_pipeline.py)",
    "./run.sh": "sets up the clone's environment",
    "python -m training": "a recipe of the clone, on its data",
}


def _links(path: Path) -> list[str]:
    text = path.read_text(encoding="utf-8")
    return [next(group for group in match.groups() if group) for match in LINK.finditer(text)]


def test_the_long_description_is_its_own_file_for_an_install_with_pip() -> None:
    page = long_description()
    assert page != README and page.is_file() and page.suffix == ".md"
    text = page.read_text(encoding="utf-8")
    assert "pip install dpr-components" in text
    assert [fragment for fragment in CLONE_ONLY if fragment in text] == []


def test_the_long_description_links_only_to_absolute_addresses() -> None:
    links = _links(long_description())
    assert links, "no link found: the pattern is broken"
    assert [link for link in links if not link.startswith("https://")] == []


def test_the_readme_opens_with_the_two_commands_of_a_clone() -> None:
    text = README.read_text(encoding="utf-8")
    first = fenced_blocks(README)[0]
    assert text.index(first.code) < text.index("\n## ")
    assert [line.split("#")[0].strip() for line in first.code.strip().splitlines()] == [
        "./run.sh demo",
        "./run.sh test",
    ]


@pytest.mark.parametrize("page", [README, long_description()], ids=["README", "long description"])
def test_every_example_is_run_by_the_tests_or_says_why_not(page: Path) -> None:
    blocks = fenced_blocks(page)
    marked = marked_blocks(page)
    assert len(marked) >= 5 and {block.language for block in marked} == {"bash", "python"}
    unexplained = [
        block.where(page) for block in blocks if not block.tested and not any(k in block.code for k in NOT_RUN_BECAUSE)
    ]
    assert unexplained == []
    # run from an empty folder: nothing of a clone
    assert [(b.where(page), f) for b in marked for f in CLONE_ONLY if f in b.code] == []


def test_the_python_qa_example_is_the_same_in_both_pages() -> None:
    def qa_example(page: Path) -> str:
        return next(block.code for block in marked_blocks(page) if 'load_pipeline("qa"' in block.code)

    assert qa_example(README) == qa_example(long_description())


def test_there_are_model_cards_to_check() -> None:
    assert {card.parent.name for card in MODEL_CARDS} == {
        "dpr-minilm-multi",
        "dpr-minilm-pair",
        "reader-minilm",
        "ranker-minilm",
        "rerank-reader-minilm",
    }


@pytest.mark.parametrize("card", MODEL_CARDS, ids=[card.parent.name for card in MODEL_CARDS])
def test_model_cards_state_the_licences_and_where_the_recipes_run(card: Path) -> None:
    text = card.read_text(encoding="utf-8")
    licences = " ".join(text[text.index("## Licence and data") :].split())
    assert "all-MiniLM-L6-v2 (Apache-2.0)" in licences
    assert "Natural Questions (CC BY-SA 3.0)" in licences and "SQuAD v1.1 (CC BY-SA 4.0)" in licences
    if "python -m training" in text:  # the recipes: said plainly to be the source repository's
        assert "source repository" in text[: text.index("python -m training")], card
    assert "pipelines/" not in text, "name the packaged pipelines (qa, qa_fast...), not a clone's files"
