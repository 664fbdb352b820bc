"""The package layout: components by role, the command line apart, old pipeline type paths still loading."""

from __future__ import annotations

import importlib
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml
from haystack import Pipeline

from dpr_components.legacy.old_paths import LEGACY_TYPE_PATHS
from dpr_components.utils.type_paths import current_type_path
from tests.helpers.paths import PIPELINES, REPO

# Every component type path the pipeline files used before the layout by role.
OLD_TYPE_PATHS = [
    "dpr_components.retrievers.DenseRetriever",
    "dpr_components.retrievers.BM25Retriever",
    "dpr_components.ranker.HybridRanker",
    "dpr_components.embedders.PassageEmbedder",
    "dpr_components.embedders.QuestionEmbedder",
    "dpr_components.reader.span_reader.SpanReader",
    "dpr_components.evaluation.evaluators.RetrievalAccuracyEvaluator",
    "dpr_components.evaluation.evaluators.AnswerExactMatchF1Evaluator",
    "dpr_components.indexing.components.CorpusReader",
    "dpr_components.indexing.components.DPRPassageSplitter",
    "dpr_components.training.component.DPRTrainer",
]

# Where each component is defined, and the path it is published under (Haystack's default allowlist).
DEFINED_AND_PUBLISHED = {
    "dpr_components.retrievers.dense.DenseRetriever": "haystack_integrations.components.retrievers.dpr.DenseRetriever",
    "dpr_components.retrievers.bm25.BM25Retriever": "haystack_integrations.components.retrievers.dpr.BM25Retriever",
    "dpr_components.retrievers.hybrid.HybridRetriever": "haystack_integrations.components.retrievers.dpr.HybridRetriever",
    "dpr_components.rankers.hybrid.HybridRanker": "haystack_integrations.components.rankers.dpr.HybridRanker",
    "dpr_components.rankers.passage_ranker.PassageRanker": "haystack_integrations.components.rankers.dpr.PassageRanker",
    "dpr_components.embedders.passage.PassageEmbedder": "haystack_integrations.components.embedders.dpr.PassageEmbedder",
    "dpr_components.embedders.question.QuestionEmbedder": "haystack_integrations.components.embedders.dpr.QuestionEmbedder",
    "dpr_components.readers.span_reader.SpanReader": "haystack_integrations.components.readers.dpr.SpanReader",
    "dpr_components.evaluators.retrieval_accuracy.RetrievalAccuracyEvaluator": "haystack_integrations.components.evaluators.dpr.RetrievalAccuracyEvaluator",
    "dpr_components.evaluators.answer_exact_match.AnswerExactMatchF1Evaluator": "haystack_integrations.components.evaluators.dpr.AnswerExactMatchF1Evaluator",
    "dpr_components.indexing.components.CorpusReader": "haystack_integrations.components.converters.dpr.CorpusReader",
    "dpr_components.indexing.components.DPRPassageSplitter": "haystack_integrations.components.preprocessors.dpr.DPRPassageSplitter",
    "dpr_components.indexing.writer.PassageWriter": "haystack_integrations.components.writers.dpr.PassageWriter",
    "dpr_components.encoder_training.component.DPRTrainer": "haystack_integrations.components.trainers.dpr.DPRTrainer",
}
STORE_PATHS = (
    "dpr_components.document_stores.embedded.EmbeddedDocumentStore",
    "haystack_integrations.document_stores.dpr.EmbeddedDocumentStore",
)

NEEDS_STORE = {"DenseRetriever", "BM25Retriever", "HybridRetriever", "HybridRanker", "PassageWriter"}

PLAIN_HAYSTACK_LOADS = """
import sys
from haystack import Pipeline
from dpr_components.packaged import packaged_pipeline_names, packaged_pipeline_path
for name in packaged_pipeline_names():
    if "elasticsearch" not in name:
        Pipeline.loads(packaged_pipeline_path(name).read_text(encoding="utf-8"))
heavy = sorted(m for m in ("transformers",) if m in sys.modules)
print("loaded", heavy)
"""

LIBRARY_IMPORTS_ALL = """
import importlib, pathlib, sys
package = pathlib.Path("dpr_components")
for path in sorted(package.rglob("*.py")):
    parts = path.with_suffix("").parts
    if "cli" in parts[1:2]:
        continue
    importlib.import_module(".".join(parts[:-1] if parts[-1] == "__init__" else parts))
leaked = sorted(name for name in sys.modules if name == "dpr_components.cli" or name.startswith("dpr_components.cli."))
print(leaked)
sys.exit(1 if leaked else 0)
"""


def _component(type_path: str, store_path: Path, store_type: str = STORE_PATHS[0]) -> dict[str, Any]:
    params: dict[str, Any] = {}
    if type_path.rsplit(".", 1)[1] in NEEDS_STORE:
        params["document_store"] = {"type": store_type, "init_parameters": {"path": str(store_path)}}
    return {"type": type_path, "init_parameters": params}


def test_library_never_imports_the_command_line() -> None:
    done = subprocess.run(
        [sys.executable, "-c", LIBRARY_IMPORTS_ALL], capture_output=True, text=True, cwd=REPO, timeout=300
    )
    assert done.returncode == 0, f"library modules imported {done.stdout.strip()}\n{done.stderr[-2000:]}"


@pytest.mark.parametrize("old_path", OLD_TYPE_PATHS)
def test_old_type_path_loads_in_plain_haystack(old_path: str, tmp_path: Path) -> None:
    data = {"components": {"node": _component(old_path, tmp_path / "store")}, "connections": []}
    pipeline = Pipeline.from_dict(data, allowed_modules=["dpr_components"])
    instance = pipeline.get_component("node")
    assert type(instance).__name__ == old_path.rsplit(".", 1)[1]
    # Saved again, the pipeline names the class by its published path.
    assert pipeline.to_dict()["components"]["node"]["type"] == current_type_path(old_path)
    assert current_type_path(old_path).startswith("haystack_integrations.")


@pytest.mark.parametrize("defined_path", sorted(DEFINED_AND_PUBLISHED))
def test_definition_path_loads_with_the_package_allowed(defined_path: str, tmp_path: Path) -> None:
    data = {"components": {"node": _component(defined_path, tmp_path / "store")}, "connections": []}
    pipeline = Pipeline.from_dict(data, allowed_modules=["dpr_components"])
    saved = pipeline.to_dict()["components"]["node"]
    assert saved["type"] == DEFINED_AND_PUBLISHED[defined_path]
    if "document_store" in saved["init_parameters"]:
        assert saved["init_parameters"]["document_store"]["type"] == STORE_PATHS[1]


@pytest.mark.parametrize("published_path", sorted(DEFINED_AND_PUBLISHED.values()))
def test_published_path_round_trips(published_path: str, tmp_path: Path) -> None:
    data = {"components": {"node": _component(published_path, tmp_path / "store", STORE_PATHS[1])}, "connections": []}
    pipeline = Pipeline.from_dict(data)
    assert pipeline.to_dict()["components"]["node"]["type"] == published_path
    assert Pipeline.from_dict(pipeline.to_dict()).to_dict() == pipeline.to_dict()


def test_packaged_pipelines_load_in_plain_haystack_without_an_allowlist() -> None:
    """In a fresh process (no allowlist set by anything else); models load at warm-up, not when a file loads."""
    done = subprocess.run(
        [sys.executable, "-c", PLAIN_HAYSTACK_LOADS],
        capture_output=True,
        text=True,
        cwd=REPO,
        timeout=300,
        env={k: v for k, v in os.environ.items() if not k.startswith("HAYSTACK_DESERIALIZATION")},
    )
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout.strip().splitlines()[-1] == "loaded []"


def test_pipeline_files_name_current_paths_only() -> None:
    for path in sorted(PIPELINES.glob("*.yml")):
        components = yaml.safe_load(path.read_text(encoding="utf-8"))["components"]
        for name, spec in components.items():
            assert spec["type"] not in LEGACY_TYPE_PATHS, f"{path.name}: component {name!r} uses an old type path"
            assert not spec["type"].startswith("dpr_components."), f"{path.name}: {name!r} needs an allowlist"


def test_packages_re_export_their_components() -> None:
    from dpr_components.document_stores import EmbeddedDocumentStore
    from dpr_components.embedders import PassageEmbedder, QuestionEmbedder
    from dpr_components.encoder_training.component import DPRTrainer
    from dpr_components.evaluators import (
        AnswerExactMatchF1Evaluator,
        RetrievalAccuracyEvaluator,
    )
    from dpr_components.rankers import HybridRanker
    from dpr_components.readers import SpanReader
    from dpr_components.retrievers import BM25Retriever, DenseRetriever

    classes = (
        EmbeddedDocumentStore,
        PassageEmbedder,
        QuestionEmbedder,
        AnswerExactMatchF1Evaluator,
        RetrievalAccuracyEvaluator,
        HybridRanker,
        SpanReader,
        BM25Retriever,
        DenseRetriever,
        DPRTrainer,
    )
    for cls in classes:
        # Published under haystack_integrations, and that module hands out the very same class.
        assert cls.__module__.startswith("haystack_integrations."), cls
        assert getattr(importlib.import_module(cls.__module__), cls.__name__) is cls


def test_command_line_runs_as_a_module() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "dpr_components.cli", "--help"], capture_output=True, text=True, cwd=REPO, timeout=120
    )
    assert done.returncode == 0, done.stderr
    assert "usage: haystack" in done.stdout


IMPORT_COST = """
import sys
import dpr_components.retrievers.bm25
from dpr_components.retrievers import BM25Retriever
heavy = sorted({name.split(".")[0] for name in sys.modules} & {"faiss", "transformers", "sentence_transformers"})
print(heavy)
sys.exit(1 if heavy else 0)
"""


def test_bm25_retriever_loads_neither_faiss_nor_transformers() -> None:
    done = subprocess.run([sys.executable, "-c", IMPORT_COST], capture_output=True, text=True, cwd=REPO, timeout=120)
    assert done.returncode == 0, f"importing BM25Retriever loaded {done.stdout.strip()}\n{done.stderr[-2000:]}"


def test_old_type_paths_load_nothing_until_used() -> None:
    """Registering the old paths of a package face builds none of its classes."""
    check = (
        "import sys; from haystack import component; import dpr_components.retrievers; "
        "assert 'dpr_components.retrievers.DenseRetriever' in component.registry; "
        "sys.exit(1 if 'dpr_components.retrievers.dense' in sys.modules else 0)"
    )
    done = subprocess.run([sys.executable, "-c", check], capture_output=True, text=True, cwd=REPO, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]


def test_every_face_hands_out_the_classes_it_publishes() -> None:
    from dpr_components.utils.published import FACES

    published = {f"{face}.{name}" for face, names in FACES.items() for name in names}
    assert set(DEFINED_AND_PUBLISHED.values()) | {STORE_PATHS[1]} == published
    for face, names in FACES.items():
        module = importlib.import_module(face)
        assert sorted(module.__all__) == sorted(names) == dir(module)
        for name in names:
            cls = getattr(module, name)
            assert cls.__module__ == face and cls.__name__ == name
        stub = Path(module.__file__).with_suffix(".pyi").read_text(encoding="utf-8")
        assert all(f"import {name} as {name}" in stub for name in names)
        with pytest.raises(AttributeError, match="has no attribute"):
            getattr(module, "NoSuchComponent")
