"""``haystack run`` of a folder indexing pipeline (``index_files``): the folder compared with the store first,
then its new and changed files sent through the pipeline a few at a time under one bar over the files,
ending with a summary.

1. **Plan.** The folder is listed and every file hashed (``FolderFetcher``'s listing, without keeping the
   bytes), the store's files read, and ``FolderSync`` decides: new and changed files are indexed, unchanged
   ones left alone, the passages of changed files and of files gone from the folder removed, in one delete,
   before anything is indexed.
2. **Index.** The files to index go through the whole pipeline in steps of at most ``FILES_PER_STEP`` files
   and ``BYTES_PER_STEP`` bytes, each step given as the fetcher's and the sync's ``files``, so memory holds
   one step's files and passages and each step's passages are written in one write: a file's passages land
   together or not at all. A step that fails (a component refusing a file, or failing on it) is run again a
   file at a time, so one bad file is named and skipped instead of stopping the run; a failure of the store
   or the disk stops it.
3. **Save.** The store's indexes are built and saved, as after a streamed corpus run.

A run killed at any point and run again ends with the store one uninterrupted run gives
(``dpr_components/corpus/folder_sync.py`` says why). A folder holding no file of an indexed kind is an
error before anything is removed: a mistyped folder must not empty the store."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from functools import partial
from typing import Any

from haystack import Pipeline
from haystack.document_stores.errors import DocumentStoreError
from tqdm.auto import tqdm

from dpr_components.corpus.file_types import SUFFIXES
from dpr_components.corpus.folder_files import Refusal, list_folder
from dpr_components.corpus.folder_sync import FileVersion
from dpr_components.index_runs.streamed_run import WRITTEN, component_bars_off, save_stores
from dpr_components.pipeline_requests.running import run_pipeline
from dpr_components.utils.fault_points import fault_point
from haystack_integrations.components.fetchers.dpr.folder_fetcher import FolderFetcher
from haystack_integrations.components.writers.dpr.folder_sync import FolderSync

FILES_PER_STEP = 32
BYTES_PER_STEP = 16 * 1024 * 1024
StepRunner = Callable[..., dict[str, Any]]


@dataclass
class FolderRunOutcome:
    """What a run did, file by file: ``indexed``, ``unchanged``, ``removed`` (passages deleted) and ``kept``
    (gone from the folder, passages kept), ``skipped`` with reasons, files of other kinds by extension, and
    the passages written."""

    folder: str
    indexed: list[str] = field(default_factory=list)
    unchanged: list[str] = field(default_factory=list)
    removed: list[str] = field(default_factory=list)
    kept: list[str] = field(default_factory=list)
    skipped: list[Refusal] = field(default_factory=list)
    other_types: dict[str, int] = field(default_factory=dict)
    documents_written: int = 0

    @property
    def nothing_indexed(self) -> bool:
        """Whether no file of the folder is in the store at the end: none indexed now, none unchanged."""
        return not self.indexed and not self.unchanged

    def to_dict(self) -> dict[str, Any]:
        return {
            "folder": self.folder,
            "indexed": self.indexed,
            "unchanged": self.unchanged,
            "removed": self.removed,
            "kept": self.kept,
            "skipped": [{"path": s.path, "reason": s.reason} for s in self.skipped],
            "other_types": self.other_types,
            WRITTEN: self.documents_written,
        }


def folder_to_index(pipeline: Pipeline, inputs: dict[str, dict[str, Any]]) -> str | None:
    """The folder of a run that this module drives: the pipeline has one ``FolderFetcher`` and one
    ``FolderSync``, and the fetcher is given a ``path`` and no ``files``."""
    fetchers = [name for name, instance in pipeline.walk() if isinstance(instance, FolderFetcher)]
    syncs = [name for name, instance in pipeline.walk() if isinstance(instance, FolderSync)]
    if len(fetchers) != 1 or len(syncs) != 1:
        return None
    given = inputs.get(fetchers[0], {})
    path = given.get("path")
    return path if isinstance(path, str) and given.get("files") is None else None


def run_folder(
    pipeline: Pipeline,
    folder: str,
    inputs: dict[str, dict[str, Any]] | None = None,
    run: StepRunner | None = None,
    report: Callable[[str], None] | None = None,
) -> FolderRunOutcome:
    """Index ``folder`` with ``pipeline`` (see the module docstring).

    :param inputs: the pipeline's inputs, per component (the fetcher's ``path`` is ``folder``).
    :param run: runs the pipeline on one step's inputs, with keyword options (default :func:`run_pipeline`).
    :param report: receives a line when the stores' indexes are saved.
    :returns: what was indexed, left, removed and skipped."""
    (fetcher_name, _), (sync_name, sync) = component_of(pipeline, FolderFetcher), component_of(pipeline, FolderSync)
    listing = list_folder(folder, keep_data=False)
    if not listing.present:
        others = ", ".join(f"{suffix} {count}" for suffix, count in sorted(listing.other_types.items()))
        raise ValueError(
            f"folder {folder} holds no file to index (the kinds indexed: {' '.join(SUFFIXES)})"
            + (f"; it holds only files of other kinds ({others})" if others else "")
        )
    given = inputs or {}
    keep = given.get(sync_name, {}).get("keep_removed")
    current = {f.path: FileVersion(f.sha256, f.modified) for f in listing.files}
    plan = sync.plan(current, listing.present, None, keep)
    sync.apply(plan)
    fault_point("folder_run.after_removals")
    outcome = FolderRunOutcome(folder, unchanged=list(plan.unchanged), removed=list(plan.removed), kept=list(plan.kept))
    outcome.skipped.extend(listing.refused)
    outcome.other_types = dict(sorted(listing.other_types.items()))
    sizes = {f.path: f.size for f in listing.files}
    show_progress = any(getattr(instance, "progress_bar", None) is True for _, instance in pipeline.walk())
    pipeline.warm_up()  # models load before the bar starts
    steps = _Steps(run or partial(run_pipeline, pipeline), fetcher_name, sync_name, folder, given, outcome)
    with (
        component_bars_off(pipeline),
        tqdm(total=len(plan.index), desc="Indexing", unit="file", disable=not show_progress) as bar,
    ):
        for step in _steps(plan.index, sizes):
            steps(step)
            bar.set_postfix_str(f"{outcome.documents_written:,} passages", refresh=False)
            bar.update(len(step))
    save_stores(pipeline, report)
    outcome.skipped.sort(key=lambda s: s.path)
    return outcome


def component_of(pipeline: Pipeline, cls: type) -> tuple[str, Any]:
    """The name and instance of ``pipeline``'s (first) component of class ``cls``."""
    return next((name, instance) for name, instance in pipeline.walk() if isinstance(instance, cls))


def _steps(paths: list[str], sizes: dict[str, int]) -> Iterator[list[str]]:
    """``paths`` in consecutive groups of at most ``FILES_PER_STEP`` files and about ``BYTES_PER_STEP`` bytes."""
    step: list[str] = []
    size = 0
    for path in paths:
        if step and (len(step) == FILES_PER_STEP or size + sizes[path] > BYTES_PER_STEP):
            yield step
            step, size = [], 0
        step.append(path)
        size += sizes[path]
    if step:
        yield step


class _Steps:
    """Runs the pipeline on a step's files and adds what it did to the outcome."""

    def __init__(
        self,
        run: StepRunner,
        fetcher: str,
        sync: str,
        folder: str,
        inputs: dict[str, dict[str, Any]],
        outcome: FolderRunOutcome,
    ) -> None:
        self.run, self.fetcher, self.sync, self.folder = run, fetcher, sync, folder
        self.inputs, self.outcome = inputs, outcome

    def __call__(self, step: list[str]) -> None:
        try:
            self._one(step)
        except (OSError, DocumentStoreError):
            raise  # the store or the disk: no other file would fare better
        except Exception as error:  # noqa: BLE001 - one file's failure, whatever it is, must not stop the others
            if len(step) == 1:
                words = " ".join(str(error).split()) or type(error).__name__
                reason = words if isinstance(error, ValueError) else f"{type(error).__name__}: {words}"
                self.outcome.skipped.append(Refusal(step[0], reason))
                return
            for path in step:
                self([path])

    def _one(self, step: list[str]) -> None:
        data = {
            **{name: values for name, values in self.inputs.items() if name not in (self.fetcher, self.sync)},
            self.fetcher: {**self.inputs.get(self.fetcher, {}), "path": self.folder, "files": step},
            self.sync: {**self.inputs.get(self.sync, {}), "files": step},
        }
        add_step_result(self.outcome, self.run(data, include_outputs_from={self.sync}), self.sync)


def add_step_result(outcome: FolderRunOutcome, result: dict[str, Any], sync: str) -> None:
    """What one run of the pipeline did (its result, with the outputs of the ``FolderSync`` called ``sync``),
    added to ``outcome``: the files refused by any component, indexed, unchanged, removed, kept; passages written."""
    synced = result.get(sync, {})
    skipped = [
        Refusal(s["path"], s["reason"])
        for name, outputs in result.items()
        if name != sync
        for s in outputs.get("skipped", [])
    ]
    refused = {s.path for s in skipped}
    outcome.skipped.extend(skipped)
    outcome.indexed.extend(s.meta["path"] for s in synced.get("sources", []) if s.meta["path"] not in refused)
    outcome.unchanged.extend(synced.get("unchanged", []))
    outcome.removed.extend(synced.get("removed", []))
    outcome.kept.extend(synced.get("kept", []))
    outcome.documents_written += sum(outputs.get(WRITTEN, 0) for outputs in result.values())


def summary_lines(outcome: FolderRunOutcome) -> list[str]:
    """The summary a user reads at the end: a line per skipped file with its reason, then the counts."""
    lines = [f"skipped {s.path}: {s.reason}" for s in outcome.skipped]
    if outcome.other_types:
        counted = ", ".join(f"{count} {suffix}" for suffix, count in outcome.other_types.items())
        lines.append(f"not indexed, of other kinds: {counted} (the kinds indexed: {' '.join(SUFFIXES)})")
    parts = [
        f"{len(outcome.indexed)} indexed",
        f"{len(outcome.unchanged)} unchanged",
        f"{len(outcome.removed)} removed",
        *([f"{len(outcome.kept)} gone from the folder, passages kept"] if outcome.kept else []),
        f"{len(outcome.skipped)} skipped",
    ]
    written = outcome.documents_written
    lines.append(
        f"{outcome.folder}: files {', '.join(parts)}; {written:,} passage{'' if written == 1 else 's'} written"
    )
    return lines
