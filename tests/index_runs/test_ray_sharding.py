"""Sharded indexing as Ray tasks on a local runtime: the merged store equals the one-process store,
a shard whose worker dies is retried, and complete shards are kept on a second run."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from functools import partial
from pathlib import Path

import numpy as np
import pytest

from dpr_components.cli.main import main
from dpr_components.index_runs.ray_sharding import (
    RaySettings,
    ShardJob,
    ShardOutcome,
    encode_shard,
    index_on_ray,
    start_ray,
)
from dpr_components.index_runs.shard_check import check_shard_contents, find_shards
from haystack_integrations.document_stores.dpr.document_store import EmbeddedDocumentStore
from tests.helpers.commands import embedder_sets
from tests.helpers.paths import PIPELINES

INDEX_YML = str(PIPELINES / "index.yml")
TOPICS = ["volcano lava eruption", "violin orchestra concerto", "glacier ice valley", "comet orbit telescope"]
QUERIES = ["lava eruption", "orchestra concerto violin", "ice glacier", "telescope comet orbit sun"]

if os.environ.get("CI") == "true":
    import ray  # the CI installs the ray extra: a missing ray fails there instead of skipping
else:
    ray = pytest.importorskip("ray", reason="ray is not installed (pip install 'dpr-components[ray]')")


def _encoder(model: Path) -> list[str]:
    return [*embedder_sets(model), "--set", "embedder.precision=fp32"]


@pytest.fixture(scope="module")
def local_ray() -> Iterator[None]:
    """One local runtime of 2 CPUs (2 workers) for the module; no dashboard, no usage statistics."""
    ray.cloudpickle.register_pickle_by_value(sys.modules[__name__])  # workers get this module's functions by value
    start_ray(None, 2)
    yield
    ray.shutdown()


@pytest.fixture()
def corpus(tmp_path: Path) -> Path:
    """36 short documents of four topics, of varied length (some two passages long)."""
    lines = []
    for i in range(36):
        words = f"{TOPICS[i % 4]} story {i} " * (2 + 23 * (i % 7 == 0))
        lines.append(json.dumps({"id": f"doc{i}", "title": f"Title {i}", "text": words.strip()}))
    path = tmp_path / "corpus.jsonl"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def _job(corpus: Path, shard_dir: Path, model: Path) -> ShardJob:
    overrides = tuple(_encoder(model)[1::2])
    return ShardJob(INDEX_YML, str(corpus), 3, str(shard_dir), overrides, inputs={})


def _merge(shard_dir: Path, store: Path, model: Path) -> None:
    assert main(["merge-shards", INDEX_YML, str(shard_dir), "--store", str(store), *_encoder(model)]) == 0


def _assert_same_store(expected_path: Path, actual_path: Path) -> None:
    expected, actual = EmbeddedDocumentStore(path=str(expected_path)), EmbeddedDocumentStore(path=str(actual_path))
    want, got = expected.filter_documents(), actual.filter_documents()
    assert len(want) > 36  # the long documents were split
    assert [d.id for d in got] == [d.id for d in want]
    assert [(d.content, d.meta) for d in got] == [(d.content, d.meta) for d in want]
    # fp32: batches of other neighbours round differently, far below this
    np.testing.assert_allclose([d.embedding for d in got], [d.embedding for d in want], rtol=0, atol=1e-5)
    for query in QUERIES:
        assert [(d.id, round(d.score, 5)) for d in actual.bm25_retrieval(query, top_k=5)] == [
            (d.id, round(d.score, 5)) for d in expected.bm25_retrieval(query, top_k=5)
        ]
    rng = np.random.default_rng(0)
    for vector in [*(want[i].embedding for i in (0, 5, 17)), *rng.normal(size=(2, len(want[0].embedding))).tolist()]:
        found, reference = actual.embedding_retrieval(vector, top_k=5), expected.embedding_retrieval(vector, top_k=5)
        assert [d.id for d in found] == [d.id for d in reference]
        np.testing.assert_allclose([d.score for d in found], [d.score for d in reference], atol=1e-5)


def _one_process_store(corpus: Path, store: Path, model: Path) -> Path:
    assert main(["run", INDEX_YML, "--input", f"path={corpus}", "--store", str(store), *_encoder(model)]) == 0
    return store


@pytest.mark.integration
def test_index_ray_equals_one_process(local_ray: None, tmp_path: Path, corpus: Path, tiny_st_dir: Path) -> None:
    shards, store = tmp_path / "shards", tmp_path / "merged"
    args = ["index-ray", INDEX_YML, "--input", f"path={corpus}", "--shards", "3", "--shard-dir", str(shards)]
    assert main([*args, "--store", str(store), "--workers", "2", *_encoder(tiny_st_dir)]) == 0
    found = find_shards(shards)
    assert [str(s.spec) for s in found] == ["1/3", "2/3", "3/3"]
    check_shard_contents(found, None)
    _assert_same_store(_one_process_store(corpus, tmp_path / "one", tiny_st_dir), store)


def _dies_once(attempts: Path, job: ShardJob, index: int) -> ShardOutcome:
    """The first attempt at shard 2 is killed (SIGKILL, through the project's fault point) just
    before its folder would be renamed into place; every attempt is recorded."""
    with open(attempts, "a", encoding="utf-8") as handle:
        handle.write(f"{index}\n")
    first = attempts.read_text(encoding="utf-8").split().count("2") == 1
    if index == 2 and first:
        os.environ["DPR_FAULT_POINT"] = "atomic_directory.between_renames"
    try:
        return encode_shard(job, index)
    finally:
        os.environ.pop("DPR_FAULT_POINT", None)


@pytest.mark.integration
def test_a_shard_whose_worker_dies_is_retried_and_complete_shards_are_kept(
    local_ray: None, tmp_path: Path, corpus: Path, tiny_st_dir: Path
) -> None:
    shards, attempts = tmp_path / "shards", tmp_path / "attempts.txt"
    job = _job(corpus, shards, tiny_st_dir)
    outcomes = index_on_ray(job, RaySettings(workers=2, max_retries=2), encode=partial(_dies_once, attempts))
    assert sorted(attempts.read_text().split()) == ["1", "2", "2", "3"]  # shard 2 ran twice
    assert [(o.shard, o.kept) for o in outcomes] == [("1/3", False), ("2/3", False), ("3/3", False)]
    _merge(shards, tmp_path / "merged", tiny_st_dir)
    _assert_same_store(_one_process_store(corpus, tmp_path / "one", tiny_st_dir), tmp_path / "merged")

    # A second run keeps the checked shards and encodes again only the one damaged since.
    vectors = shards / "shard-00003-of-00003" / "vectors.f32"
    data = bytearray(vectors.read_bytes())
    data[:4] = bytes(4)
    vectors.write_bytes(bytes(data))
    again = index_on_ray(job, RaySettings(workers=2))
    assert [(o.shard, o.kept) for o in again] == [("1/3", True), ("2/3", True), ("3/3", False)]
    check_shard_contents(find_shards(shards), None)


@pytest.mark.integration
def test_a_shard_that_keeps_failing_is_named_and_the_others_finish(
    local_ray: None, tmp_path: Path, corpus: Path, tiny_st_dir: Path
) -> None:
    shards = tmp_path / "shards"
    job = _job(corpus, shards, tiny_st_dir)
    bad = ShardJob(job.pipeline, job.corpus, job.count, job.shard_dir, (*job.overrides, "embedder.batch_size=0"))
    with pytest.raises(ValueError, match=r"3 of 3 shards failed after 0 retries \(1/3, 2/3, 3/3\); shard 1/3: "):
        index_on_ray(bad, RaySettings(workers=2, max_retries=0))


def test_index_ray_refuses_bad_options(tmp_path: Path, corpus: Path, capsys: pytest.CaptureFixture[str]) -> None:
    base = ["index-ray", INDEX_YML, "--shard-dir", str(tmp_path / "s")]
    assert main([*base, "--input", f"path={corpus}", "--shards", "0"]) == 2
    assert "--shards 0: must be a whole number from 1" in capsys.readouterr().err
    assert main([*base, "--input", f"path={corpus}", "--shards", "37"]) == 2
    assert "has 36 lines; give N at most its line count" in capsys.readouterr().err
    assert main([*base, "--shards", "2"]) == 2
    assert "--input path=CORPUS" in capsys.readouterr().err
    assert not (tmp_path / "s").exists()


def test_the_library_and_the_command_import_without_ray() -> None:
    code = (
        "import sys; sys.modules['ray'] = None\n"
        "import dpr_components.cli.main, dpr_components.index_runs.ray_sharding as r\n"
        "try:\n    r.import_ray()\nexcept ValueError as e:\n    print(e)\n"
    )
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1", "HAYSTACK_TELEMETRY_ENABLED": "False"}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, check=True).stdout
    assert out.strip() == "indexing on Ray needs ray: pip install 'dpr-components[ray]'"
