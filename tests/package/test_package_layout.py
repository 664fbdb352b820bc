"""The package layout: each component defined in one file under the path it is published at (its true
``__module__``, one type path), the command line apart, and the type paths removed in 0.3.0 answered
with the one to write instead."""

from __future__ import annotations

import ast
import importlib
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml
from haystack import Pipeline

from dpr_components.pipeline_files.loading import PipelineFileError, load_pipeline
from dpr_components.pipeline_files.removed_paths import REMOVED_TYPE_PATHS
from tests.helpers.paths import PIPELINES, REPO

FACES = REPO / "haystack_integrations"
STORE_TYPE = "haystack_integrations.document_stores.dpr.document_store.EmbeddedDocumentStore"
NEEDS_STORE = {
    "DenseRetriever",
    "BM25Retriever",
    "HybridRetriever",
    "HybridRanker",
    "PassageWriter",
    "FolderSync",
    "QuestionEncoderAdapter",
}


def _module_name(path: Path) -> str:
    return ".".join(path.relative_to(REPO).with_suffix("").parts)


def _defined_classes() -> dict[str, str]:
    """``module.Class`` of every class defined in the published package, by reading its files."""
    found = {}
    for path in sorted(FACES.rglob("*.py")):
        if path.name == "__init__.py":
            continue
        for node in ast.parse(path.read_text(encoding="utf-8")).body:
            if isinstance(node, ast.ClassDef) and not node.name.startswith("_"):
                found[f"{_module_name(path)}.{node.name}"] = node.name
    return found


COMPONENT_PATHS = sorted(path for path in _defined_classes() if path != STORE_TYPE)

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
for package in ("dpr_components", "haystack_integrations"):
    for path in sorted(pathlib.Path(package).rglob("*.py")):
        parts = path.with_suffix("").parts
        if "cli" in parts[1:2]:
            continue
        importlib.import_module(".".join(parts[:-1] if parts[-1] == "__init__" else parts))
leaked = sorted(name for name in sys.modules if name == "dpr_components.cli" or name.startswith("dpr_components.cli."))
print(leaked)
sys.exit(1 if leaked else 0)
"""


def _component(type_path: str, store_path: Path, store_type: str = STORE_TYPE) -> dict[str, Any]:
    params: dict[str, Any] = {}
    if type_path.rsplit(".", 1)[1] in NEEDS_STORE:
        params["document_store"] = {"type": store_type, "init_parameters": {"path": str(store_path)}}
    return {"type": type_path, "init_parameters": params}


def test_library_never_imports_the_command_line() -> None:
    done = subprocess.run(
        [sys.executable, "-c", LIBRARY_IMPORTS_ALL], capture_output=True, text=True, cwd=REPO, timeout=300, check=False
    )
    assert done.returncode == 0, f"library modules imported {done.stdout.strip()}\n{done.stderr[-2000:]}"


def test_the_published_package_defines_every_component() -> None:
    names = sorted(_defined_classes().values())
    assert names == sorted(
        [
            "AnswerExactMatchF1Evaluator",
            "BM25Retriever",
            "CorpusFileToDocument",
            "CorpusReader",
            "DPRPassageSplitter",
            "DPRTrainer",
            "DenseRetriever",
            "EmbeddedDocumentStore",
            "FileDocumentChecker",
            "FolderFetcher",
            "FolderSync",
            "HybridRanker",
            "HybridRetriever",
            "PassageEmbedder",
            "PassageRanker",
            "PassageWriter",
            "QuestionEmbedder",
            "QuestionEncoderAdapter",
            "RetrievalAccuracyEvaluator",
            "SpanReader",
        ]
    )


@pytest.mark.parametrize("type_path", [*COMPONENT_PATHS, STORE_TYPE])
def test_each_class_is_its_own_module_and_its_face_hands_it_out(type_path: str) -> None:
    module_name, name = type_path.rsplit(".", 1)
    cls = getattr(importlib.import_module(module_name), name)
    assert cls.__module__ == module_name and cls.__qualname__ == name
    face = importlib.import_module(module_name.rsplit(".", 1)[0])
    assert getattr(face, name) is cls
    with pytest.raises(AttributeError):
        face.NoSuchComponent  # noqa: B018 - the lookup is the test


def test_no_class_has_its_module_rewritten() -> None:
    rewritten = [
        f"{path.relative_to(REPO)}:{number}"
        for package in ("dpr_components", "haystack_integrations")
        for path in sorted((REPO / package).rglob("*.py"))
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
        if "__module__ =" in line
    ]
    assert rewritten == []


def test_faces_list_every_module_of_their_folder() -> None:
    for init in sorted(FACES.rglob("__init__.py")):
        tree = ast.parse(init.read_text(encoding="utf-8"))
        assigned = [
            n for n in tree.body if isinstance(n, ast.Assign) and ast.unparse(n.targets[0]) == "_import_structure"
        ]
        if not assigned:
            continue
        listed = set(ast.literal_eval(assigned[0].value))
        modules = {p.stem for p in init.parent.glob("*.py") if p.name != "__init__.py"}
        assert listed == modules, init


@pytest.mark.parametrize("type_path", COMPONENT_PATHS)
def test_type_path_round_trips_in_plain_haystack(type_path: str, tmp_path: Path) -> None:
    data = {"components": {"node": _component(type_path, tmp_path / "store")}, "connections": []}
    pipeline = Pipeline.from_dict(data)
    saved = pipeline.to_dict()["components"]["node"]
    assert saved["type"] == type_path
    if "document_store" in saved["init_parameters"]:
        assert saved["init_parameters"]["document_store"]["type"] == STORE_TYPE
    assert Pipeline.from_dict(pipeline.to_dict()).to_dict() == pipeline.to_dict()


@pytest.mark.parametrize("old_path", sorted(REMOVED_TYPE_PATHS))
def test_a_removed_type_path_names_the_one_to_write(old_path: str, tmp_path: Path) -> None:
    if old_path.endswith("EmbeddedDocumentStore"):
        node = _component(
            COMPONENT_PATHS[COMPONENT_PATHS.index(next(p for p in COMPONENT_PATHS if p.endswith(".DenseRetriever")))],
            tmp_path / "store",
            old_path,
        )
    else:
        node = _component(old_path, tmp_path / "store")
    path = tmp_path / "old.yml"
    path.write_text(yaml.safe_dump({"components": {"node": node}, "connections": []}), encoding="utf-8")
    with pytest.raises(PipelineFileError) as raised:
        load_pipeline(path)
    message = str(raised.value)
    assert "\n" not in message and f"type {old_path} was removed in 0.3.0" in message, message
    assert f"write {REMOVED_TYPE_PATHS[old_path]}" in message, message
    new_module, new_name = REMOVED_TYPE_PATHS[old_path].rsplit(".", 1)
    assert getattr(importlib.import_module(new_module), new_name).__name__ == new_name


def test_packaged_pipelines_load_in_plain_haystack_without_an_allowlist() -> None:
    """In a fresh process (no allowlist set by anything else); models load at warm-up, not when a file loads."""
    done = subprocess.run(
        [sys.executable, "-c", PLAIN_HAYSTACK_LOADS],
        capture_output=True,
        text=True,
        cwd=REPO,
        timeout=300,
        env={k: v for k, v in os.environ.items() if not k.startswith("HAYSTACK_DESERIALIZATION")},
        check=False,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout.strip().splitlines()[-1] == "loaded []"


def test_pipeline_files_name_current_paths_only() -> None:
    for path in sorted(PIPELINES.glob("*.yml")):
        components = yaml.safe_load(path.read_text(encoding="utf-8"))["components"]
        for name, spec in components.items():
            assert spec["type"] not in REMOVED_TYPE_PATHS, f"{path.name}: component {name!r} uses a removed type path"
            assert not spec["type"].startswith("dpr_components."), f"{path.name}: {name!r} needs an allowlist"


def test_command_line_runs_as_a_module() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "dpr_components.cli", "--help"],
        capture_output=True,
        text=True,
        cwd=REPO,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert "usage: haystack" in done.stdout


IMPORT_COST = """
import sys
from haystack_integrations.components.retrievers.dpr import BM25Retriever
BM25Retriever
heavy = sorted({name.split(".")[0] for name in sys.modules} & {"faiss", "transformers", "sentence_transformers"})
print(heavy)
sys.exit(1 if heavy else 0)
"""


def test_bm25_retriever_loads_neither_faiss_nor_transformers() -> None:
    done = subprocess.run(
        [sys.executable, "-c", IMPORT_COST], capture_output=True, text=True, cwd=REPO, timeout=120, check=False
    )
    assert done.returncode == 0, f"importing BM25Retriever loaded {done.stdout.strip()}\n{done.stderr[-2000:]}"


def test_a_face_loads_nothing_until_a_class_is_used() -> None:
    check = (
        "import sys; import haystack_integrations.components.retrievers.dpr as face; "
        "sys.exit(1 if 'haystack_integrations.components.retrievers.dpr.dense_retriever' in sys.modules else 0)"
    )
    done = subprocess.run(
        [sys.executable, "-c", check], capture_output=True, text=True, cwd=REPO, timeout=120, check=False
    )
    assert done.returncode == 0, done.stderr[-2000:]


def test_the_migration_page_lists_every_removed_type_path() -> None:
    page = (REPO / "docs" / "migration.md").read_text(encoding="utf-8")
    missing = [
        f"{old} -> {new}" for old, new in REMOVED_TYPE_PATHS.items() if f"`{old}`" not in page or f"`{new}`" not in page
    ]
    assert missing == []
