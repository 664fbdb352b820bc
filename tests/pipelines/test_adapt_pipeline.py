"""``haystack run adapt`` on a tiny store with tiny random models: the whole adaptation, its report, the same
command again (resumed, nothing redone), other settings refused, the time bound honoured and then resumed, the
result searched with through ``--set hybrid.model``, and bad input in one line."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from dpr_components.cli.main import main
from haystack_integrations.components.retrievers.dpr.dense_retriever import DenseRetriever
from haystack_integrations.document_stores.dpr.document_store import EmbeddedDocumentStore
from tests.helpers.commands import adapt_args

pytestmark = pytest.mark.usefixtures("one_thread")


def _report(out: Path) -> dict:
    return json.loads((out / "adaptation.json").read_text(encoding="utf-8"))


def test_adapt_trains_the_question_encoder_reports_and_resumes(
    adapt_store: Path, tiny_st_dir: Path, tiny_reader_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "adapted"
    args = adapt_args(adapt_store, out, tiny_st_dir, tiny_reader_dir)
    assert main(args) == 0
    report = _report(out)
    assert report["complete"] and not report["stopped_by_time_bound"] and report["runs"] == 1
    assert (
        report["passages"]["in_store"] == 12 and report["passages"]["pseudo_queries"] == 12 and report["scored"] == 12
    )
    assert report["training"] == {"steps": 3, "total_steps": 3, "complete": True}
    assert set(report["minutes"]) == {"pseudo_queries_and_scoring", "training", "total", "this_run"}
    assert report["question_encoder"] == str(out / "question_encoder")
    assert f"--set hybrid.model={out / 'question_encoder'}" in (out / "adaptation.md").read_text(encoding="utf-8")
    teacher_lines = (out / "teacher.jsonl").read_text(encoding="utf-8")
    capsys.readouterr()

    assert main(args) == 0  # the same command again: resumed at its end
    again = _report(out)
    assert again["runs"] == 2 and again["training"]["steps"] == 3
    assert (out / "teacher.jsonl").read_text(encoding="utf-8") == teacher_lines

    assert main([*args, "--max-passages", "5"]) == 2
    assert "holds an adaptation with other settings (max_passages 10000 -> 5)" in capsys.readouterr().err
    assert main([*args, "--set", "adapter.query_method=ict"]) == 2
    assert "query_method 'crop' -> 'ict'" in capsys.readouterr().err


def test_the_adapted_encoder_searches_the_store_through_the_question_model_setting(
    adapt_store: Path, tiny_st_dir: Path, tiny_reader_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "adapted"
    assert main(adapt_args(adapt_store, out, tiny_st_dir, tiny_reader_dir, "--max-passages", "6")) == 0
    assert _report(out)["passages"]["pseudo_queries"] == 6
    capsys.readouterr()
    search = ["run", "search", "--store", str(adapt_store), "-q", "who described topic 3", "--json"]
    assert main([*search, "--set", f"hybrid.model={out / 'question_encoder'}"]) == 0
    assert json.loads(capsys.readouterr().out)["hybrid"]["documents"]
    retriever = DenseRetriever(
        document_store=EmbeddedDocumentStore(path=str(adapt_store)), model=str(out / "question_encoder")
    )
    assert retriever.check_store_pairing()


def test_the_time_bound_stops_the_run_with_a_paired_encoder_and_the_same_command_goes_on(
    adapt_store: Path, tiny_st_dir: Path, tiny_reader_dir: Path, tmp_path: Path
) -> None:
    out = tmp_path / "adapted"
    args = adapt_args(adapt_store, out, tiny_st_dir, tiny_reader_dir)
    assert main([*args, "--max-minutes", "0.000001"]) == 0
    stopped = _report(out)
    assert stopped["stopped_by_time_bound"] and not stopped["complete"]
    assert stopped["scored"] == 0 and stopped["training"]["steps"] == 0
    assert DenseRetriever(
        document_store=EmbeddedDocumentStore(path=str(adapt_store)), model=str(out / "question_encoder")
    ).check_store_pairing()
    assert main(args) == 0  # --max-minutes is not a setting of the run: without it the run goes on to its end
    finished = _report(out)
    assert finished["complete"] and finished["runs"] == 2 and finished["scored"] == 12


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (["--max-minutes", "0"], "--max-minutes must be a positive number of minutes"),
        (["--max-passages", "0"], "--max-passages"),
        (["--set", "adapter.query_method=generate"], "query_method must be one of ict, crop"),
        (["--set", "adapter.settings.batch_sizes=4"], "unknown ['batch_sizes']"),
    ],
)
def test_bad_options_are_refused_in_one_line(
    adapt_store: Path,
    tiny_st_dir: Path,
    tiny_reader_dir: Path,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    extra: list[str],
    message: str,
) -> None:
    assert main([*adapt_args(adapt_store, tmp_path / "out", tiny_st_dir, tiny_reader_dir), *extra]) == 2
    err = capsys.readouterr().err
    assert message in err and "Traceback" not in err and len(err.strip().splitlines()) == 1
    assert not (tmp_path / "out" / "question_encoder").exists()


def test_a_missing_store_and_out_for_a_pipeline_without_a_run_folder_are_refused(
    adapt_store: Path, tiny_st_dir: Path, tiny_reader_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(adapt_args(tmp_path / "nowhere", tmp_path / "out", tiny_st_dir, tiny_reader_dir)) == 2
    assert "store folder" in capsys.readouterr().err and not (tmp_path / "nowhere").exists()
    assert main(["run", "bm25", "--store", str(adapt_store), "-q", "topic", "--out", str(tmp_path / "o")]) == 2
    assert "the pipeline has no input named 'output_dir'" in capsys.readouterr().err


def test_the_adapter_round_trips_through_pipeline_data(tmp_path: Path, tiny_st_dir: Path) -> None:
    from haystack import Pipeline

    from haystack_integrations.components.trainers.dpr import QuestionEncoderAdapter

    adapter = QuestionEncoderAdapter(
        document_store=EmbeddedDocumentStore(path=str(tmp_path / "s")),
        model=str(tiny_st_dir),
        query_method="crop",
        max_passages=7,
        query_settings={"min_query_words": 3},
        teacher_settings={"max_length": 64},
        settings={"batch_size": 2, "epochs": 2},
    )
    pipeline = Pipeline()
    pipeline.add_component("adapter", adapter)
    again = Pipeline.loads(pipeline.dumps()).get_component("adapter")
    assert again.to_dict() == adapter.to_dict()
    assert again.document_store.path == str(tmp_path / "s") and again.settings == {"batch_size": 2, "epochs": 2}
