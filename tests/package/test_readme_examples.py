"""The examples of the README and of the package's long description run verbatim from an empty folder,
with the installed package and its bundled models, and the Python QA example answers as ``haystack run
qa`` does on the same store and questions, a question the corpus cannot answer included."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from tests.package.readme_blocks import README, Block, long_description, marked_blocks

pytestmark = [pytest.mark.integration, pytest.mark.timeout(1800)]

BIN = Path(sys.executable).parent
PAGES = {"README": README, "long description": long_description()}
# what a block prints, by a piece of its code: the example does what its page says
PRINTS = {
    'haystack run qa --store my_store -q "who wrote hamlet"': ["Shakespeare", "no answer"],
    "which mountain is the highest": ["['Mount Everest'"],
    "HaystackRetriever.from_pipeline": ["['Hamlet'"],
}
# "question: answer (score)", as the Python QA example prints each answer
PRINTED_ANSWER = re.compile(r"^(?P<question>.+?): (?P<answer>.+) \((?P<score>\d+\.\d\d)\)$")
SAME_AS_THE_COMMAND = """
import json, sys
from dpr_components.packaged import load_pipeline

qa = load_pipeline("qa", store="my_store")
for question in json.loads(sys.argv[1]):
    print(json.dumps([answer.to_dict() for answer in qa.run({"query": question})["reader"]["answers"]]))
"""


def _environment() -> dict[str, str]:
    """A user's shell with the package installed: its ``bin`` first on the PATH, nothing of the repository's."""
    environment = {**os.environ, "PATH": f"{BIN}{os.pathsep}{os.environ.get('PATH', '')}", "OMP_NUM_THREADS": "1"}
    environment.update(HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1", HF_DATASETS_OFFLINE="1")
    environment["HAYSTACK_TELEMETRY_ENABLED"] = "False"
    for name in ("PYTHONPATH", "HAYSTACK_DESERIALIZATION_ALLOWLIST", "DPR_ALLOW_NETWORK"):
        environment.pop(name, None)
    return environment


def _run(command: list[str], folder: Path, stdin: str | None = None) -> str:
    done = subprocess.run(
        command, input=stdin, cwd=folder, env=_environment(), capture_output=True, text=True, timeout=900, check=False
    )
    assert done.returncode == 0 and "Traceback" not in done.stderr, (
        f"{command}\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}"
    )
    return done.stdout


def _run_block(block: Block, folder: Path) -> str:
    """The block's code as it stands: bash (stopping at the first failing command) or Python."""
    if block.language == "bash":
        return _run(["bash", "-euo", "pipefail", "-c", block.code], folder)
    assert block.language == "python", block
    return _run([str(BIN / "python"), "-"], folder, stdin=block.code)


def _answers_of_the_command(folder: Path, questions: list[str]) -> list[list[dict]]:
    """``haystack run qa --json`` on ``questions``, one list of answers each."""
    batch = folder.parent / f"{folder.name}-questions.txt"
    batch.write_text("".join(f"{question}\n" for question in questions), encoding="utf-8")
    output = _run([str(BIN / "haystack"), "run", "qa", "--store", "my_store", "--batch", str(batch), "--json"], folder)
    lines = [json.loads(line) for line in output.strip().splitlines()]
    assert [line["query"] for line in lines] == questions, output[-2000:]
    return [line["result"]["reader"]["answers"] for line in lines]


def _check_same_answers(printed: str, folder: Path) -> None:
    """The example's printed answers and, for all of them, the pipeline it builds, against the command's."""
    lines = [PRINTED_ANSWER.match(line) for line in printed.strip().splitlines()]
    assert lines and all(lines), printed
    questions = [line["question"] for line in lines if line]
    expected = _answers_of_the_command(folder, questions)
    for line, answers in zip(lines, expected, strict=True):
        assert line is not None
        assert (line["answer"], line["score"]) == (answers[0]["data"] or "no answer", f"{answers[0]['score']:.2f}")
    assert "no answer" in [line["answer"] for line in lines if line], "the example asks no unanswerable question"
    assert any("Shakespeare" in line["answer"] for line in lines if line), printed
    built = _run([str(BIN / "python"), "-c", SAME_AS_THE_COMMAND, json.dumps(questions)], folder).strip().splitlines()
    for ours, theirs in zip((json.loads(line) for line in built), expected, strict=True):
        assert [a["data"] for a in ours] == [a["data"] for a in theirs]
        assert [a["score"] for a in ours] == pytest.approx([a["score"] for a in theirs], abs=1e-6)


@pytest.mark.parametrize("page", list(PAGES.values()), ids=list(PAGES))
def test_examples_run_verbatim_from_an_empty_folder(page: Path, tmp_path: Path) -> None:
    folder = tmp_path / "empty"
    folder.mkdir()
    blocks = marked_blocks(page)
    qa_examples = [block for block in blocks if 'load_pipeline("qa"' in block.code and block.language == "python"]
    assert len(qa_examples) == 1, f"{page.name}: one tested Python QA example expected"
    printed = {}
    for block in blocks:
        printed[block] = _run_block(block, folder)
        for fragment, outputs in PRINTS.items():
            if fragment in block.code:
                assert all(output in printed[block] for output in outputs), (block.where(page), printed[block])
    assert all(any(fragment in block.code for block in blocks) for fragment in PRINTS), "an example lost its test"
    assert (folder / "reports" / "dev" / "report.md").is_file() and (folder / "results.jsonl").stat().st_size > 0
    _check_same_answers(printed[qa_examples[0]], folder)
