"""Training examples from Hugging Face ``datasets``: a hub id (needs network) or local
parquet / arrow / JSON files and folders (work offline).

Rows are either DPR-shaped (``question``, ``answers``, ``positive_ctxs``...) or SQuAD-shaped
(``question``, ``context``, ``title``, ``answers: {"text": [...]}``)."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from dpr_components.dpr_data.examples import (
    Ctx,
    LoadedExamples,
    TrainingExample,
    collect_examples,
)
from dpr_components.dpr_data.records import (
    MAX_TRAINING_PASSAGE_CHARS,
    MAX_TRAINING_TITLE_CHARS,
    RecordError,
    check_answers,
    check_length,
    check_question,
    example_from_record,
    record_id,
)
from dpr_components.utils.extras import DATASETS, DATASETS_READS, import_extra
from dpr_components.utils.settings import hf_offline

_BUILDERS = {".parquet": "parquet", ".arrow": "arrow", ".json": "json", ".jsonl": "json", ".csv": "csv"}


def _load(source: str) -> Any:
    # deferred: slow to import, and an extra of the package
    datasets = import_extra(DATASETS, f"training data {source!r}: reading {DATASETS_READS}")
    path = Path(source)
    try:
        if path.is_file():
            builder = _BUILDERS.get(path.suffix.lower())
            if builder is None:
                raise RecordError(f"{source}: cannot read a {path.suffix} file with datasets")
            return datasets.load_dataset(builder, data_files=str(path))
        return datasets.load_dataset(source)
    except ConnectionError as error:
        if path.exists():
            raise
        reason = "offline mode is on and it is not cached" if hf_offline() else "the Hub could not be reached"
        raise ConnectionError(
            f"cannot load Hugging Face dataset {source!r}: {reason}. Download it where there is network "
            "and pass the local parquet/JSON file or folder instead."
        ) from error
    except (RecordError, FileNotFoundError):
        raise
    except Exception as error:  # datasets wraps parse errors in its own exception types
        raise RecordError(f"{source}: could not be read with Hugging Face datasets: {error}") from error


def _squad_row(row: Mapping[str, Any], where: str, default_id: str) -> TrainingExample | None:
    question = check_question(row.get("question"), where)
    context = row.get("context")
    if not isinstance(context, str) or not context.strip():
        raise RecordError(f"{where}: field 'context': expected a non-empty string")
    check_length(context, where, "context", MAX_TRAINING_PASSAGE_CHARS)
    answers = row.get("answers", [])
    if isinstance(answers, Mapping):
        answers = answers.get("text", [])
    answers = check_answers(answers, where)
    if not answers:
        return None  # SQuAD v2 unanswerable: the paragraph is not a positive
    title = row.get("title") or ""
    if not isinstance(title, str):
        raise RecordError(f"{where}: field 'title': expected a string")
    check_length(title, where, "title", MAX_TRAINING_TITLE_CHARS)
    return TrainingExample(
        question=question,
        answers=answers,
        positives=[Ctx(title.replace("_", " ").strip(), context.strip())],
        id=record_id(row, where, default_id),
    )


def load_hf_examples(source: str, split: str | None = None, limit: int | None = None) -> LoadedExamples:
    """Examples from a ``datasets`` source; ``split`` is required when it has several splits."""
    loaded = _load(source)
    names = list(loaded.keys())
    if split is None:
        if len(names) != 1:
            raise RecordError(f"{source}: has splits {names}; choose one with split=")
        split = names[0]
    elif split not in names:
        raise RecordError(f"{source}: no split {split!r}; available splits are {names}")
    dataset = loaded[split]
    columns = set(dataset.column_names)
    parse: Callable[[Mapping[str, Any], str, str], TrainingExample | None]
    if "positive_ctxs" in columns:
        parse = example_from_record
    elif {"question", "context"} <= columns:
        parse = _squad_row
    else:
        raise RecordError(
            f"{source}, split {split!r}: columns {sorted(columns)} are neither DPR's "
            "(question, answers, positive_ctxs) nor SQuAD's (question, context, answers)"
        )
    parsed = (parse(row, f"{source}, split {split!r}, row {i}", f"{split}-{i}") for i, row in enumerate(dataset))
    examples, skipped = collect_examples(parsed, limit)
    return LoadedExamples(examples, f"{source} [{split}]", skipped)
