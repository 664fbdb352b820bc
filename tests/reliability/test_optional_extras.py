"""An install without the package's extras: the default pipelines run without the optional modules,
and a path that needs one says in one line which extra installs it (the missing modules simulated)."""

from __future__ import annotations

from pathlib import Path

import pytest

from dpr_components.utils.extras import MissingExtraError
from tests.helpers.commands import embedder_sets
from tests.helpers.corpora import SMALL_CORPUS, write_jsonl
from tests.helpers.missing_modules import hide_modules
from tests.reliability.harness import PIPELINES, assert_clear_error, assert_success, cases, cli

pytestmark = pytest.mark.usefixtures("one_thread")

MISSING_EXTRA = pytest.mark.reliability(category="optional extras", expect="clear error")
WITHOUT_EXTRA = pytest.mark.reliability(category="optional extras", expect="correct result")
ELASTICSEARCH_MODULE = "haystack_integrations.document_stores.elasticsearch"
ELASTICSEARCH_HINT = "pip install 'dpr-components[elasticsearch]'"
# what the package's own requirements no longer bring: only the extras (or the tests) need them
NOT_REQUIRED = ("bm25s", "matplotlib", "datasets", "pyarrow", "pandas", "pypdf", "docx", "trafilatura", "mdit_plain")


def _questions(folder: Path) -> Path:
    path = folder / "questions.jsonl"
    path.write_text('{"id": "1", "question": "who wrote hamlet", "answers": ["Shakespeare"]}\n', encoding="utf-8")
    return path


ELASTICSEARCH_RUNS = {
    "search": ["run", "search_elasticsearch", "-q", "who wrote hamlet"],
    "search, network allowed": ["run", "search_elasticsearch", "-q", "who wrote hamlet", "--allow-network"],
    "index": ["run", "index_elasticsearch", "--input", "path=corpus.jsonl", "--allow-network"],
}


@MISSING_EXTRA
@cases("args", ELASTICSEARCH_RUNS)
def test_elasticsearch_pipeline_without_its_extra(args: list[str], monkeypatch: pytest.MonkeyPatch) -> None:
    """haystack run search_elasticsearch (or index_elasticsearch) on an install without the elasticsearch extra"""
    hide_modules(monkeypatch, ELASTICSEARCH_MODULE)
    component = "writer" if "index_elasticsearch" in args else "bm25"
    assert_clear_error(
        cli(*args),
        f"{component}.document_store (ElasticsearchDocumentStore) needs elasticsearch-haystack",
        ELASTICSEARCH_HINT,
    )


@MISSING_EXTRA
def test_packaged_elasticsearch_pipeline_loaded_in_python_without_its_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    """dpr_components.packaged.load_pipeline("search_elasticsearch") on an install without the elasticsearch extra"""
    from dpr_components.packaged import load_pipeline

    hide_modules(monkeypatch, ELASTICSEARCH_MODULE)
    with pytest.raises(MissingExtraError) as raised:
        load_pipeline("search_elasticsearch")
    message = str(raised.value)
    assert "\n" not in message and raised.value.__cause__ is None and raised.value.__context__ is None
    assert message == (
        "the packaged pipeline 'search_elasticsearch': bm25.document_store (ElasticsearchDocumentStore) needs "
        f"elasticsearch-haystack: {ELASTICSEARCH_HINT}"
    )


def _parquet_without_datasets(path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """``path`` written with the bytes a parquet file starts with, on an install where datasets cannot be imported."""
    path.write_bytes(b"PAR1")
    hide_modules(monkeypatch, "datasets")
    return path


FILES_HINT = "pip install 'dpr-components[files]'"
# the converters of index_files.yml and the module each needs, as an install without the files extra lacks them
FILES_CONVERTERS = {
    "pypdf": "pdf (PyPDFToDocument) needs pypdf",
    "docx": "docx (DOCXToDocument) needs python-docx",
    "trafilatura": "html (HTMLToDocument) needs trafilatura",
    "mdit_plain": "markdown (MarkdownToDocument) needs mdit_plain",
}


@MISSING_EXTRA
@pytest.mark.parametrize(("module", "named"), list(FILES_CONVERTERS.items()), ids=list(FILES_CONVERTERS))
def test_index_files_without_the_files_extra(
    module: str, named: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """haystack run index_files on an install without the files extra (one converter's library missing)"""
    hide_modules(monkeypatch, module)
    (tmp_path / "docs").mkdir()
    result = cli("run", "index_files", "--input", f"path={tmp_path / 'docs'}", "--store", tmp_path / "store")
    assert_clear_error(result, named, FILES_HINT)
    assert not (tmp_path / "store").exists()


@MISSING_EXTRA
def test_packaged_index_files_loaded_in_python_without_the_files_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    """dpr_components.packaged.load_pipeline("index_files") on an install without the files extra"""
    from dpr_components.packaged import load_pipeline

    hide_modules(monkeypatch, "pypdf")
    with pytest.raises(MissingExtraError) as raised:
        load_pipeline("index_files")
    assert str(raised.value) == (
        f"the packaged pipeline 'index_files': pdf (PyPDFToDocument) needs pypdf: {FILES_HINT}"
    )


@MISSING_EXTRA
def test_eval_on_a_parquet_question_file_without_datasets(
    indexed_store: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """haystack eval --questions dev.parquet on an install without the datasets extra"""
    questions = _parquet_without_datasets(tmp_path / "dev.parquet", monkeypatch)
    result = cli("eval", PIPELINES / "bm25.yml", "--questions", questions, "--store", indexed_store)
    assert_clear_error(
        result,
        f"question file {str(questions)!r}: reading parquet",
        "needs datasets: pip install 'dpr-components[datasets]'",
    )


@MISSING_EXTRA
def test_training_on_a_parquet_file_without_datasets(
    tiny_bert_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """haystack run train_dpr --input data=train.parquet on an install without the datasets extra"""
    data = _parquet_without_datasets(tmp_path / "train.parquet", monkeypatch)
    result = cli(
        *("run", PIPELINES / "train_dpr.yml", "--input", f"data={data}"),
        *("--set", f"trainer.model={tiny_bert_dir}", "--set", f"trainer.output_dir={tmp_path / 'run'}"),
    )
    assert_clear_error(result, f"training data {str(data)!r}", "pip install 'dpr-components[datasets]'")
    assert not (tmp_path / "run" / "checkpoints").exists()


def _one_warning(caplog: pytest.LogCaptureFixture, *fragments: str) -> None:
    """One warning of one line (the command prints it on stderr) holding every fragment."""
    warnings = [record.getMessage() for record in caplog.records if record.levelname == "WARNING"]
    assert len(warnings) == 1 and "\n" not in warnings[0], warnings
    assert all(fragment in warnings[0] for fragment in fragments), warnings[0]


@WITHOUT_EXTRA
def test_eval_without_matplotlib_writes_the_report_without_its_plot(
    indexed_store: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """haystack eval --out REPORT on an install without the plots extra"""
    hide_modules(monkeypatch, "matplotlib")
    out = tmp_path / "report"
    result = cli(
        "eval", PIPELINES / "bm25.yml", "--questions", _questions(tmp_path), "--store", indexed_store, "--out", out
    )
    assert_success(result)
    assert sorted(path.name for path in out.iterdir()) == ["evaluation_runs.json", "report.json", "report.md"]
    assert "topk_accuracy.png" not in (out / "report.md").read_text(encoding="utf-8")
    _one_warning(caplog, "topk_accuracy.png was not written", "pip install 'dpr-components[plots]'")


@WITHOUT_EXTRA
def test_fit_lambda_without_matplotlib_writes_the_report_without_its_plot(
    indexed_store: Path,
    tiny_st_dir: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    """haystack fit-lambda --out REPORT on an install without the plots extra"""
    hide_modules(monkeypatch, "matplotlib")
    out = tmp_path / "lambda"
    result = cli(
        *("fit-lambda", PIPELINES / "search.yml", "--questions", _questions(tmp_path), "--store", indexed_store),
        *("--set", f"hybrid.model={tiny_st_dir}", "--out", out),
    )
    assert_success(result)
    assert sorted(path.name for path in out.iterdir()) == ["lambda.json", "lambda.md"]
    _one_warning(caplog, "lambda.png was not written", "pip install 'dpr-components[plots]'")


@WITHOUT_EXTRA
def test_default_pipelines_without_the_optional_modules(
    tiny_st_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """haystack run index, then search, on an install without bm25s, matplotlib, datasets, pyarrow or pandas"""
    hide_modules(monkeypatch, *NOT_REQUIRED)
    corpus, store = write_jsonl(tmp_path / "corpus.jsonl", SMALL_CORPUS), tmp_path / "store"
    assert_success(cli("run", "index", "--input", f"path={corpus}", "--store", store, *embedder_sets(tiny_st_dir)))
    found = cli("run", "bm25", "--store", store, "-q", "highest mountain", "--top-k", "1")
    assert_success(found)
    assert "Mount Everest" in found.out
    searched = cli("run", "search", "--store", store, "-q", "highest mountain", "--set", f"hybrid.model={tiny_st_dir}")
    assert_success(searched)


@MISSING_EXTRA
def test_serving_an_elasticsearch_pipeline_without_its_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    """haystack serve over the Elasticsearch pipelines, ELASTICSEARCH_URL set, on an install without the extra"""
    from dpr_components.serving.deployment import prepare_pipeline

    hide_modules(monkeypatch, ELASTICSEARCH_MODULE)
    monkeypatch.setenv("ELASTICSEARCH_URL", "http://localhost:9200")
    with pytest.raises(MissingExtraError) as raised:  # the server lists it as unavailable with this reason
        prepare_pipeline(PIPELINES / "search_elasticsearch.yml")
    assert str(raised.value).endswith(
        f"bm25.document_store (ElasticsearchDocumentStore) needs elasticsearch-haystack: {ELASTICSEARCH_HINT}"
    )
