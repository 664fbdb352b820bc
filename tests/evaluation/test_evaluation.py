"""Tests for the evaluation package: answer matching, metrics, question loaders, evaluators, reports."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from haystack import Document, Pipeline

from dpr_components.evaluation import questions as questions_module
from dpr_components.evaluation.answer_matching import has_answer
from dpr_components.evaluation.answer_metrics import exact_match, f1, normalize_answer
from dpr_components.evaluation.questions import QAExample, load_questions
from dpr_components.evaluation.report import ReportTable, write_retrieval_report
from dpr_components.evaluation.retrieval_metrics import (
    RetrievalResult,
    answer_hits,
    evaluate_retrieval,
    first_hit_rank,
    mean_reciprocal_rank,
    top_k_accuracy,
)
from dpr_components.utils.settings import data_dir
from haystack_integrations.components.evaluators.dpr.answer_exact_match_f1_evaluator import AnswerExactMatchF1Evaluator
from haystack_integrations.components.evaluators.dpr.retrieval_accuracy_evaluator import RetrievalAccuracyEvaluator

# ---- answer matching -----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("answers", "text", "expected"),
    [
        (["Linda Davis"], "recorded as a duet by Reba McEntire and linda davis.", True),
        (["Davis"], "Miles Davison played trumpet", False),  # whole tokens only
        (["U.S."], "born in the U.S. in 1950", True),
        (["1,000"], "about 1,000 people", True),
        (["1,000"], "about 1 000 people", False),
        (["café"], "Le Café de Flore", True),
        (["cafe"], "Le Café de Flore", False),  # NFD keeps the accent as a combining mark
        (["", "  "], "anything at all", False),  # empty answers never match
        (["New York", "Boston"], "she moved to boston", True),
        (["York City"], "New York\nCity", True),  # line breaks are just whitespace
    ],
)
def test_has_answer_string_mode(answers: list[str], text: str, expected: bool) -> None:
    assert has_answer(answers, text) is expected
    assert answer_hits(answers, [text]) == [expected]  # the fast path agrees with has_answer


def test_has_answer_regex_mode() -> None:
    pattern = [r"20\s?,?\s?(32|40)0\s?-?\s?f(ee|oo)t|6,194-meter"]
    assert has_answer(pattern, "Denali is 20,320 feet tall", mode="regex")
    assert not has_answer(pattern, "Denali is 20,310 feet tall", mode="regex")
    assert has_answer(["after the fall"], "AFTER THE FALL is a play", mode="regex")  # case-insensitive
    with pytest.raises(ValueError, match="not a valid regular expression"):
        has_answer(["(unclosed"], "text", mode="regex")
    with pytest.raises(ValueError, match="match mode"):
        answer_hits(["a"], ["a"], mode="fuzzy")  # type: ignore[arg-type]


def test_answer_hits_matches_has_answer_on_real_passages() -> None:
    texts = [
        'Does He Love You "Does He Love You" is a song written by Sandy Knox and Billy Stritch.',
        "The Walt Disney Company owns the American Broadcasting Company (ABC).",
        "Disney–ABC Television Group was formed in 2004.",
    ]
    for answers in (["Disney–ABC Television Group"], ["ABC"], ["Billy Stritch", "Knox"], ["Walt"], ["(ABC)."]):
        assert answer_hits(answers, texts) == [has_answer(answers, t) for t in texts]


# ---- retrieval metrics ---------------------------------------------------------------------

HITS = [
    [True, False, False],  # first hit at rank 1
    [False, False, True],  # rank 3
    [False, False, False],  # no hit
    [False, True],  # rank 2, only two passages retrieved
]


def test_first_hit_rank() -> None:
    assert [first_hit_rank(h) for h in HITS] == [1, 3, None, 2]
    assert first_hit_rank([]) is None


def test_top_k_accuracy() -> None:
    assert top_k_accuracy(HITS, [1, 2, 3, 100]) == {1: 25.0, 2: 50.0, 3: 75.0, 100: 75.0}
    assert list(top_k_accuracy(HITS, [3, 1, 3])) == [1, 3]
    with pytest.raises(ValueError, match="zero questions"):
        top_k_accuracy([], [1])
    with pytest.raises(ValueError, match="positive integer"):
        top_k_accuracy(HITS, [0])
    with pytest.raises(ValueError, match="at least one k"):
        top_k_accuracy(HITS, [])


def test_mean_reciprocal_rank() -> None:
    assert mean_reciprocal_rank(HITS) == pytest.approx((1 + 1 / 3 + 0 + 1 / 2) / 4)
    assert mean_reciprocal_rank(HITS, cutoff=2) == pytest.approx((1 + 0 + 0 + 1 / 2) / 4)
    assert mean_reciprocal_rank([[False], [False]]) == 0.0


def test_retrieval_result_curve_and_round_trip() -> None:
    result = RetrievalResult.from_hits(HITS, question_ids=["a", "b", "c", "d"])
    assert result.n_questions == 4
    assert sorted(result.top_k) == list(range(1, 101))
    assert result.accuracy(1) == 25.0 and result.accuracy(3) == result.accuracy(100) == 75.0
    assert result.first_hit_ranks == [1, 3, None, 2]
    with pytest.raises(KeyError, match="top-101"):
        result.accuracy(101)
    restored = RetrievalResult.from_dict(json.loads(json.dumps(result.to_dict())))
    assert restored == result


def test_ranks_beyond_max_k_count_as_misses() -> None:
    hits = [[False] * 10 + [True]]
    result = RetrievalResult.from_hits(hits, max_k=5)
    assert result.first_hit_ranks == [11]
    assert result.top_k == {k: 0.0 for k in range(1, 6)} and result.mrr == 0.0


def test_evaluate_retrieval_end_to_end() -> None:
    result = evaluate_retrieval(
        [["Paris"], ["[a-z]+ox"]],
        [["Berlin is big", "Paris is old"], ["a red fox"]],
        mode="string",
        max_k=2,
    )
    assert result.first_hit_ranks == [2, None]  # string mode treats the pattern literally
    regex_result = evaluate_retrieval([["[a-z]+ox"]], [["a red fox"]], mode="regex", max_k=1)
    assert regex_result.first_hit_ranks == [1]
    with pytest.raises(ValueError, match="passages for 1"):
        evaluate_retrieval([["a"], ["b"]], [["a"]])


# ---- answer metrics ------------------------------------------------------------------------


def test_squad_normalisation_and_scores() -> None:
    assert normalize_answer("  The  Walt-Disney, Company! ") == "waltdisney company"
    assert normalize_answer("An apple a day") == "apple day"
    assert exact_match("the Walt Disney Company", ["Disney", "Walt Disney Company."]) == 1.0
    assert exact_match("Disney Company", ["Walt Disney Company"]) == 0.0
    assert f1("Disney Company", ["Walt Disney Company"]) == pytest.approx(0.8)
    assert f1("Disney Company", ["Walt Disney Company", "Disney Company"]) == 1.0
    assert f1("nothing shared", ["Walt Disney"]) == 0.0
    assert exact_match(None, ["x"]) == 0.0 and f1(None, ["x"]) == 0.0
    with pytest.raises(ValueError, match="at least one gold"):
        f1("x", [])
    with pytest.raises(TypeError, match="not a single string"):
        exact_match("x", "x")


# ---- question loaders ----------------------------------------------------------------------


def _write(path: Path, text: str | bytes) -> Path:
    if isinstance(text, bytes):
        path.write_bytes(text)
    else:
        path.write_text(text, encoding="utf-8")
    return path


def test_load_jsonl(tmp_path: Path) -> None:
    source = _write(
        tmp_path / "qs.jsonl",
        '{"id": "q1", "question": "who?", "answers": ["A", "B"], "positive_ctxs": []}\n'
        "\n"
        '{"question": " what? ", "answers": ["C"]}\n'
        '{"id": 7, "question": "where?", "answer": ["D"]}\n',
    )
    assert load_questions(source) == [
        QAExample("q1", "who?", ["A", "B"]),
        QAExample("3", "what?", ["C"]),  # no id: the line number
        QAExample("7", "where?", ["D"]),
    ]
    assert len(load_questions(str(source), limit=2)) == 2


def test_load_dpr_tsv(tmp_path: Path) -> None:
    source = _write(
        tmp_path / "nq-test.qa.csv",
        "who got the first nobel prize in physics\t['Wilhelm Conrad Röntgen']\n"
        'what is the o\'hare airport code\t["ORD", "KORD"]\n'
        'who wrote "it\'s a long way"\t["Jack Judge", \'Harry Williams\']\r\n',
    )
    examples = load_questions(source)
    assert [e.answers for e in examples] == [
        ["Wilhelm Conrad Röntgen"],
        ["ORD", "KORD"],
        ["Jack Judge", "Harry Williams"],
    ]
    assert [e.id for e in examples] == ["1", "2", "3"]
    assert examples[2].question == 'who wrote "it\'s a long way"'


@pytest.mark.parametrize(
    ("name", "content", "message"),
    [
        ("a.jsonl", '{"question": "q", "answers": ["a"]}\n{"question": "q", "answers": [}\n', "line 2: bad JSON"),
        (
            "a.jsonl",
            '{"question": "q", "answers": ["a"]}\n\n{"question": "  ", "answers": ["a"]}\n',
            "line 3: field 'question' is empty",
        ),
        ("a.jsonl", '{"question": "q", "answers": "a"}\n', "line 1: field 'answers': expected a non-empty list"),
        ("a.jsonl", '{"question": "q", "answers": []}\n', "line 1: field 'answers': expected a non-empty list"),
        ("a.jsonl", '{"question": "q", "answers": ["a", 3]}\n', r"line 1: field 'answers\[1\]': expected a string"),
        ("a.jsonl", '{"question": "q", "answers": ["a", ""]}\n', r"line 1: field 'answers\[1\]' is an empty string"),
        ("a.jsonl", '{"question": "q"}\n', "line 1: missing field 'answers'"),
        ("a.jsonl", '{"answers": ["a"]}\n', "line 1: missing field 'question'"),
        ("a.jsonl", '{"question": "q", "answers": ["a"]}\n[1, 2]\n', "line 2: bad JSON|line 2: expected a JSON object"),
        (
            "a.jsonl",
            '{"id": "x", "question": "q", "answers": ["a"]}\n{"id": "x", "question": "r", "answers": ["b"]}\n',
            "line 2: field 'id': 'x' already used on line 1",
        ),
        ("a.jsonl", '{"data": [], "version": "1.1"}\n', "SQuAD's nested JSON"),
        ("a.tsv", "q\t['a']\nno tab here\n", "line 2: expected DPR's 'question<TAB>\\[answers\\]' layout"),
        ("a.tsv", "q\t['a'\n", "line 1: field 'answers': not a JSON or Python list literal"),
        ("a.tsv", "q\t'a'\n", "line 1: field 'answers': expected a non-empty list"),
        ("a.tsv", "\t['a']\n", "line 1: field 'question' is empty"),
        ("a.jsonl", "", "contains no questions"),
        ("a.tsv", "\n  \n", "contains no questions"),
    ],
)
def test_loader_errors_name_file_line_and_field(tmp_path: Path, name: str, content: str, message: str) -> None:
    source = _write(tmp_path / name, content)
    with pytest.raises(ValueError, match=message) as error:
        load_questions(source)
    assert str(source) in str(error.value)


def test_loader_reports_undecodable_bytes(tmp_path: Path) -> None:
    content = b'{"question": "q", "answers": ["a"]}\n{"question": "caf\xe9", "answers": ["a"]}\n'
    source = _write(tmp_path / "bad.jsonl", content)
    # The shared line reader's `file:line` format, as for training data, corpora and --batch files.
    with pytest.raises(ValueError, match=r"bad.jsonl:2: not valid UTF-8"):
        load_questions(source)


def test_loader_refuses_overlong_lines(tmp_path: Path) -> None:
    from dpr_components.utils.line_files import MAX_LINE_BYTES

    source = _write(tmp_path / "long.jsonl", '{"question": "q", "answers": ["a"]}\n' + "x" * (MAX_LINE_BYTES + 1))
    with pytest.raises(ValueError, match=r"long.jsonl:2: the line is longer than"):
        load_questions(source)


def test_loader_accepts_utf8_bom(tmp_path: Path) -> None:
    source = _write(tmp_path / "bom.jsonl", '\ufeff{"question": "q", "answers": ["a"]}\n')
    assert load_questions(source) == [QAExample("1", "q", ["a"])]


def test_loader_argument_errors(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError, match="does not exist"):
        load_questions(tmp_path / "missing.jsonl")
    with pytest.raises(ValueError, match="limit"):
        load_questions(tmp_path / "missing.jsonl", limit=0)


def test_datasets_csv_with_header(tmp_path: Path) -> None:
    source = _write(tmp_path / "qs.csv", "question,answer\nwho wrote it?,\"['Ann', 'Bob']\"\nwhen?,1999\n")
    examples = load_questions(f"hf:{source}")
    assert examples == [QAExample("0", "who wrote it?", ["Ann", "Bob"]), QAExample("1", "when?", ["1999"])]


def test_datasets_parquet_file(tmp_path: Path) -> None:
    pa = pytest.importorskip("pyarrow")
    import pyarrow.parquet as pq

    table = pa.table({"id": ["x", "y"], "question": ["q1", "q2"], "answers": [["a"], ["b", "c"]]})
    pq.write_table(table, tmp_path / "qs.parquet")
    assert load_questions(tmp_path / "qs.parquet") == [QAExample("x", "q1", ["a"]), QAExample("y", "q2", ["b", "c"])]


def test_datasets_folder_with_splits(tmp_path: Path) -> None:
    folder = tmp_path / "nq_open_copy"
    folder.mkdir()
    # nq_open's layout: fields "question" and "answer".
    _write(folder / "train.jsonl", '{"question": "t", "answer": ["x"]}\n')
    _write(folder / "validation.jsonl", '{"question": "v1", "answer": ["a", "b"]}\n{"question": "v2", "answer": ["c"]}')
    assert load_questions(folder, split="validation") == [QAExample("0", "v1", ["a", "b"]), QAExample("1", "v2", ["c"])]
    assert len(load_questions(folder, split="validation", limit=1)) == 1
    with pytest.raises(ValueError, match="pass split="):
        load_questions(folder)
    with pytest.raises(ValueError, match="no split 'test'"):
        load_questions(folder, split="test")


def test_datasets_squad_style_answers(tmp_path: Path) -> None:
    record = {"id": "s1", "question": "q", "answers": {"text": ["c", "d"], "answer_start": [0, 4]}}
    source = _write(tmp_path / "squad.jsonl", json.dumps(record) + "\n")
    assert load_questions(f"hf:{source}") == [QAExample("s1", "q", ["c", "d"])]


def test_datasets_read_failure_is_explained(tmp_path: Path) -> None:
    source = _write(tmp_path / "broken.jsonl", '{"question": "q", "answer": ["a"]}\n{"question": "r", "answer\n')
    with pytest.raises(ValueError, match=r"broken.jsonl: could not be read with Hugging Face datasets"):
        load_questions(f"hf:{source}")
    mixed = _write(tmp_path / "mixed.jsonl", '{"question": "q", "answer": ["a"]}\n{"question": "r", "answer": {}}')
    with pytest.raises(ValueError, match=r"mixed.jsonl, split 'train', row 1: field 'answer': expected"):
        load_questions(f"hf:{mixed}")


def test_datasets_row_errors_name_row_and_field(tmp_path: Path) -> None:
    source = _write(tmp_path / "qs.jsonl", '{"question": "q", "answer": ["a"]}\n{"question": "", "answer": ["a"]}\n')
    with pytest.raises(ValueError, match=r"split 'train', row 1: field 'question' is empty"):
        load_questions(f"hf:{source}")


def test_hub_id_offline_error_is_clear(monkeypatch: pytest.MonkeyPatch) -> None:
    import datasets

    def unreachable(*args: object, **kwargs: object) -> None:
        raise ConnectionError("Couldn't reach 'nq_open' on the Hub (OfflineModeIsEnabled)")

    monkeypatch.setattr(datasets, "load_dataset", unreachable)
    monkeypatch.setenv("HF_DATASETS_OFFLINE", "1")
    with pytest.raises(ConnectionError, match=r"offline mode is on.*pass a local file"):
        load_questions("nq_open", split="validation")


@pytest.mark.skipif(
    os.environ.get("HF_DATASETS_OFFLINE") != "1", reason="real hub lookup only checked with HF_DATASETS_OFFLINE=1"
)
def test_hub_id_really_offline() -> None:
    with pytest.raises(ConnectionError, match="google-research-datasets/nq_open"):
        load_questions("google-research-datasets/nq_open", split="validation")


def test_hub_id_resolution_does_not_touch_the_hub_for_paths(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setattr(questions_module, "_load_with_datasets", lambda *a: pytest.fail("hub was queried"))
    with pytest.raises(FileNotFoundError):
        load_questions(tmp_path / "nope" / "questions.tsv")


# ---- real data -----------------------------------------------------------------------------


def _real(relative: str) -> Path:
    path = data_dir() / relative
    if not path.is_file():
        pytest.skip(f"real data file {relative} not found under {data_dir()} (set DPR_DATA_DIR)")
    return path


@pytest.mark.integration
def test_real_nq_dev() -> None:
    examples = load_questions(_real("nq/dev.jsonl"))
    assert len(examples) == 655
    assert len({e.id for e in examples}) == 655
    record = json.loads(_real("nq/dev.jsonl").read_text(encoding="utf-8").splitlines()[0])
    gold = record["positive_ctxs"][0]["text"]
    assert has_answer(examples[0].answers, gold)  # the gold passage contains an answer


@pytest.mark.integration
def test_real_curatedtrec_regex_answers() -> None:
    examples = load_questions(_real("dpr-format/curatedtrec-test.qa.tsv"))
    assert len(examples) == 694
    assert examples[0].question == "How tall is Mount McKinley?"
    assert has_answer(examples[0].answers, "Mount McKinley rises 20,320 feet above sea level.", mode="regex")


@pytest.mark.integration
def test_real_dpr_biencoder_sample() -> None:
    examples = load_questions(_real("dpr-format/nq-dev-10.jsonl"))
    assert len(examples) == 10 and examples[0].answers == ["Linda Davis"]


# ---- evaluators ----------------------------------------------------------------------------


def test_retrieval_accuracy_evaluator() -> None:
    evaluator = RetrievalAccuracyEvaluator(ks=[1, 2])
    result = evaluator.run(
        ground_truth_answers=[["Paris"], ["Linda Davis"], ["Oslo"]],
        retrieved_documents=[
            [Document(content="Berlin"), Document(content="Paris is old")],
            [Document(content="Reba McEntire", meta={"title": "Linda Davis"})],  # titles are not matched
            [Document(content="oslo, Norway"), Document(content="x")],
        ],
    )
    assert result["top_k_accuracy"] == {1: pytest.approx(100 / 3), 2: pytest.approx(200 / 3)}
    assert result["first_hit_ranks"] == [2, None, 1]
    assert result["individual_scores"] == [1.0, 0.0, 1.0]
    assert result["score"] == pytest.approx(2 / 3)
    assert result["mrr"] == pytest.approx((0.5 + 0 + 1) / 3)


def test_retrieval_accuracy_evaluator_errors() -> None:
    evaluator = RetrievalAccuracyEvaluator()
    with pytest.raises(ValueError, match="has 2 entries but retrieved_documents has 1"):
        evaluator.run(ground_truth_answers=[["a"], ["b"]], retrieved_documents=[[]])
    with pytest.raises(ValueError, match=r"retrieved_documents\[0\]\[1\].*no content"):
        evaluator.run(ground_truth_answers=[["a"]], retrieved_documents=[[Document(content="b"), Document()]])
    with pytest.raises(ValueError, match=r"ground_truth_answers\[0\]"):
        evaluator.run(ground_truth_answers=[[]], retrieved_documents=[[]])
    with pytest.raises(ValueError, match="match_mode"):
        RetrievalAccuracyEvaluator(match_mode="exact")  # type: ignore[arg-type]


def test_answer_exact_match_f1_evaluator() -> None:
    result = AnswerExactMatchF1Evaluator().run(
        ground_truth_answers=[["The Walt Disney Company"], ["a b c"], ["the"], ["x"]],
        predicted_answers=["walt disney company", "b c d", "", None],
    )
    assert result["individual_scores"] == [1.0, 0.0, 0.0, 0.0]
    assert result["individual_f1"] == [1.0, pytest.approx(0.8), 0.0, 0.0]
    assert result["exact_match"] == 25.0 and result["score"] == 0.25
    assert result["f1"] == pytest.approx(45.0)


def test_evaluators_serialise_round_trip() -> None:
    retrieval = RetrievalAccuracyEvaluator(ks=[20, 5], match_mode="regex", mrr_cutoff=20)
    data = retrieval.to_dict()
    assert data["init_parameters"] == {"ks": [5, 20], "match_mode": "regex", "mrr_cutoff": 20}
    restored = RetrievalAccuracyEvaluator.from_dict(data)
    assert (restored.ks, restored.match_mode, restored.mrr_cutoff) == ([5, 20], "regex", 20)
    answer = AnswerExactMatchF1Evaluator.from_dict(AnswerExactMatchF1Evaluator().to_dict())
    assert isinstance(answer, AnswerExactMatchF1Evaluator)

    pipeline = Pipeline()
    pipeline.add_component("retrieval", retrieval)
    pipeline.add_component("answers", AnswerExactMatchF1Evaluator())
    loaded = Pipeline.loads(pipeline.dumps(), allowed_modules=["dpr_components"])
    assert loaded.get_component("retrieval").to_dict() == data


# ---- report --------------------------------------------------------------------------------


def test_write_retrieval_report(tmp_path: Path) -> None:
    systems = {
        "BM25": RetrievalResult.from_ranks([1, 4, None, 30]),
        "DPR | multi": RetrievalResult.from_ranks([2, 1, 90, None]),
    }
    em_table = ReportTable("Reader", ["System", "EM", "F1"], [["DPR + reader", 41.5, 48.25]], note="SQuAD v1.1.")
    paths = write_retrieval_report(
        tmp_path / "out",
        systems,
        title="NQ dev retrieval",
        command=["python", "-m", "benchmarks.retrieval", "--split", "nq dev"],
        dataset_name="NQ dev",
        extra_tables=[em_table],
    )
    markdown = paths["markdown"].read_text(encoding="utf-8")
    assert "| BM25 | 25.00 | 50.00 | 50.00 | 75.00 |" in markdown
    assert "DPR \\| multi" in markdown
    assert "python -m benchmarks.retrieval --split 'nq dev'" in markdown
    assert "4 questions" in markdown and "## Reader" in markdown and "| DPR + reader | 41.50 | 48.25 |" in markdown
    report = json.loads(paths["json"].read_text(encoding="utf-8"))
    assert len(report["systems"]["BM25"]["top_k_accuracy"]) == 100
    assert RetrievalResult.from_dict(report["systems"]["BM25"]) == systems["BM25"]
    png = paths["plot"].read_bytes()
    assert png.startswith(b"\x89PNG") and len(png) > 5000
    assert sorted(p.name for p in (tmp_path / "out").iterdir()) == ["report.json", "report.md", "topk_accuracy.png"]


def test_report_rejects_bad_input(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="at least one"):
        write_retrieval_report(tmp_path, {}, title="t", command="c", dataset_name="d")
    with pytest.raises(ValueError, match="row 0: 1 cells for 2 columns"):
        ReportTable("t", ["a", "b"], [["x"]])
