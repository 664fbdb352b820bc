"""The package outside the repository: build the wheel and the sdist, install each into a fresh venv
and use it from an empty folder — a packaged pipeline run by name, plain ``Pipeline.loads`` of a
packaged file without an allowlist, a question answered with the bundled models.

The fresh venv sees this environment's dependencies (torch, transformers, haystack…) through a
``.pth`` line, so nothing is downloaded; this package itself comes only from the built archive
(a ``.pth`` inside a path added that way is not run, so the editable install stays out of sight)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import sysconfig
import zipfile
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
SOURCES = ("pyproject.toml", "README.md", "dpr_components", "haystack_integrations")
CORPUS = [
    {"id": "hamlet", "title": "Hamlet", "text": "Hamlet is a tragedy written by William Shakespeare around 1600."},
    {"id": "everest", "title": "Mount Everest", "text": "Mount Everest is Earth's highest mountain above sea level."},
    {"id": "paris", "title": "Paris", "text": "Paris is the capital and most populous city of France."},
]
PLAIN_LOADS = """
import dpr_components, sys
from haystack import Pipeline
from importlib.resources import files
text = (files("dpr_components") / "pipelines" / "search.yml").read_text(encoding="utf-8")
pipeline = Pipeline.loads(text.replace("indexes/example", sys.argv[1]))
documents = pipeline.run({"hybrid": {"query": "highest mountain", "top_k": 1}})["hybrid"]["documents"]
print(dpr_components.__file__)
print(documents[0].meta["title"])
"""

pytestmark = [pytest.mark.integration, pytest.mark.timeout(900)]


def _copy_sources(target: Path) -> Path:
    """The files a build reads, without caches or anything else of the working tree."""
    source = target / "source"
    source.mkdir()
    for name in SOURCES:
        origin = REPO / name
        if origin.is_dir():
            shutil.copytree(origin, source / name, ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
        else:
            shutil.copy2(origin, source / name)
    return source


def _run(command: list[str], cwd: Path, **kwargs: object) -> subprocess.CompletedProcess[str]:
    environment = {**os.environ, "OMP_NUM_THREADS": "1"}
    environment.pop("HAYSTACK_DESERIALIZATION_ALLOWLIST", None)
    done = subprocess.run(command, cwd=cwd, capture_output=True, text=True, env=environment, **kwargs)  # type: ignore[call-overload]
    assert done.returncode == 0, f"{' '.join(map(str, command))}\n{done.stdout[-2000:]}\n{done.stderr[-4000:]}"
    return done


def _fresh_venv(folder: Path) -> Path:
    """A venv whose only source of this package is what gets installed into it."""
    # without pip of its own: this environment's pip and setuptools (through the .pth) do the install
    _run([sys.executable, "-m", "venv", "--without-pip", str(folder)], cwd=folder.parent)
    python = folder / "bin" / "python"
    purelib = _run([str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"], cwd=folder)
    (Path(purelib.stdout.strip()) / "dependencies.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    return python


@pytest.fixture(scope="module")
def archives(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    work = tmp_path_factory.mktemp("build")
    source = _copy_sources(work)
    dist = work / "dist"
    _run(
        [sys.executable, "-m", "build", "--no-isolation", "--wheel", "--sdist", "--outdir", str(dist), str(source)],
        cwd=work,
    )
    return {"wheel": next(dist.glob("*.whl")), "sdist": next(dist.glob("*.tar.gz"))}


def test_wheel_holds_the_pipelines_models_and_faces(archives: dict[str, Path]) -> None:
    names = set(zipfile.ZipFile(archives["wheel"]).namelist())
    assert "dpr_components/pipelines/qa.yml" in names and "dpr_components/py.typed" in names
    assert "dpr_components/models/reader-minilm/model.safetensors" in names
    assert "dpr_components/models/ranker-minilm/model.safetensors" in names
    assert "dpr_components/models/rerank-reader-minilm/model.safetensors" in names
    assert "dpr_components/models/dpr-minilm-multi/question_encoder/model.safetensors" in names
    assert "haystack_integrations/components/retrievers/dpr/__init__.py" in names
    assert "haystack_integrations/components/retrievers/dpr/__init__.pyi" in names
    # the ask page haystack serve answers at GET /
    assert {f"dpr_components/serving/page/{name}" for name in ("index.html", "app.js", "app.css")} <= names
    # haystack_integrations is shared with other integrations: a namespace package, no __init__ of its own
    assert not any(
        name in names for name in ("haystack_integrations/__init__.py", "haystack_integrations/components/__init__.py")
    )
    assert not any("__pycache__" in name or name.startswith(("tests/", "benchmarks/", "training/")) for name in names)


def _install(archive: Path, folder: Path) -> Path:
    python = _fresh_venv(folder / "venv")
    _run(
        [str(python), "-m", "pip", "install", "--no-deps", "--no-index", "--no-build-isolation", str(archive)],
        cwd=folder,
    )
    return python


def test_installed_wheel_answers_from_an_empty_folder(archives: dict[str, Path], tmp_path: Path) -> None:
    python = _install(archives["wheel"], tmp_path)
    app = tmp_path / "app"
    app.mkdir()
    (app / "corpus.jsonl").write_text("".join(json.dumps(record) + "\n" for record in CORPUS), encoding="utf-8")
    haystack = str(tmp_path / "venv" / "bin" / "haystack")

    _run([haystack, "run", "index", "--input", "path=corpus.jsonl", "--store", "store"], cwd=app)
    answer = _run([haystack, "run", "qa", "--store", "store", "-q", "who wrote hamlet", "--json"], cwd=app)
    assert "Shakespeare" in json.loads(answer.stdout.strip().splitlines()[-1])["reader"]["answers"][0]["data"]

    loaded = _run([str(python), "-c", PLAIN_LOADS, "store"], cwd=app).stdout.strip().splitlines()
    assert loaded[-1] == "Mount Everest"
    assert Path(loaded[-2]).is_relative_to(tmp_path / "venv"), "the package must come from the installed archive"

    missing = subprocess.run([haystack, "run", "bm25", "-q", "x"], cwd=app, capture_output=True, text=True)
    assert missing.returncode == 2 and "does not exist" in missing.stderr and "haystack run index" in missing.stderr


def test_installed_sdist_has_the_packaged_pipelines_and_models(archives: dict[str, Path], tmp_path: Path) -> None:
    python = _install(archives["sdist"], tmp_path)
    check = (
        "from dpr_components.packaged import packaged_pipeline_names, packaged_pipeline_path\n"
        "from dpr_components.encoders.bundled import bundled_model_path\n"
        "print(packaged_pipeline_path('qa').parent)\n"
        "print(bundled_model_path('bundled:reader-minilm'))\n"
        "print(bundled_model_path('bundled:dpr-minilm-multi/question_encoder'))\n"
        "print(' '.join(packaged_pipeline_names()))\n"
    )
    *folders, names = _run([str(python), "-c", check], cwd=tmp_path).stdout.strip().splitlines()
    assert all(Path(folder).is_relative_to(tmp_path / "venv") for folder in folders)
    assert (Path(folders[1]) / "model.safetensors").is_file() and (Path(folders[2]) / "model.safetensors").is_file()
    assert {"index", "bm25", "dense", "search", "qa", "eval_nq", "eval_squad"} <= set(names.split())
