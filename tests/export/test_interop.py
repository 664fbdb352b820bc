"""Interop with Haystack's own components: encoders exported as sentence-transformers folders give
our vectors, and a reader's span head exported as ``BertForQuestionAnswering`` gives our logits
and, in ``TransformersExtractiveReader``, our best span within a passage (docs/interop.md)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
import torch
from haystack import Document

from dpr_components.cli.main import main
from dpr_components.encoders.encoder_settings import EncoderSettings
from dpr_components.encoders.model_layout import detect_layout
from dpr_components.encoders.pairing import write_pair_files
from dpr_components.encoders.text_encoder import TextEncoder
from dpr_components.export.qa_model import export_qa_model
from dpr_components.export.sentence_transformers import ExportError, export_sentence_transformers
from dpr_components.reader_training.model import reader_from_encoder
from dpr_components.readers.inputs import InputSettings, build_rows, collate, tokenize_passage
from dpr_components.readers.model import load_reader, reader_logits, save_reader
from haystack_integrations.components.embedders.dpr.passage_embedder import PassageEmbedder
from haystack_integrations.components.embedders.dpr.question_embedder import QuestionEmbedder
from haystack_integrations.components.readers.dpr.span_reader import SpanReader
from tests.helpers.models import bundled_tokenizer, save_tiny_bert, save_with_tokenizer, tiny_config

QUESTIONS = [
    "who wrote hamlet",
    "how tall is mount everest?",
    "when did marie curie win her second nobel prize",
    "what is the largest moon of saturn",
    # longer than the tiny encoders' 24 tokens: the limit must cut it the same way
    "which of the roman towns near naples were buried under ash and pumice when mount vesuvius erupted in the "
    "year 79 and who described the eruption in his letters",
]
PASSAGES = [
    ("Hamlet", "Hamlet is a tragedy written by William Shakespeare between 1599 and 1601."),
    (None, "Mount Everest is 8,848.86 metres tall, the highest mountain above sea level."),
    ("Titan", "Titan is the largest moon of Saturn and the second largest in the Solar System, after Ganymede."),
    ("Vesuvius", "The eruption of Vesuvius in 79 buried the Roman towns of Pompeii and Herculaneum under ash."),
]
# Reader passages made of words that are one WordPiece each: our word extension is then a no-op and
# a random reader's spans can be compared token for token.
READER_EXAMPLES = [
    ("where did the cat sit", "the cat sat on the mat in the house and the dog ran to the park with a red ball ."),
    ("who ran to the park", "the dog ran to the park and the cat sat on the mat while the man read a book ."),
    ("what did the man read", "the man read a book in the garden and the woman wrote a letter to her son ."),
    ("when did the game start", "the game started at six in the evening and ended after ten when it was dark ."),
    ("what color was the car", "the car was blue and the house was white but the door of the house was green ."),
    ("where is the river", "the river runs through the city from the north to the south and into the sea ."),
]
# tiny models with 512 positions: readers on them take the default max_length
POSITIONS = 512


def _st_text_embedder(folder: Path):
    embedders = pytest.importorskip("haystack_integrations.components.embedders.sentence_transformers")
    embedder = embedders.SentenceTransformersTextEmbedder(model=str(folder), progress_bar=False)
    embedder.warm_up()
    return embedder


def _st_document_embedder(folder: Path, **kwargs):
    embedders = pytest.importorskip("haystack_integrations.components.embedders.sentence_transformers")
    embedder = embedders.SentenceTransformersDocumentEmbedder(model=str(folder), progress_bar=False, **kwargs)
    embedder.warm_up()
    return embedder


@pytest.fixture(scope="module")
def bert_tokenizer():
    return bundled_tokenizer()


def _sidecar(folder: Path, **settings: object) -> None:
    (folder / "encoder_config.json").write_text(json.dumps(settings), encoding="utf-8")


@pytest.fixture(scope="module")
def pair_dir(bert_tokenizer, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A trained pair's folder: tiny random DPR question and passage encoders, mean pooling, unit
    vectors, 24 and 40 tokens."""
    from transformers import DPRConfig, DPRContextEncoder, DPRQuestionEncoder

    torch.manual_seed(5)
    root = tmp_path_factory.mktemp("pair")
    config = tiny_config(DPRConfig, len(bert_tokenizer), max_position_embeddings=POSITIONS)
    for name, model_class, limit in (
        ("question_encoder", DPRQuestionEncoder, 24),
        ("passage_encoder", DPRContextEncoder, 40),
    ):
        save_with_tokenizer(model_class(config), bert_tokenizer, root / name)
        _sidecar(root / name, pooling="mean", normalize=True, max_length=limit)
    write_pair_files(root / "question_encoder", root / "passage_encoder")
    return root


@pytest.fixture(scope="module")
def pooler_question_dir(bert_tokenizer, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A lone DPRQuestionEncoder as facebook/dpr-* ship them: pooler output, no normalisation."""
    from transformers import DPRConfig, DPRQuestionEncoder

    torch.manual_seed(6)
    config = tiny_config(DPRConfig, len(bert_tokenizer), max_position_embeddings=POSITIONS)
    return save_with_tokenizer(DPRQuestionEncoder(config), bert_tokenizer, tmp_path_factory.mktemp("dpr_question"))


@pytest.fixture(scope="module")
def reader_dir(bert_tokenizer, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Our reader layout (DPRReader) around a tiny random BERT."""
    encoder = save_tiny_bert(
        tmp_path_factory.mktemp("reader_encoder"), bert_tokenizer, seed=7, max_position_embeddings=POSITIONS
    )
    reader, tokenizer = reader_from_encoder(str(encoder), seed=8)
    path = tmp_path_factory.mktemp("reader") / "reader"
    save_reader(reader, tokenizer, path)
    return path


@pytest.fixture(scope="module")
def qa_dir(reader_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    return export_qa_model(reader_dir, tmp_path_factory.mktemp("qa") / "qa")


# --- encoders -> sentence-transformers --------------------------------------------------------------


@pytest.mark.parametrize("which", ["pair", "pooler"])
def test_question_export_gives_our_vectors(
    which: str, pair_dir: Path, pooler_question_dir: Path, tmp_path: Path
) -> None:
    model = str(pair_dir) if which == "pair" else str(pooler_question_dir)
    source = str(pair_dir / "question_encoder") if which == "pair" else model
    out = export_sentence_transformers(model, tmp_path / "st", role="question")
    ours = TextEncoder(EncoderSettings(model=source, precision="fp32")).encode_questions(QUESTIONS)
    embedder = QuestionEmbedder(model=source, precision="fp32")
    component = np.array([embedder.run(text=q)["embedding"] for q in QUESTIONS])
    theirs = np.array([_st_text_embedder(out).run(text=q)["embedding"] for q in QUESTIONS])
    np.testing.assert_allclose(theirs, ours, atol=1e-5)
    np.testing.assert_allclose(theirs, component, atol=1e-5)
    if which == "pair":
        np.testing.assert_allclose(np.linalg.norm(theirs, axis=1), 1.0, atol=1e-5)


def test_exported_folder_describes_the_same_encoder(pair_dir: Path, pooler_question_dir: Path, tmp_path: Path) -> None:
    out = export_sentence_transformers(str(pair_dir), tmp_path / "q", role="question")
    layout = detect_layout(out)
    settings = (layout.kind, layout.pooling, layout.normalize, layout.max_length)
    assert settings == ("sentence_transformers", "mean", True, 24)
    assert json.loads((out / "encoder_pair.json").read_text()) == json.loads(
        (pair_dir / "question_encoder" / "encoder_pair.json").read_text()
    )
    out = export_sentence_transformers(str(pooler_question_dir), tmp_path / "cls", role="question")
    layout = detect_layout(out)
    assert (layout.pooling, layout.normalize, layout.max_length) == ("cls", False, 256)
    modules = [m["type"].rsplit(".", 1)[1] for m in json.loads((out / "modules.json").read_text())]
    assert modules == ["Transformer", "Pooling"]


def test_passage_export_indexes_like_passage_embedder(pair_dir: Path, tmp_path: Path) -> None:
    out = export_sentence_transformers(str(pair_dir), tmp_path / "p", role="passage")
    passage_model = str(pair_dir / "passage_encoder")
    untitled = [Document(content=text) for _, text in PASSAGES]
    ours = PassageEmbedder(model=passage_model, precision="fp32").run(documents=untitled)["documents"]
    theirs = _st_document_embedder(out).run(documents=[Document(content=d.content) for d in untitled])["documents"]
    np.testing.assert_allclose([d.embedding for d in theirs], [d.embedding for d in ours], atol=1e-5)
    # With titles: our "prefix" mode reads "title. text", which the document embedder forms too.
    titled = [Document(content=text, meta={"title": title} if title else {}) for title, text in PASSAGES]
    prefixed = PassageEmbedder(model=passage_model, title_mode="prefix", precision="fp32")
    ours = prefixed.run(documents=titled)["documents"]
    theirs = _st_document_embedder(out, meta_fields_to_embed=["title"], embedding_separator=". ").run(
        documents=[Document(content=d.content, meta=dict(d.meta)) for d in titled]
    )["documents"]
    np.testing.assert_allclose([d.embedding for d in theirs], [d.embedding for d in ours], atol=1e-5)


def test_export_st_refuses_what_it_cannot_express(pair_dir: Path, pooler_question_dir: Path, tmp_path: Path) -> None:
    with pytest.raises(ExportError, match="does not say which passage encoder"):
        export_sentence_transformers(str(pooler_question_dir), tmp_path / "x", role="passage")
    with pytest.raises(ExportError, match="passage encoder; export it with role 'passage'"):
        export_sentence_transformers(str(pair_dir / "passage_encoder"), tmp_path / "x", role="question")
    plain = tmp_path / "plain"
    export_sentence_transformers(str(pair_dir), plain, role="question")
    _sidecar(plain, pooling="pooler")
    with pytest.raises(ExportError, match="BERT's pooler"):
        export_sentence_transformers(str(plain), tmp_path / "x", role="question")
    assert not (tmp_path / "x").exists()


def test_cli_export_commands(
    pair_dir: Path, reader_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["export-st", str(pair_dir), str(tmp_path / "st"), "--role", "passage"]) == 0
    assert (tmp_path / "st" / "modules.json").is_file()
    assert main(["export-qa", str(reader_dir), str(tmp_path / "qa")]) == 0
    assert json.loads((tmp_path / "qa" / "config.json").read_text())["architectures"] == ["BertForQuestionAnswering"]
    assert main(["export-qa", str(pair_dir / "question_encoder"), str(tmp_path / "bad")]) == 2
    assert "not a DPRReader" in capsys.readouterr().err


# --- reader -> BertForQuestionAnswering --------------------------------------------------------------


def test_qa_export_computes_our_span_logits(reader_dir: Path, qa_dir: Path) -> None:
    from transformers import AutoModelForQuestionAnswering

    reader, tokenizer = load_reader(reader_dir)
    qa = AutoModelForQuestionAnswering.from_pretrained(str(qa_dir)).eval()
    passages = [(title, tokenize_passage(tokenizer, text)) for title, text in PASSAGES]
    rows = build_rows(tokenizer, QUESTIONS[0], passages, InputSettings())
    batch = collate(rows, tokenizer.pad_token_id)
    with torch.inference_mode():
        start, end, _ = reader_logits(reader, batch["input_ids"], batch["attention_mask"])
        output = qa(input_ids=batch["input_ids"], attention_mask=batch["attention_mask"])
        # a tool passing segment ids 1 for the passage gets the same logits
        segments = batch["passage_mask"].long()
        typed = qa(input_ids=batch["input_ids"], attention_mask=batch["attention_mask"], token_type_ids=segments)
    mask = batch["attention_mask"].bool()
    for logits in (output, typed):
        np.testing.assert_allclose(logits.start_logits[mask].numpy(), start[mask].numpy(), atol=1e-5)
        np.testing.assert_allclose(logits.end_logits[mask].numpy(), end[mask].numpy(), atol=1e-5)


def test_qa_export_tokenizer_forms_our_rows(reader_dir: Path, qa_dir: Path) -> None:
    from transformers import AutoTokenizer

    _, tokenizer = load_reader(reader_dir)
    exported = AutoTokenizer.from_pretrained(str(qa_dir))
    for question, (_, text) in zip(QUESTIONS, PASSAGES, strict=False):
        row = build_rows(tokenizer, question, [(None, tokenize_passage(tokenizer, text))], InputSettings())[0]
        encoding = exported(question, text)
        assert encoding["input_ids"] == row.input_ids
        assert encoding.sequence_ids()[row.passage_offset :] == [1] * row.n_passage_tokens


def _extractive_reader(qa_dir: Path):
    readers = pytest.importorskip("haystack_integrations.components.readers.transformers")
    reader = readers.TransformersExtractiveReader(
        model=str(qa_dir), top_k=1, no_answer=False, max_seq_length=256, stride=64
    )
    reader.warm_up()
    return reader


def test_extractive_reader_finds_our_best_span(reader_dir: Path, qa_dir: Path) -> None:
    """One passage at a time the two readers agree on the span (ours without its 10-token limit,
    which TransformersExtractiveReader does not have); over several passages they rank differently
    (ours by the selection head, theirs by span score) and only the agreement rate is recorded."""
    theirs_reader = _extractive_reader(qa_dir)
    ours_reader = SpanReader(model=str(reader_dir), top_k=1, precision="fp32", max_answer_length=256)
    for question, text in READER_EXAMPLES:
        documents = [Document(content=text)]
        ours = ours_reader.run(query=question, documents=documents)["answers"][0]
        theirs = theirs_reader.run(query=question, documents=documents)["answers"][0]
        assert (theirs.data, theirs.document_offset.start, theirs.document_offset.end) == (
            ours.data,
            ours.document_offset.start,
            ours.document_offset.end,
        )
    passages = [Document(content=text) for _, text in READER_EXAMPLES]
    agree = sum(
        ours_reader.run(query=question, documents=passages)["answers"][0].data
        == theirs_reader.run(query=question, documents=passages)["answers"][0].data
        for question, _ in READER_EXAMPLES
    )
    print(f"tiny reader, {len(passages)} passages per question: top answers agree on {agree}/{len(READER_EXAMPLES)}")


# --- the shipped models ------------------------------------------------------------------------------


@pytest.mark.integration
def test_shipped_question_encoder_in_sentence_transformers_embedder(tmp_path: Path) -> None:
    model = "models/dpr-minilm-multi"
    if not Path(model, "question_encoder").is_dir():
        pytest.skip("models/dpr-minilm-multi is not in this checkout")
    out = export_sentence_transformers(model, tmp_path / "st", role="question")
    embedder = QuestionEmbedder(model=f"{model}/question_encoder", precision="fp32")
    ours = np.array([embedder.run(text=q)["embedding"] for q in QUESTIONS])
    theirs = np.array([_st_text_embedder(out).run(text=q)["embedding"] for q in QUESTIONS])
    np.testing.assert_allclose(theirs, ours, atol=1e-5)
    np.testing.assert_allclose((theirs * ours).sum(axis=1), 1.0, atol=1e-5)


def _examples() -> list[tuple[str, list[str], list[dict]]]:
    """(question, answers, corpus passages holding an answer) for the questions of examples/."""
    corpus = [json.loads(line) for line in Path("examples/corpus.jsonl").read_text(encoding="utf-8").splitlines()]
    out = []
    for line in Path("examples/questions.jsonl").read_text(encoding="utf-8").splitlines():
        item = json.loads(line)
        gold = [p for p in corpus if any(a in p["text"] for a in item["answers"])]
        if gold:
            out.append((item["question"], item["answers"], gold))
    return out


@pytest.mark.integration
def test_shipped_reader_in_extractive_reader(tmp_path: Path) -> None:
    """models/reader-minilm exported: on the answer passage of each examples/ question the two readers
    give the same span; with four other passages beside it the top answers are counted (printed)."""
    if not Path("models/reader-minilm/config.json").is_file() or not Path("examples/questions.jsonl").is_file():
        pytest.skip("models/reader-minilm or examples/ is not in this checkout")
    theirs_reader = _extractive_reader(export_qa_model("models/reader-minilm", tmp_path / "qa"))
    ours_reader = SpanReader(model="models/reader-minilm", top_k=1, precision="fp32", max_answer_length=256)
    corpus = [json.loads(line) for line in Path("examples/corpus.jsonl").read_text(encoding="utf-8").splitlines()]
    examples = _examples()
    same = same_top = ours_right = theirs_right = 0
    for i, (question, answers, gold) in enumerate(examples):
        single = [Document(content=gold[0]["text"])]
        ours = ours_reader.run(query=question, documents=single)["answers"][0]
        theirs = theirs_reader.run(query=question, documents=single)["answers"][0]
        same += (ours.data, ours.document_offset.start) == (theirs.data, theirs.document_offset.start)
        others = [p for p in corpus if p not in gold][i % 5 :: 13][:4]
        mixed = [Document(content=p["text"]) for p in [*others[:2], gold[0], *others[2:]]]
        ours = ours_reader.run(query=question, documents=mixed)["answers"][0].data
        theirs = theirs_reader.run(query=question, documents=mixed)["answers"][0].data
        same_top += ours == theirs
        ours_right += any(a in (ours or "") for a in answers)
        theirs_right += any(a in (theirs or "") for a in answers)
    n = len(examples)
    print(
        f"reader-minilm on {n} examples/ questions: same span on the answer passage {same}/{n}; "
        f"5 passages: same top answer {same_top}/{n}, holding a gold answer ours {ours_right}/{n}, "
        f"TransformersExtractiveReader {theirs_right}/{n}"
    )
    assert same == n


def test_store_indexed_by_document_embedder_serves_dense_retriever(pair_dir: Path, tmp_path: Path) -> None:
    """Passages embedded by SentenceTransformersDocumentEmbedder (the exported passage side) in our
    store: DenseRetriever with the pair's question encoder finds what it finds in a store we indexed."""
    from haystack_integrations.components.retrievers.dpr.dense_retriever import DenseRetriever
    from haystack_integrations.document_stores.dpr.document_store import EmbeddedDocumentStore

    out = export_sentence_transformers(str(pair_dir), tmp_path / "p", role="passage")
    documents = [Document(id=str(i), content=text) for i, (_, text) in enumerate(PASSAGES)]
    embedded = {
        "theirs": _st_document_embedder(out).run(documents=[Document(id=d.id, content=d.content) for d in documents]),
        "ours": PassageEmbedder(model=str(pair_dir / "passage_encoder"), precision="fp32").run(documents=documents),
    }
    found = {}
    for name, result in embedded.items():
        store = EmbeddedDocumentStore()
        store.write_documents(result["documents"])
        retriever = DenseRetriever(
            document_store=store, model=str(pair_dir / "question_encoder"), top_k=4, precision="fp32"
        )
        retriever.warm_up()
        found[name] = [(d.id, round(d.score, 5)) for d in retriever.run(query=QUESTIONS[0])["documents"]]
    assert found["theirs"] == found["ours"]
