"""The fenced code blocks of the README and the package's long description, and which of them the tests run.

A block is run by the tests when its info string is the language followed by ``test`` (```` ```bash test ````,
```` ```python test ````): renderers show the language only. The tested blocks of a page run in order, in
one empty folder, as a reader following the page would run them."""

from __future__ import annotations

import re
import tomllib
from dataclasses import dataclass
from pathlib import Path

from tests.helpers.paths import REPO

README = REPO / "README.md"
FENCE = re.compile(r"^```(?P<language>[\w-]*)(?P<marks>[^\n`]*)\n(?P<code>.*?)^```[ \t]*$", re.M | re.S)
TEST_MARK = "test"


@dataclass(frozen=True)
class Block:
    """One fenced block: its language, its code, its first line in the file and whether the tests run it."""

    language: str
    code: str
    line: int
    tested: bool

    def where(self, path: Path) -> str:
        return f"{path.relative_to(REPO)}:{self.line}"


def long_description() -> Path:
    """The file pyproject.toml names as the package's ``readme`` (its page on the package index)."""
    project = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    return REPO / project["readme"]


def fenced_blocks(path: Path) -> list[Block]:
    """Every fenced block of the Markdown file ``path``, in order."""
    text = path.read_text(encoding="utf-8")
    return [
        Block(
            language=match["language"],
            code=match["code"],
            line=text.count("\n", 0, match.start()) + 1,
            tested=TEST_MARK in match["marks"].split(),
        )
        for match in FENCE.finditer(text)
    ]


def marked_blocks(path: Path) -> list[Block]:
    return [block for block in fenced_blocks(path) if block.tested]
