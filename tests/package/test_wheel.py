"""The package outside the repository: build every distribution (the code's wheel and sdist, and the two
model distributions, each within a package index's 100 MB per file) with packaging/build_distributions.py,
install them into a fresh venv and use them from an empty folder — a packaged pipeline run by name, plain
``Pipeline.loads`` of a packaged file without an allowlist, a question answered with the bundled models,
the default QA pipeline refused with one line naming the model distribution an install lacks.

The fresh venv sees this environment's dependencies (torch, transformers, haystack…) through a ``.pth``
line to a view of links that leaves this project out, so nothing is downloaded; the project and its
models come only from the built archives."""

from __future__ import annotations

import importlib.metadata
import json
import os
import shutil
import subprocess
import sys
import sysconfig
import zipfile
from pathlib import Path

import httpx
import pytest
import yaml

from tests.helpers.browser import headless_chromium
from tests.helpers.folder_documents import write_broken_pdf, write_mixed_folder
from tests.helpers.page_driver import walk_ask_page
from tests.helpers.paths import PIPELINES, REPO
from tests.helpers.serving import served_command, server_environment

SOURCES = ("pyproject.toml", "README.md", "LICENSE", "dpr_components", "haystack_integrations", "packaging")
# what the package needs only for its extras (datasets brings pyarrow and pandas; files the converters' pypdf
# and trafilatura) or its tests (bm25s)
NOT_REQUIRED = ("bm25s", "matplotlib", "datasets", "pyarrow", "pandas", "pypdf", "trafilatura")
MAX_FILE_BYTES = 100 * 1000 * 1000  # a package index's default limit per file (PyPI's)
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
    done = subprocess.run(command, cwd=cwd, capture_output=True, text=True, env=environment, check=False, **kwargs)  # type: ignore[call-overload]
    assert done.returncode == 0, f"{' '.join(map(str, command))}\n{done.stdout[-2000:]}\n{done.stderr[-4000:]}"
    return done


def _installed_entries(distributions: tuple[str, ...]) -> set[str]:
    """The top-level files and folders of ``distributions`` in this environment (their dist-info included)."""
    entries = set()
    for name in distributions:
        for file in importlib.metadata.distribution(name).files or []:
            if file.parts[0] not in ("..", "__pycache__"):  # scripts elsewhere; a cache folder others share
                entries.add(file.parts[0])
    return entries


def _dependencies_view(folder: Path, leave_out: tuple[str, ...] = ()) -> Path:
    """This environment's packages but this project's own (the code and its model distributions, and the
    editable install's hooks) and the distributions ``leave_out``, as links in ``folder``: a fresh venv sees
    its dependencies, not the project."""
    folder.mkdir()
    left_out = _installed_entries(leave_out)
    for entry in Path(sysconfig.get_paths()["purelib"]).iterdir():
        if (
            not entry.name.startswith(("dpr_components", "__editable__", "dpr-components"))
            and entry.name not in left_out
        ):
            (folder / entry.name).symlink_to(entry)
    return folder


def _fresh_venv(folder: Path, leave_out: tuple[str, ...] = ()) -> Path:
    """A venv whose only source of this package and its models is what gets installed into it (and without
    the distributions ``leave_out``)."""
    # without pip of its own: this environment's pip and setuptools (through the .pth) do the install
    _run([sys.executable, "-m", "venv", "--without-pip", str(folder)], cwd=folder.parent)
    python = folder / "bin" / "python"
    purelib = _run([str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"], cwd=folder)
    view = _dependencies_view(folder / "dependencies", leave_out)
    (Path(purelib.stdout.strip()) / "dependencies.pth").write_text(f"{view}\n")
    return python


@pytest.fixture(scope="module")
def archives(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """Every distribution, built by packaging/build_distributions.py from a copy of the sources."""
    work = tmp_path_factory.mktemp("build")
    source = _copy_sources(work)
    dist = work / "dist"
    _run([sys.executable, str(source / "packaging" / "build_distributions.py"), "build", "--out", str(dist)], cwd=work)
    return {
        "wheel": next(dist.glob("dpr_components-*.whl")),
        "sdist": next(dist.glob("dpr_components-*.tar.gz")),
        "models": next(dist.glob("dpr_components_models-*.whl")),
        "rerank models": next(dist.glob("dpr_components_rerank_models-*.whl")),
        "pair models": next(dist.glob("dpr_components_pair_models-*.whl")),
        "dist": dist,
    }


def test_every_distribution_fits_the_package_index(archives: dict[str, Path]) -> None:
    files = sorted(archives["dist"].iterdir())
    assert len(files) == 8, files  # a wheel and an sdist each: the code, the default, re-ranking and pair models
    assert all(path.stat().st_size <= MAX_FILE_BYTES for path in files), [(p.name, p.stat().st_size) for p in files]
    models = set(zipfile.ZipFile(archives["models"]).namelist())
    assert {"dpr_components_models/reader-minilm/model.safetensors", "dpr_components_models/py.typed"} <= models
    assert "dpr_components_models/dpr-minilm-multi/question_encoder/model.safetensors" in models
    rerank = set(zipfile.ZipFile(archives["rerank models"]).namelist())
    assert "dpr_components_rerank_models/ranker-minilm/model.safetensors" in rerank
    assert "dpr_components_rerank_models/rerank-reader-minilm/model.safetensors" in rerank
    pair = set(zipfile.ZipFile(archives["pair models"]).namelist())
    for side in ("question_encoder", "passage_encoder"):
        assert f"dpr_components_pair_models/dpr-minilm-pair/{side}/model.safetensors" in pair
        assert f"dpr_components_pair_models/dpr-minilm-pair/{side}/encoder_pair.json" in pair


def test_wheel_holds_the_pipelines_and_faces_and_no_weights(archives: dict[str, Path]) -> None:
    names = set(zipfile.ZipFile(archives["wheel"]).namelist())
    assert "dpr_components/pipelines/qa.yml" in names and "dpr_components/py.typed" in names
    assert not any(name.startswith("dpr_components/models/") or name.endswith(".safetensors") for name in names)
    assert "haystack_integrations/components/retrievers/dpr/py.typed" in names
    assert any(name.endswith("dist-info/licenses/LICENSE") for name in names)
    with zipfile.ZipFile(archives["wheel"]) as wheel:
        metadata = wheel.read(next(n for n in names if n.endswith("dist-info/METADATA"))).decode("utf-8")
    assert "Project-URL: Homepage, https://pypi.org/project/dpr-components/" in metadata
    assert "Requires-Python: >=3.11" in metadata and "License-Expression: Apache-2.0" in metadata
    # the long description is the page for an install with pip, not the README of a clone
    description = metadata.split("\n\n", 1)[1]
    assert description.strip() == (REPO / "packaging" / "PYPI.md").read_text(encoding="utf-8").strip()
    assert "./run.sh" not in description and "pipelines/" not in description
    # bm25s, matplotlib and datasets only with an extra
    required = [line for line in metadata.splitlines() if line.startswith("Requires-Dist:") and "extra ==" not in line]
    assert [line for line in required if any(f" {name}" in line.split(";")[0] for name in NOT_REQUIRED)] == []
    assert "Provides-Extra: datasets" in metadata and "Provides-Extra: plots" in metadata
    assert "haystack_integrations/components/retrievers/dpr/__init__.py" in names
    assert "haystack_integrations/components/retrievers/dpr/dense_retriever.py" in names
    assert "haystack_integrations/document_stores/dpr/document_store.py" in names
    assert "haystack_integrations/components/retrievers/dpr/py.typed" in names
    assert not [name for name in names if name.endswith(".pyi")]  # the faces are plain modules now
    # the ask page haystack serve answers at GET /
    assert {f"dpr_components/serving/page/{name}" for name in ("index.html", "app.js", "app.css")} <= names
    # haystack_integrations is shared with other integrations: a namespace package, no __init__ of its own
    assert not any(
        name in names for name in ("haystack_integrations/__init__.py", "haystack_integrations/components/__init__.py")
    )
    assert not any("__pycache__" in name or name.startswith(("tests/", "benchmarks/", "training/")) for name in names)


def _install(folder: Path, *archives: Path) -> Path:
    python = _fresh_venv(folder / "venv")
    _run(
        [str(python), "-m", "pip", "install", "--no-deps", "--no-index", "--no-build-isolation", *map(str, archives)],
        cwd=folder,
    )
    return python


def test_installed_wheel_pulls_no_optional_package_and_answers(archives: dict[str, Path], tmp_path: Path) -> None:
    """pip resolves the wheel's requirements in a venv without bm25s, matplotlib, datasets, pyarrow or pandas
    (with no index to fetch them from, a requirement on any of them would fail the install), and the default
    pipelines index and answer there, "no answer" included."""
    python = _fresh_venv(tmp_path / "venv", leave_out=NOT_REQUIRED)
    wheels = [str(archives[name]) for name in ("wheel", "models", "rerank models")]
    _run([str(python), "-m", "pip", "install", "--no-index", "--no-build-isolation", *wheels], cwd=tmp_path)
    absent = "import importlib.util, sys; print([m for m in sys.argv[1:] if importlib.util.find_spec(m)])"
    assert _run([str(python), "-c", absent, *NOT_REQUIRED], cwd=tmp_path).stdout.strip() == "[]"
    app = tmp_path / "app"
    app.mkdir()
    (app / "corpus.jsonl").write_text("".join(json.dumps(record) + "\n" for record in CORPUS), encoding="utf-8")
    haystack = str(tmp_path / "venv" / "bin" / "haystack")
    _run([haystack, "run", "index", "--input", "path=corpus.jsonl", "--store", "store"], cwd=app)
    batch = app / "questions.txt"
    batch.write_text(f"who wrote hamlet\n{UNANSWERABLE}\n", encoding="utf-8")
    output = _run([haystack, "run", "qa", "--store", "store", "--batch", str(batch), "--json"], cwd=app).stdout
    answers = [json.loads(line)["result"]["reader"]["answers"][0] for line in output.strip().splitlines()]
    assert "Shakespeare" in answers[0]["data"] and answers[1]["data"] is None, answers
    # a path of an extra: one line naming it
    (app / "questions.parquet").write_bytes(b"PAR1")
    command = [haystack, "eval", "bm25", "--questions", "questions.parquet", "--store", "store"]
    extra = subprocess.run(command, cwd=app, capture_output=True, text=True, check=False)
    assert extra.returncode == 2 and "Traceback" not in extra.stderr, extra.stderr
    assert extra.stderr.strip().splitlines()[-1].endswith("pip install 'dpr-components[datasets]'"), extra.stderr


def test_installed_wheel_answers_from_an_empty_folder(archives: dict[str, Path], tmp_path: Path) -> None:
    python = _install(tmp_path, archives["wheel"], archives["models"])
    app = tmp_path / "app"
    app.mkdir()
    (app / "corpus.jsonl").write_text("".join(json.dumps(record) + "\n" for record in CORPUS), encoding="utf-8")
    haystack = str(tmp_path / "venv" / "bin" / "haystack")

    _run([haystack, "run", "index", "--input", "path=corpus.jsonl", "--store", "store"], cwd=app)
    # an install without one of the model distributions (pip resolves them as dependencies; --no-deps here):
    # one line says what to install
    missing = subprocess.run(
        [haystack, "run", "qa", "--store", "store", "-q", "who wrote hamlet"],
        cwd=app,
        capture_output=True,
        text=True,
        check=False,
    )
    assert missing.returncode == 2 and "Traceback" not in missing.stderr, missing.stderr
    assert "bundled:ranker-minilm comes with the package dpr-components-rerank-models" in missing.stderr
    assert "pip install dpr-components-rerank-models" in missing.stderr
    _run([str(python), "-m", "pip", "install", "--no-deps", "--no-index", str(archives["rerank models"])], cwd=app)

    answer = _run([haystack, "run", "qa", "--store", "store", "-q", "who wrote hamlet", "--json"], cwd=app)
    assert "Shakespeare" in json.loads(answer.stdout.strip().splitlines()[-1])["reader"]["answers"][0]["data"]

    loaded = _run([str(python), "-c", PLAIN_LOADS, "store"], cwd=app).stdout.strip().splitlines()
    assert loaded[-1] == "Mount Everest"
    assert Path(loaded[-2]).is_relative_to(tmp_path / "venv"), "the package must come from the installed archive"

    no_store = subprocess.run(
        [haystack, "run", "bm25", "-q", "x"], cwd=app, capture_output=True, text=True, check=False
    )
    assert no_store.returncode == 2 and "does not exist" in no_store.stderr and "haystack run index" in no_store.stderr


def test_installed_wheel_indexes_a_folder_of_documents(archives: dict[str, Path], tmp_path: Path) -> None:
    """From an empty folder: a folder with a file of each kind and a broken PDF indexed in one command (the
    [files] extra's libraries present), found by content and by meta.path; a second run after editing one
    file and deleting another re-indexes the one and removes the other's passages."""
    _install(tmp_path, archives["wheel"], archives["models"])
    app = tmp_path / "app"
    (app / "docs").mkdir(parents=True)
    write_mixed_folder(app / "docs")
    write_broken_pdf(app / "docs" / "broken.pdf")
    haystack = str(tmp_path / "venv" / "bin" / "haystack")
    first = _run([haystack, "run", "index_files", "--input", "path=docs", "--store", "store"], cwd=app)
    lines = first.stdout.strip().splitlines()
    assert [line for line in (first.stdout + first.stderr).splitlines() if "broken.pdf" in line] == [lines[0]]
    assert lines[0].startswith("skipped broken.pdf: the PDF converter could not read it")
    assert lines[-1] == "docs: files 7 indexed, 0 unchanged, 0 removed, 1 skipped; 7 passages written"

    def search(query: str, *extra: str) -> list[str]:
        found = _run([haystack, "run", "bm25", "--store", "store", "-q", query, "--json", *extra], cwd=app)
        return [document["id"] for document in json.loads(found.stdout)["bm25"]["documents"]]

    assert search("saffron crocus")[0] == "spice.docx#0" and search("comet astronomers")[0] == "comet.pdf#0"
    by_path = json.dumps({"field": "meta.path", "operator": "==", "value": "pages/river.html"})
    assert search("Danube koala comet", "--input", f"filters={by_path}") == ["pages/river.html#0"]
    (app / "docs" / "notes.txt").write_text("Ophelia drowns in a brook.", encoding="utf-8")
    (app / "docs" / "faq.jsonl").unlink()
    second = _run([haystack, "run", "index_files", "--input", "path=docs", "--store", "store"], cwd=app)
    assert (
        second.stdout.strip().splitlines()[-1]
        == "docs: files 1 indexed, 5 unchanged, 1 removed, 1 skipped; 1 passage written"
    )
    assert search("Ophelia brook")[0] == "notes.txt#0" and "faq.jsonl/q1#0" not in search("Etna volcano Sicily")


def test_installed_sdist_has_the_packaged_pipelines_and_models(archives: dict[str, Path], tmp_path: Path) -> None:
    python = _install(tmp_path, archives["sdist"], archives["models"], archives["rerank models"])
    check = (
        "from dpr_components.packaged import packaged_pipeline_names, packaged_pipeline_path\n"
        "from dpr_components.encoders.bundled import bundled_model_path\n"
        "print(packaged_pipeline_path('qa').parent)\n"
        "print(bundled_model_path('bundled:reader-minilm'))\n"
        "print(bundled_model_path('bundled:dpr-minilm-multi/question_encoder'))\n"
        "print(bundled_model_path('bundled:ranker-minilm'))\n"
        "print(' '.join(packaged_pipeline_names()))\n"
    )
    *folders, names = _run([str(python), "-c", check], cwd=tmp_path).stdout.strip().splitlines()
    assert all(Path(folder).is_relative_to(tmp_path / "venv") for folder in folders), folders
    assert all((Path(folder) / "model.safetensors").is_file() for folder in folders[1:])
    assert {"index", "bm25", "dense", "search", "qa", "qa_fast", "eval_nq", "eval_squad"} <= set(names.split())


E2E_KEY_ENV, E2E_KEY = "DPR_E2E_KEY", "end-to-end-key-0123456789abcdef"
NEW_RECORD = {
    "id": "eiffel",
    "title": "Eiffel Tower",
    "text": "The Eiffel Tower in Paris was completed in 1889 as the entrance to the World's Fair.",
}
UNANSWERABLE = "how many moons does jupiter have"
QA_NO_ANSWER_THRESHOLD = yaml.safe_load((PIPELINES / "qa.yml").read_text(encoding="utf-8"))["components"]["reader"][
    "init_parameters"
]["no_answer_threshold"]


def _ask(url: str, pipeline: str, body: dict[str, object]) -> dict[str, object]:
    response = httpx.post(
        f"{url}/{pipeline}/run", json=body, headers={"Authorization": f"Bearer {E2E_KEY}"}, timeout=300
    )
    assert response.status_code == 200, (pipeline, response.status_code, response.text[:500])
    return dict(response.json()["result"])


def test_installed_packages_serve_the_users_store(
    archives: dict[str, Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The user's path from the built archives: index a corpus into ``my_store``, serve it, index more over
    HTTP and find it without a restart, "no answer" where the corpus has none and the answer where it has
    one, and the page driven through its states in headless Chromium."""
    _install(tmp_path, archives["wheel"], archives["models"], archives["rerank models"])
    app = tmp_path / "app"
    app.mkdir()
    (app / "corpus.jsonl").write_text("".join(json.dumps(record) + "\n" for record in CORPUS), encoding="utf-8")
    haystack = str(tmp_path / "venv" / "bin" / "haystack")
    _run([haystack, "run", "index", "--input", "path=corpus.jsonl", "--store", "my_store"], cwd=app)

    environment = server_environment(**{E2E_KEY_ENV: E2E_KEY})
    environment.pop("PYTHONPATH")  # the installed package only
    command = [haystack, "serve", "--store", "my_store", "--api-key-env", E2E_KEY_ENV]
    with served_command(command, app, env=environment, timeout=180) as url:
        titles = [d["title"] for d in _ask(url, "bm25", {"query": "eiffel tower", "top_k": 3})["documents"]]  # type: ignore[index]
        assert "Eiffel Tower" not in titles
        assert _ask(url, "index", {"records": [NEW_RECORD]})["documents_written"] == 1
        found = _ask(url, "search", {"query": "when was the eiffel tower completed", "top_k": 1})["documents"]
        assert found[0]["title"] == "Eiffel Tower"  # type: ignore[index]

        answers = _ask(url, "qa", {"query": "who wrote hamlet"})["answers"]
        assert "Shakespeare" in answers[0]["data"]  # type: ignore[index]
        answers = _ask(url, "qa", {"query": "when was the eiffel tower completed"})["answers"]
        assert answers[0]["data"] == "1889"  # type: ignore[index]
        answers = _ask(url, "qa", {"query": UNANSWERABLE})["answers"]
        assert answers[0]["data"] is None and answers[0]["score"] >= QA_NO_ANSWER_THRESHOLD  # type: ignore[index]

    # the page, from a store nothing was indexed into: every state, the upload indexing the corpus
    monkeypatch.setenv("SE_OFFLINE", "true")  # selenium never downloads a browser or driver
    page_command = [haystack, "serve", "--store", "page_store", "--api-key-env", E2E_KEY_ENV]
    with (
        served_command(page_command, app, env=environment, timeout=180) as url,
        headless_chromium(tmp_path / "profile") as driver,
    ):
        states = walk_ask_page(
            driver,
            url,
            api_key=E2E_KEY,
            corpus=app / "corpus.jsonl",
            answerable="who wrote hamlet",
            unanswerable=UNANSWERABLE,
            seconds=300,
        )
    assert states == ["empty", "upload", "answer", "expanded", "document", "filtered", "example", "no-answer", "error"]
