"""Every line-by-line loader reads through ``utils.line_files.numbered_lines``: one error format, one size bound."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from dpr_components.cli.batch_lines import batch_queries
from dpr_components.dpr_data.loading import load_training_examples
from dpr_components.evaluation.questions import load_questions
from dpr_components.reader_training.data import read_jsonl, read_mined
from dpr_components.utils.line_files import numbered_lines

QUESTION = b'{"id": "q1", "question": "q", "answers": ["a"], "positive_ctxs": [{"title": "T", "text": "a"}]}\n'
MINED = (
    b'{"id": "q1", "question": "q", "answers": ["a"], "kind": "gold", "gold": {"title": "T", "text": "a"}, '
    b'"positive_ids": [], "negative_ids": [], "top_ids": []}\n'
)

LOADERS: dict[str, tuple[Callable[[Path], Any], bytes]] = {
    "evaluation questions": (load_questions, QUESTION),
    "training data": (load_training_examples, QUESTION),
    "reader questions": (read_jsonl, QUESTION),
    "mined reader questions": (read_mined, MINED),
    "--batch file": (lambda path: list(batch_queries(str(path))), b"first query\n"),
}


@pytest.mark.parametrize("loader, first_line", LOADERS.values(), ids=LOADERS.keys())
def test_undecodable_bytes_are_named_by_file_and_line(
    tmp_path: Path, loader: Callable[[Path], Any], first_line: bytes
) -> None:
    path = tmp_path / "data.jsonl"
    path.write_bytes(first_line + b'{"question": "caf\xe9"}\n')
    with pytest.raises(ValueError, match=rf"{path.name}:2: not valid UTF-8"):
        loader(path)


def test_numbered_lines_bounds_the_line_length(tmp_path: Path) -> None:
    path = tmp_path / "long.txt"
    path.write_bytes(b"short\n" + b"x" * 11 + b"\n")
    lines = numbered_lines(path, "test file", max_line_bytes=10)
    assert next(lines) == (1, "short\n")
    with pytest.raises(ValueError, match=r"long.txt:2: the line is longer than 10 bytes"):
        next(lines)


def test_numbered_lines_names_missing_files(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match=r"^test file .*missing.txt does not exist$"):
        list(numbered_lines(tmp_path / "missing.txt", "test file"))
