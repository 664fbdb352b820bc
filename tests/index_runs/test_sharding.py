"""Sharded indexing: shards cut by line ranges, encoded apart, merged into the one-process store."""

from __future__ import annotations

import fcntl
import hashlib
import json
import os
import re
import shutil
import time
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from haystack import Document
from haystack.document_stores.in_memory import InMemoryDocumentStore

from dpr_components.cli.main import main
from dpr_components.corpus.files import read_corpus
from dpr_components.index_runs import shard_check
from dpr_components.index_runs.corpus_split import split_corpus
from dpr_components.index_runs.shard_check import find_shards
from dpr_components.index_runs.shard_files import (
    PASSAGES,
    VECTORS,
    ShardError,
    ShardFolderWriter,
    read_manifest,
    shard_passages,
)
from dpr_components.index_runs.shard_merge import document_batches, merge_shards
from dpr_components.index_runs.shard_spec import (
    ShardSpec,
    parse_shard_spec,
    shard_from_folder_name,
)
from haystack_integrations.components.writers.dpr.passage_writer import PassageWriter
from haystack_integrations.document_stores.dpr.document_store import EmbeddedDocumentStore
from tests.helpers.commands import embedder_sets
from tests.helpers.corpora import SMALL_CORPUS, write_jsonl
from tests.helpers.paths import PIPELINES
from tests.reliability.shard_checks import edit_manifest, rehash

INDEX_YML = str(PIPELINES / "index.yml")


def _encoder(model: Path) -> list[str]:
    return embedder_sets(model)


def _shard(corpus: Path, spec: str, shard_dir: Path, model: Path, *extra: str) -> int:
    return main(
        [
            "run",
            INDEX_YML,
            "--input",
            f"path={corpus}",
            "--shard",
            spec,
            "--shard-dir",
            str(shard_dir),
            *_encoder(model),
            *extra,
        ]
    )


def _merge(shard_dir: Path, store: Path, model: Path) -> int:
    return main(["merge-shards", INDEX_YML, str(shard_dir), "--store", str(store), *_encoder(model)])


def _manifest(shard_dir: Path, spec: ShardSpec) -> dict:
    return json.loads((shard_dir / spec.folder_name / "manifest.json").read_text())


def _write_corpus(path: Path, count: int) -> list[str]:
    """``count`` documents of varied length (some several passages long), with a blank line among them."""
    lines, ids = [], []
    for i in range(count):
        ids.append(f"doc{i}")
        lines.append(
            json.dumps(
                {"id": f"doc{i}", "title": f"Title {i}", "text": " ".join(f"w{i}x{j}" for j in range(7 + 37 * (i % 5)))}
            )
        )
        if i == 3:
            lines.append("")
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return ids


def _assert_same_store(expected_path: Path, actual_path: Path) -> None:
    expected, actual = EmbeddedDocumentStore(path=str(expected_path)), EmbeddedDocumentStore(path=str(actual_path))
    want, got = expected.filter_documents(), actual.filter_documents()
    assert [d.id for d in got] == [d.id for d in want]  # same passages, in the same (corpus) order
    assert [(d.content, d.meta) for d in got] == [(d.content, d.meta) for d in want]
    # Batches of other passages pad differently: the same vectors up to float rounding.
    np.testing.assert_allclose([d.embedding for d in got], [d.embedding for d in want], rtol=0, atol=1e-5)
    for query in ("hamlet tragedy", "highest mountain on earth", "nobel prize physics", "gas giant planet", "honey"):
        assert [(d.id, round(d.score, 5)) for d in actual.bm25_retrieval(query, top_k=4)] == [
            (d.id, round(d.score, 5)) for d in expected.bm25_retrieval(query, top_k=4)
        ]
    rng = np.random.default_rng(0)
    for vector in [*(d.embedding for d in want[:3]), *rng.normal(size=(2, len(want[0].embedding))).tolist()]:
        found, reference = actual.embedding_retrieval(vector, top_k=4), expected.embedding_retrieval(vector, top_k=4)
        assert [d.id for d in found] == [d.id for d in reference]
        np.testing.assert_allclose([d.score for d in found], [d.score for d in reference], atol=1e-5)


@pytest.fixture()
def two_part_corpus(tmp_path: Path) -> Path:
    """The small corpus with its long document first, so that both halves (by bytes) hold documents."""
    path = tmp_path / "two_part.jsonl"
    write_jsonl(path, reversed(SMALL_CORPUS))
    return path


def _one_process_store(corpus: Path, store: Path, model: Path) -> Path:
    assert main(["run", INDEX_YML, "--input", f"path={corpus}", "--store", str(store), *_encoder(model)]) == 0
    return store


def test_two_shards_and_merge_give_the_one_process_store(
    tmp_path: Path, two_part_corpus: Path, tiny_st_dir: Path
) -> None:
    shards = tmp_path / "shards"
    assert _shard(two_part_corpus, "1/2", shards, tiny_st_dir) == 0
    assert _shard(two_part_corpus, "2/2", shards, tiny_st_dir) == 0
    assert [_manifest(shards, ShardSpec(i, 2))["documents"] for i in (1, 2)] == [1, 4]
    assert _merge(shards, tmp_path / "merged", tiny_st_dir) == 0
    _assert_same_store(_one_process_store(two_part_corpus, tmp_path / "one", tiny_st_dir), tmp_path / "merged")


def test_shards_written_straight_into_one_store_equal_one_process(
    tmp_path: Path, two_part_corpus: Path, tiny_st_dir: Path
) -> None:
    """Without --shard-dir each shard writes through the pipeline's writer (how shards reach Elasticsearch)."""
    store = tmp_path / "direct"
    for spec in ("2/2", "1/2"):  # order does not matter for the contents
        args = ["run", INDEX_YML, "--input", f"path={two_part_corpus}", "--shard", spec, "--store", str(store)]
        assert main(args + _encoder(tiny_st_dir)) == 0
    one = _one_process_store(two_part_corpus, tmp_path / "one", tiny_st_dir)
    expected, actual = EmbeddedDocumentStore(path=str(one)), EmbeddedDocumentStore(path=str(store))
    want = {d.id: d for d in expected.filter_documents()}
    got = {d.id: d for d in actual.filter_documents()}
    assert got.keys() == want.keys()
    for key, doc in want.items():
        assert (got[key].content, got[key].meta) == (doc.content, doc.meta)
        np.testing.assert_allclose(got[key].embedding, doc.embedding, rtol=0, atol=1e-5)


@pytest.mark.parametrize("count", [1, 2, 3, 7, 40])
def test_line_ranges_cover_every_document_exactly_once(tmp_path: Path, count: int) -> None:
    corpus = tmp_path / "corpus.jsonl"
    ids = _write_corpus(corpus, 12)
    split = split_corpus(corpus, count)
    assert split.starts[0] == 1 and split.starts[-1] == split.lines + 1 == 14
    assert list(split.starts) == sorted(split.starts)
    owners = {
        r.id: [i for i in range(1, count + 1) if split.line_range(i)[0] <= r.line < split.line_range(i)[1]]
        for r in read_corpus(corpus)
    }
    assert sorted(owners) == sorted(ids) and all(len(o) == 1 for o in owners.values())
    assert split_corpus(corpus, count) == split  # a re-run gives the same shards


def test_split_without_final_newline_and_balanced_by_bytes(tmp_path: Path) -> None:
    corpus = tmp_path / "c.jsonl"
    corpus.write_bytes(
        b"a" * 99 + b"\n" + (b"b" * 9 + b"\n") * 9 + b"b" * 9
    )  # one long line, ten short, no final newline
    split = split_corpus(corpus, 2)
    assert split.lines == 11 and split.starts == (
        1,
        2,
        12,
    )  # half the bytes each: the long line, then the ten short ones


def test_three_shards_hold_each_document_once_in_corpus_order(tmp_path: Path, tiny_st_dir: Path) -> None:
    corpus = tmp_path / "corpus.jsonl"
    ids = _write_corpus(corpus, 12)
    shards = tmp_path / "shards"
    for i in (1, 2, 3):
        assert _shard(corpus, f"{i}/3", shards, tiny_st_dir) == 0
    sources = []
    for i in (1, 2, 3):
        folder = shards / ShardSpec(i, 3).folder_name
        passages = [json.loads(line) for line in (folder / "passages.jsonl").read_text().splitlines()]
        sources += list(dict.fromkeys(p["meta"]["document_id"] for p in passages))
        assert (folder / VECTORS).stat().st_size == len(passages) * 32 * 4
    assert sources == ids  # every document once, shard after shard in corpus order


def test_merge_through_passage_writer_into_any_haystack_store(
    tmp_path: Path, two_part_corpus: Path, tiny_st_dir: Path
) -> None:
    shards = tmp_path / "shards"
    for spec in ("1/2", "2/2"):
        assert _shard(two_part_corpus, spec, shards, tiny_st_dir) == 0
    store = InMemoryDocumentStore()
    result = merge_shards(shards, PassageWriter(document_store=store), batch_passages=1)
    passages = sum(_manifest(shards, ShardSpec(i, 2))["passages"] for i in (1, 2))
    assert (result.shards, result.documents, result.passages) == (2, 5, passages) == (2, 5, store.count_documents())
    assert all(d.embedding is not None and len(d.embedding) == 32 for d in store.filter_documents())


def test_batches_never_split_a_document() -> None:
    passages = [
        Document(id=f"{d}#{i}", content="x", meta={"document_id": d})
        for d, n in (("a", 3), ("b", 1), ("c", 2))
        for i in range(n)
    ]
    batches = list(document_batches(iter(passages), 2))
    assert [[p.id for p in b] for b in batches] == [["a#0", "a#1", "a#2"], ["b#0", "c#0", "c#1"]]


@pytest.mark.parametrize("spec", ["0/2", "3/2", "1/0", "a/b", "2", "", "-1/2"])
def test_bad_shard_spec_is_a_clear_error(
    spec: str, small_corpus_file: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code = main(
        [
            "run",
            INDEX_YML,
            "--input",
            f"path={small_corpus_file}",
            f"--shard={spec}",
            "--shard-dir",
            str(tmp_path / "s"),
        ]
    )
    assert code == 2
    assert "--shard: expected i/N with 1 <= i <= N" in capsys.readouterr().err
    assert not (tmp_path / "s").exists()


def test_shard_auto_reads_the_launcher() -> None:
    assert parse_shard_spec("auto", {"RANK": "0", "WORLD_SIZE": "4"}) == ShardSpec(1, 4)
    assert parse_shard_spec(
        "auto", {"SLURM_ARRAY_TASK_ID": "3", "SLURM_ARRAY_TASK_COUNT": "8", "SLURM_ARRAY_TASK_MIN": "1"}
    ) == ShardSpec(3, 8)
    assert parse_shard_spec(
        "auto", {"SLURM_ARRAY_TASK_ID": "0", "SLURM_ARRAY_TASK_COUNT": "8", "SLURM_ARRAY_TASK_MIN": "0"}
    ) == ShardSpec(1, 8)
    assert parse_shard_spec("auto", {"SLURM_PROCID": "5", "SLURM_NTASKS": "6"}) == ShardSpec(6, 6)
    assert parse_shard_spec(" 2 / 8 ") == ShardSpec(2, 8)
    with pytest.raises(ValueError, match="no launcher variables"):
        parse_shard_spec("auto", {})
    with pytest.raises(ValueError, match=r"RANK/WORLD_SIZE give shard 5/4"):
        parse_shard_spec("auto", {"RANK": "4", "WORLD_SIZE": "4"})


def test_missing_shard_is_refused(
    tmp_path: Path, small_corpus_file: Path, tiny_st_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    shards = tmp_path / "shards"
    assert _shard(small_corpus_file, "1/2", shards, tiny_st_dir) == 0
    capsys.readouterr()
    assert _merge(shards, tmp_path / "merged", tiny_st_dir) == 2
    assert "1 of 2 shards missing: 2/2" in capsys.readouterr().err
    assert not (tmp_path / "merged").exists()
    assert _merge(tmp_path / "nowhere", tmp_path / "merged", tiny_st_dir) == 2
    assert "does not exist" in capsys.readouterr().err


def test_mismatched_encoder_is_refused(
    tmp_path: Path, small_corpus_file: Path, tiny_st_dir: Path, tiny_bert_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    shards = tmp_path / "shards"
    assert _shard(small_corpus_file, "1/2", shards, tiny_st_dir) == 0
    assert _shard(small_corpus_file, "2/2", shards, tiny_bert_dir) == 0
    capsys.readouterr()
    assert _merge(shards, tmp_path / "merged", tiny_st_dir) == 2
    err = capsys.readouterr().err
    assert "shard 2/2" in err and "other settings than shard 1/2: embedder.encoder is" in err
    assert not (tmp_path / "merged").exists()


def test_mismatched_corpus_is_refused(
    tmp_path: Path, small_corpus_file: Path, tiny_st_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    shards = tmp_path / "shards"
    assert _shard(small_corpus_file, "1/2", shards, tiny_st_dir) == 0
    small_corpus_file.write_text(
        small_corpus_file.read_text() + json.dumps({"id": "new", "text": "A new document."}) + "\n"
    )
    assert _shard(small_corpus_file, "2/2", shards, tiny_st_dir) == 0
    capsys.readouterr()
    assert _merge(shards, tmp_path / "merged", tiny_st_dir) == 2
    assert "shard 2/2" in (err := capsys.readouterr().err) and "cut from another corpus than shard 1/2" in err


def test_damaged_shard_is_refused(
    tmp_path: Path, two_part_corpus: Path, tiny_st_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    shards = tmp_path / "shards"
    for spec in ("1/2", "2/2"):
        assert _shard(two_part_corpus, spec, shards, tiny_st_dir) == 0
    vectors = shards / ShardSpec(2, 2).folder_name / VECTORS
    vectors.write_bytes(vectors.read_bytes()[:-4])
    capsys.readouterr()
    assert _merge(shards, tmp_path / "merged", tiny_st_dir) == 2
    assert "vectors.f32 has" in (err := capsys.readouterr().err) and "its manifest says" in err


def test_failed_shard_run_leaves_no_shard_folder(
    tmp_path: Path, tiny_st_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    corpus = tmp_path / "corpus.jsonl"
    _write_corpus(corpus, 12)
    corpus.write_text(corpus.read_text() + '{"id": "bad", "text": \n')
    shards = tmp_path / "shards"
    assert _shard(corpus, "2/2", shards, tiny_st_dir) == 2
    assert "corpus.jsonl:14: invalid JSON" in capsys.readouterr().err
    assert not shards.exists() or not any(p.name.startswith("shard-") for p in shards.iterdir())


def test_shard_option_mistakes(tmp_path: Path, small_corpus_file: Path, capsys: pytest.CaptureFixture[str]) -> None:
    run = ["run", INDEX_YML, "--input", f"path={small_corpus_file}"]
    assert main([*run, "--shard-dir", str(tmp_path / "s")]) == 2
    assert "--shard-dir needs --shard i/N" in capsys.readouterr().err
    assert main([*run, "--shard", "1/2", "--shard-dir", str(tmp_path / "s"), "--store", str(tmp_path / "x")]) == 2
    assert "drop --store" in capsys.readouterr().err
    assert main(["run", INDEX_YML, "--input", 'records=[{"id": "a", "text": "b"}]', "--shard", "1/2"]) == 2
    assert "--shard reads a corpus file" in capsys.readouterr().err
    assert main(["run", INDEX_YML, "--input", f"path={tmp_path / 'missing.jsonl'}", "--shard", "1/2"]) == 2
    assert "missing.jsonl does not exist" in capsys.readouterr().err


@pytest.fixture(scope="module")
def _two_shards(tmp_path_factory: pytest.TempPathFactory, tiny_st_dir: Path) -> Path:
    folder = tmp_path_factory.mktemp("two_shards")
    corpus = folder / "two_part.jsonl"
    write_jsonl(corpus, reversed(SMALL_CORPUS))
    for spec in ("1/2", "2/2"):
        assert _shard(corpus, spec, folder / "shards", tiny_st_dir) == 0
    return folder / "shards"


@pytest.fixture()
def two_shards(_two_shards: Path, tmp_path: Path) -> Path:
    """A private copy of the two shards of the small corpus (shard 1: jupiter's 2 passages; shard 2: 4 documents of 1)."""
    return Path(shutil.copytree(_two_shards, tmp_path / "shards"))


def _new_store_writer(path: Path) -> PassageWriter:
    return PassageWriter(document_store=EmbeddedDocumentStore(path=str(path)))


def _edit_passage(folder: Path, line: int, passage_id: str, document: str) -> None:
    """Give line ``line`` of a shard another passage id and document, keeping the manifest's digests right."""
    lines = (folder / PASSAGES).read_text(encoding="utf-8").splitlines(keepends=True)
    record = json.loads(lines[line - 1])
    record["id"], record["meta"]["document_id"] = passage_id, document
    lines[line - 1] = json.dumps(record) + "\n"
    (folder / PASSAGES).write_text("".join(lines), encoding="utf-8")
    rehash(folder)


def test_shard_counts_are_bounded_before_anything_per_shard(tmp_path: Path) -> None:
    assert parse_shard_spec("99999/99999") == ShardSpec(99999, 99999)
    for text in ("1/100000", "1/30000000", "1/" + "9" * 5000):
        with pytest.raises(ValueError, match="at most 99,999 shards"):
            parse_shard_spec(text)
    with pytest.raises(ValueError, match="at most 99,999 shards"):
        parse_shard_spec("auto", {"RANK": "0", "WORLD_SIZE": "30000000"})
    with pytest.raises(ValueError, match=r"WORLD_SIZE=.* is not an integer of at most 18 digits"):
        parse_shard_spec("auto", {"RANK": "0", "WORLD_SIZE": "9" * 5000})
    corpus = tmp_path / "corpus.jsonl"
    _write_corpus(corpus, 3)
    with pytest.raises(ValueError, match="shard count must be 1 to 99,999, got 30,000,000"):
        split_corpus(corpus, 30_000_000)
    assert shard_from_folder_name("shard-00002-of-00008") == ShardSpec(2, 8) and shard_from_folder_name("notes") is None
    for name in ("shard-00009-of-00008", "shard-00000-of-00002", "shard-00001-of-100000"):
        with pytest.raises(ValueError, match=f"{name}: no run makes shard"):
            shard_from_folder_name(name)


def test_many_missing_shards_are_counted_not_listed(two_shards: Path, tmp_path: Path) -> None:
    lone = tmp_path / "lone" / "shard-00001-of-90000"
    shutil.copytree(two_shards / ShardSpec(1, 2).folder_name, lone)
    edit_manifest(lone, shard="1/90000", corpus={**_manifest(two_shards, ShardSpec(1, 2))["corpus"], "lines": 10**6})
    start = time.perf_counter()
    with pytest.raises(
        ShardError, match=r": 89,999 of 90,000 shards missing: 2/90000, 3/90000, .*, 9/90000 \.\.\.; run them"
    ):
        find_shards(lone.parent)
    assert time.perf_counter() - start < 1


def test_manifest_records_size_and_sha256_of_both_files(two_shards: Path) -> None:
    for spec in (ShardSpec(1, 2), ShardSpec(2, 2)):
        files = _manifest(two_shards, spec)["files"]
        for name in (PASSAGES, VECTORS):
            data = (two_shards / spec.folder_name / name).read_bytes()
            assert files[name] == {"bytes": len(data), "sha256": hashlib.sha256(data).hexdigest()}


def _hand_made_shard(tmp_path: Path) -> Path:
    folder = tmp_path / "shard-00001-of-00001"
    folder.mkdir()
    writer = ShardFolderWriter(folder)
    writer.write([Document(id="a#0", content="x", meta={"document_id": "a"}, embedding=[0.5, 0.25])])
    writer.finish({"shard": "1/1"})
    return folder


@pytest.mark.parametrize(
    "line, problem",
    [
        (b"not json", "not a shard passage"),
        (b'{"id": "a#0", "content": "x"}', "not a shard passage (an object with exactly id, content and meta)"),
        (
            b'{"id": "a#0", "content": "x", "meta": {}, "score": 1}',
            "not a shard passage (an object with exactly id, content and meta)",
        ),
        (b'{"id": "", "content": "x", "meta": {}}', "the passage id must be a non-empty string"),
        (b'{"id": 7, "content": "x", "meta": {}}', "the passage id must be a non-empty string"),
        (b'{"id": "a#0", "content": 5, "meta": {}}', "passage 'a#0' has content 5, not text"),
        (b'{"id": "a#0", "content": "x", "meta": []}', "passage 'a#0' has meta [], not an object"),
        (b'{"id": "a#0", "content": "x", "meta": {"s": NaN}}', "not a shard passage"),
        (b'{"id": "a#0", "content": "\xff", "meta": {}}', "not UTF-8"),
    ],
)
def test_each_passage_is_checked(tmp_path: Path, line: bytes, problem: str) -> None:
    folder = _hand_made_shard(tmp_path)
    (folder / PASSAGES).write_bytes(line + b"\n")
    rehash(folder)  # as a faulty shard run would have written it: only the check of the line catches it
    with pytest.raises(ShardError, match="^" + re.escape(f"shard 1/1 ({folder}): passages.jsonl line 1: {problem}")):
        list(shard_passages(folder, read_manifest(folder)))


@pytest.mark.parametrize("value", [float("inf"), float("-inf"), float("nan")])
def test_each_vector_is_checked(tmp_path: Path, value: float) -> None:
    folder = _hand_made_shard(tmp_path)
    (folder / VECTORS).write_bytes(np.array([0.5, value], dtype="<f4").tobytes())
    rehash(folder)
    with pytest.raises(ShardError, match=r"vectors.f32 row 1 \(passage 'a#0'\) has NaN or infinite values"):
        list(shard_passages(folder, read_manifest(folder)))


def test_an_all_zero_vector_is_refused_even_with_matching_digests(tmp_path: Path) -> None:
    folder = _hand_made_shard(tmp_path)
    (folder / VECTORS).write_bytes(bytes((folder / VECTORS).stat().st_size))
    rehash(folder)  # the digests match the zeroed file: only the check of the values catches it
    with pytest.raises(ShardError, match=r"vectors.f32 row 1 \(passage 'a#0'\) is all zeros, which no search"):
        list(shard_passages(folder, read_manifest(folder)))


@pytest.mark.parametrize(("vector", "problem"), [([0.0, 0.0], "is all zeros"), ([0.5, float("nan")], "has NaN")])
def test_a_shard_run_refuses_unusable_vectors(tmp_path: Path, vector: list[float], problem: str) -> None:
    writer = ShardFolderWriter(tmp_path)
    good = Document(id="a#0", content="x", embedding=[0.5, 0.25])
    with pytest.raises(ShardError, match=rf"passage 'b#0': the encoder returned a vector that {problem}"):
        writer.write([good, Document(id="b#0", content="y", embedding=vector)])
    writer.close()
    assert writer.passages == 0 and (tmp_path / VECTORS).stat().st_size == 0


def test_passage_id_twice_is_refused_before_any_write(two_shards: Path, tmp_path: Path) -> None:
    _edit_passage(two_shards / ShardSpec(2, 2).folder_name, 1, "jupiter#0", "jupiter")
    with pytest.raises(
        ShardError,
        match=(
            r"passage id 'jupiter#0' comes twice, in shard 1/2 \(passages.jsonl line 1\) and in shard 2/2 \(passages.jsonl line 1\)"
        ),
    ):
        merge_shards(two_shards, _new_store_writer(tmp_path / "store"))
    assert not (tmp_path / "store").exists()


@pytest.mark.parametrize("line", [1, 3], ids=["across shards", "within a shard"])
def test_document_in_two_places_is_refused_before_any_write(two_shards: Path, tmp_path: Path, line: int) -> None:
    """The writer replaces a document's passages by each batch's: a document met twice would lose passages."""
    folder = two_shards / ShardSpec(2, 2).folder_name
    first = json.loads((folder / PASSAGES).read_text(encoding="utf-8").splitlines()[0])["meta"]["document_id"]
    # Line 1 of shard 2 joins jupiter, the document of shard 1; line 3 joins the document of line 1.
    document, place = (
        ("jupiter", "shard 1/2 (passages.jsonl line 1)") if line == 1 else (first, "shard 2/2 (passages.jsonl line 1)")
    )
    _edit_passage(folder, line, f"{document}#9", document)
    expected = (
        f"the passages of document {document!r} are in two places, {place} and shard 2/2 (passages.jsonl line {line})"
    )
    with pytest.raises(ShardError, match=re.escape(expected)):
        merge_shards(two_shards, _new_store_writer(tmp_path / "store"))
    assert not (tmp_path / "store").exists()


def test_colliding_id_digests_do_not_refuse_a_good_merge(two_shards: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(
        shard_check, "_key", lambda kind, value: 7
    )  # every id "repeats": the ids themselves are compared
    store = InMemoryDocumentStore()
    assert merge_shards(two_shards, PassageWriter(document_store=store)).passages == 6 == store.count_documents()


def test_failed_merge_into_a_new_store_leaves_none(
    two_shards: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    calls = []
    write = EmbeddedDocumentStore.write_documents

    def full_disk_at_the_second_batch(self: EmbeddedDocumentStore, documents: list[Document], **kwargs: Any) -> int:
        calls.append(len(documents))
        if len(calls) == 2:
            raise OSError(28, "No space left on device")
        return write(self, documents, **kwargs)

    monkeypatch.setattr(EmbeddedDocumentStore, "write_documents", full_disk_at_the_second_batch)
    with pytest.raises(OSError, match="No space left on device"):
        merge_shards(two_shards, _new_store_writer(tmp_path / "store"), batch_passages=1)
    assert calls == [2, 1]
    assert not (tmp_path / "store").exists() and not (tmp_path / ".store.merging").exists()


def test_shard_replaced_during_the_merge_is_refused(
    two_shards: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    vectors = two_shards / ShardSpec(2, 2).folder_name / VECTORS
    write = EmbeddedDocumentStore.write_documents
    replaced = []

    def shard_run_again_meanwhile(self: EmbeddedDocumentStore, documents: list[Document], **kwargs: Any) -> int:
        if not replaced:  # during the first write, after every check
            shutil.copyfile(vectors, vectors.with_suffix(".new"))  # the same bytes, another file
            os.replace(vectors.with_suffix(".new"), vectors)
            replaced.append(vectors)
        return write(self, documents, **kwargs)

    monkeypatch.setattr(EmbeddedDocumentStore, "write_documents", shard_run_again_meanwhile)
    with pytest.raises(ShardError, match=r"shard 2/2 \(.*\): vectors.f32 was replaced or changed since it was checked"):
        merge_shards(two_shards, _new_store_writer(tmp_path / "store"))
    assert not (tmp_path / "store").exists()


def test_merge_running_into_the_same_new_store_is_refused_and_a_dead_one_cleared(
    two_shards: Path, tmp_path: Path
) -> None:
    store = tmp_path / "store"
    with open(tmp_path / ".store.merge.lock", "ab") as held:
        fcntl.flock(held, fcntl.LOCK_EX)
        with pytest.raises(ShardError, match=f"another merge into {store} is running"):
            merge_shards(two_shards, _new_store_writer(store))
    assert not store.exists()
    dead = tmp_path / ".store.merging"  # what a killed merge leaves
    dead.mkdir()
    (dead / "documents.sqlite").write_bytes(b"half a database")
    assert merge_shards(two_shards, _new_store_writer(store)).passages == 6
    assert not dead.exists() and EmbeddedDocumentStore(path=str(store)).count_documents() == 6


def test_merge_into_an_existing_store_writes_in_place(indexed_store: Path, tmp_path: Path, tiny_st_dir: Path) -> None:
    corpus = tmp_path / "more.jsonl"
    ids = _write_corpus(corpus, 3)
    for spec in ("1/2", "2/2"):
        assert _shard(corpus, spec, tmp_path / "shards", tiny_st_dir) == 0
    before = {d.id for d in EmbeddedDocumentStore(path=str(indexed_store)).filter_documents()}
    assert _merge(tmp_path / "shards", indexed_store, tiny_st_dir) == 0
    after = {d.id for d in EmbeddedDocumentStore(path=str(indexed_store)).filter_documents()}
    assert after == before | {f"{i}#0" for i in ids} and not (tmp_path / ".index.merging").exists()


def test_existing_store_of_another_encoder_refuses_the_first_batch(
    indexed_store: Path,
    two_part_corpus: Path,
    tmp_path: Path,
    tiny_dpr_dirs: tuple[Path, Path],
    capsys: pytest.CaptureFixture[str],
) -> None:
    """The store's own check (vectors of the encoder it was indexed with) refuses the first batch, before anything is written."""
    for spec in ("1/2", "2/2"):
        assert _shard(two_part_corpus, spec, tmp_path / "shards", tiny_dpr_dirs[1]) == 0
    before = {
        d.id: (d.content, d.meta, d.embedding)
        for d in EmbeddedDocumentStore(path=str(indexed_store)).filter_documents()
    }
    capsys.readouterr()
    assert _merge(tmp_path / "shards", indexed_store, tiny_dpr_dirs[1]) == 2
    assert "was indexed with passage encoder" in capsys.readouterr().err
    after = {
        d.id: (d.content, d.meta, d.embedding)
        for d in EmbeddedDocumentStore(path=str(indexed_store)).filter_documents()
    }
    assert after == before
