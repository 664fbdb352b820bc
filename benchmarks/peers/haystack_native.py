"""Our packaged pipelines against the pipeline a Haystack user would compose from Haystack 3's own
components, with the same weights (``benchmarks/peers/native_systems.py`` builds both), in one run where
the two take turns: indexing, retrieval (top-1/5/20, paired intervals), re-ranking over the same
candidates, end to end (EM/F1 and ms per question at 1 and 2 threads), cold start and memory. With
``--work``, a run stopped midway goes on where it stopped when started again with the same command
(``native_checkpoints.py``).

Indexing and cold starts run in fresh processes (``native_worker.py``); the rest in this one, system after
system for each question, the order turning from question to question. Haystack's store is the one its
indexing wrote (``save_to_disk``), read back. Needs the ``[interop]`` extra. Writes
docs/benchmarks/peers/haystack_native.{md,json}.

    python -m benchmarks.peers.haystack_native --store indexes/pool --limit 250
    python -m benchmarks.peers.haystack_native --store indexes/pool --questions nq/dev.jsonl,squad/dev.jsonl \\
        --limit 500 --out docs/benchmarks/peers/haystack_native_dev
"""

from __future__ import annotations

import argparse
import contextlib
import functools
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

from tqdm.auto import tqdm

from benchmarks.common import REPO_ROOT, cpu_name, installed_versions, log, report_main, set_threads
from benchmarks.load.query_latency import RESULTS as LOAD_RESULTS
from benchmarks.peers.native_checkpoints import Checkpoints
from benchmarks.peers.native_report import (
    HAYSTACK_RANKER,
    KS,
    OUR_RANKER,
    THREAD_COUNTS,
    million_store,
    render,
    under_load,
)
from benchmarks.peers.native_systems import (
    FUSIONS,
    NativeSettings,
    RunFiles,
    export_models,
    haystack_qa,
    haystack_qa_inputs,
    load_haystack_store,
    pipeline_path,
    similarity_ranker,
    text_embedder,
)
from benchmarks.reader.qa_pipelines import SELECTION, answer_component, asked_questions, scores
from benchmarks.scale.scale_benchmark import RESULTS as SCALE_RESULTS
from dpr_components.evaluation.retrieval_metrics import first_hit_rank_for
from dpr_components.pipeline_files.loading import load_pipeline
from dpr_components.pipeline_requests.inputs import request_inputs
from dpr_components.pipeline_requests.running import run_pipeline
from dpr_components.utils.settings import cache_dir
from dpr_components.utils.threads import ENCODE_THREADS_ENV, QUERY_THREADS_ENV

MODULE = "benchmarks.peers.haystack_native"
DEPTH = max(KS)
OFFLINE = {"HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1"}
VERSIONS = ("haystack-ai", "sentence-transformers-haystack", "transformers-haystack", "sentence-transformers")
VERSIONS += ("transformers", "torch")
Searches = Callable[[str], dict[str, tuple[list[Any], float]]]


def rotated(items: Sequence[Any], turn: int) -> list[Any]:
    """``items`` starting at position ``turn`` (modulo their number): the systems' order for one question."""
    shift = turn % len(items) if items else 0
    return [*items[shift:], *items[:shift]]


@contextlib.contextmanager
def work_folder(path: Path | None) -> Iterator[Path]:
    """``path`` (new, empty, or an earlier run's: kept afterwards) or a temporary folder in the cache."""
    if path is None:
        cache_dir().mkdir(parents=True, exist_ok=True)
        with tempfile.TemporaryDirectory(prefix="haystack-native-", dir=cache_dir()) as temporary:
            yield Path(temporary)
        return
    if path.exists() and any(path.iterdir()) and not (path / "run.json").is_file():
        raise SystemExit(f"--work {path} holds files of something else: give a new or empty folder")
    path.mkdir(parents=True, exist_ok=True)
    yield path


def worker_environment(threads: int) -> dict[str, str]:
    """This environment, offline, the project importable, on ``threads`` threads."""
    python_path = os.pathsep.join(filter(None, [str(REPO_ROOT), os.environ.get("PYTHONPATH")]))
    threads_env = {name: str(threads) for name in ("OMP_NUM_THREADS", QUERY_THREADS_ENV, ENCODE_THREADS_ENV)}
    return {**os.environ, **OFFLINE, **threads_env, "TOKENIZERS_PARALLELISM": "false", "PYTHONPATH": python_path}


def run_worker(
    arguments: list[str], log_file: Path, threads: int, module: str = "benchmarks.peers.native_worker"
) -> tuple[dict[str, Any], float]:
    """``python -m module ARGUMENTS`` in a fresh process on ``threads`` threads, its standard error in
    ``log_file``: its last line of output (JSON) and the wall-clock time it was started."""
    command = [sys.executable, "-m", module, *arguments]
    with open(log_file, "w", encoding="utf-8") as errors:
        started = time.time()
        done = subprocess.run(
            command, stdout=subprocess.PIPE, stderr=errors, text=True, env=worker_environment(threads), check=False
        )
    lines = done.stdout.strip().splitlines()
    if done.returncode != 0 or not lines:
        tail = log_file.read_text(encoding="utf-8", errors="replace")[-2000:]
        raise SystemExit(f"{' '.join(arguments[:3])} failed (exit {done.returncode}); {log_file} ends:\n{tail}")
    return json.loads(lines[-1]), started


def write_passages(store: Any, path: Path) -> int:
    """Every passage of our ``store`` (text, title and other meta, no vector) as JSON lines: both systems index these."""
    count = 0
    with open(path, "w", encoding="utf-8") as out:
        for document in store.filter_documents():
            meta = {key: value for key, value in document.meta.items() if key != "passage_encoder"}
            out.write(json.dumps({"id": document.id, "content": document.content, "meta": meta}) + "\n")
            count += 1
    return count


def measure_indexing(
    run: Path, passages: Path, work: Path, repeats: int, threads: int
) -> dict[str, list[dict[str, Any]]]:
    """Each system indexes every passage ``repeats`` times, taking turns; Haystack's last store stays in
    ``work`` (``haystack_store.json``) for the rest of the run."""
    results: dict[str, list[dict[str, Any]]] = {"ours": [], "haystack": []}
    for repeat in range(repeats):
        for system in rotated(list(results), repeat):
            out = work / ("index-ours" if system == "ours" else "haystack_store.json")
            if out.is_dir():
                shutil.rmtree(out)  # this run's own earlier store
            log(f"indexing {passages.name} with {system} ({repeat + 1}/{repeats})")
            arguments = ["index", "--system", system, "--run", str(run), "--passages", str(passages), "--out", str(out)]
            results[system].append(run_worker(arguments, work / f"index-{system}.log", threads)[0])
        shutil.rmtree(work / "index-ours", ignore_errors=True)
    return results


def measure_cold(run: Path, question: str, work: Path, repeats: int, threads: int) -> dict[str, list[dict[str, Any]]]:
    """Each system started ``repeats`` times in a fresh process, taking turns, answering ``question`` once."""
    results: dict[str, list[dict[str, Any]]] = {"qa": [], "haystack_qa": []}
    for repeat in range(repeats):
        for system in rotated(list(results), repeat):
            log(f"cold start of {system} ({repeat + 1}/{repeats})")
            arguments = ["cold", "--system", system, "--run", str(run), "--question", question]
            result, started = run_worker(arguments, work / f"cold-{system}.log", threads)
            seconds = round(result["answered_at"] - started, 3)
            results[system].append({"seconds": seconds, "rss_mib": result["rss_mib"], "peak_mib": result["peak_mib"]})
    return results


def documents_component(pipeline: Any) -> Any:
    """The one component of ``pipeline`` whose output holds ``documents``."""
    names = [name for name, sockets in pipeline.outputs().items() if "documents" in sockets]
    if len(names) != 1:
        raise ValueError(f"expected one component with a documents output, found {names}")
    return pipeline.get_component(names[0])


def timed_call(action: Callable[[], Any]) -> tuple[Any, float]:
    start = time.perf_counter()
    result = action()
    return result, time.perf_counter() - start


def our_searches(ours: dict[str, Any]) -> list[Searches]:
    """Our BM25 (``bm25``), dense (``dense``) and hybrid (``qa``'s) retrievers, each its top ``DEPTH``."""

    def search(name: str, component: Any) -> Searches:
        return lambda q: {name: timed_call(lambda: component.run(query=q, top_k=DEPTH)["documents"])}

    return [
        search("ours BM25", documents_component(ours["bm25"])),
        search("ours dense", documents_component(ours["dense"])),
        search("ours hybrid", ours["qa"].get_component("hybrid")),
    ]


def haystack_searches(files: RunFiles, store: Any) -> list[Searches]:
    """Haystack's BM25 and embedding retrieval of the hybrid's candidates each (their first ``DEPTH`` reported),
    and both fused by each joiner into a top ``DEPTH``."""
    from haystack.components.joiners import DocumentJoiner
    from haystack.components.retrievers.in_memory import InMemoryBM25Retriever, InMemoryEmbeddingRetriever

    depth = files.settings.candidates
    bm25 = InMemoryBM25Retriever(document_store=store, top_k=depth)
    embedder, embedding = text_embedder(files.exports, files.st_backend), InMemoryEmbeddingRetriever(store, top_k=depth)
    embedder.warm_up()
    joiners = {
        name: DocumentJoiner(join_mode=mode, top_k=DEPTH) for name, mode in zip(("RRF", "DBSF"), FUSIONS, strict=True)
    }

    def search(question: str) -> dict[str, tuple[list[Any], float]]:
        lexical, lexical_s = timed_call(lambda: bm25.run(query=question)["documents"])
        dense, dense_s = timed_call(
            lambda: embedding.run(query_embedding=embedder.run(text=question)["embedding"])["documents"]
        )
        found = {"Haystack BM25": (lexical[:DEPTH], lexical_s), "Haystack embedding": (dense[:DEPTH], dense_s)}
        for name, joiner in joiners.items():
            joined, seconds = timed_call(lambda j=joiner: j.run(documents=[lexical, dense])["documents"])
            found[f"Haystack {name}"] = (joined, lexical_s + dense_s + seconds)
        return found

    return [search]


RETRIEVERS = ("ours BM25", "ours dense", "ours hybrid", "Haystack BM25", "Haystack embedding", "Haystack RRF")
RETRIEVERS += ("Haystack DBSF",)
HYBRID_ORDER, HEAD_ALONE = "no re-ranking (hybrid order)", "ours, head alone"
Ranker = Callable[[str, list[Any]], list[Any]]


def use_threads(threads: int) -> None:
    """``threads`` threads for our components (``DPR_QUERY_THREADS``), torch and FAISS."""
    os.environ[QUERY_THREADS_ENV] = str(threads)
    set_threads(threads)


def rankers(ours: dict[str, Any], files: RunFiles) -> dict[str, Ranker]:
    """``qa``'s re-ranker, the same model by its logit alone in float32, and Haystack's ranker on its export
    (the last two score every candidate, for the agreement of their scores)."""
    from dpr_components.pipeline_files.loading import load_pipeline_spec
    from haystack_integrations.components.rankers.dpr.passage_ranker import PassageRanker

    ours_ranker = ours["qa"].get_component("reranker")
    spec = load_pipeline_spec(pipeline_path(files.pipelines, "qa"))["components"]["reranker"]["init_parameters"]
    every = files.settings.fused_top_k
    head = PassageRanker(**{**spec, "retrieval_weight": 0.0, "precision": "fp32", "top_k": every})
    theirs = similarity_ranker(files.exports, every, files.st_backend)
    head.warm_up()
    theirs.warm_up()
    return {
        OUR_RANKER: lambda q, documents: ours_ranker.run(query=q, documents=documents)["documents"],
        HEAD_ALONE: lambda q, documents: head.run(query=q, documents=documents)["documents"],
        HAYSTACK_RANKER: lambda q, documents: theirs.run(query=q, documents=documents)["documents"],
    }


def agree(agreement: dict[str, Any], head: list[Any], theirs: list[Any]) -> None:
    """Add one question's candidates to ``agreement``: the largest difference between our logit and the exported
    ranker's score mapped back, and whether both put the candidates in the same order."""
    from dpr_components.export.cross_encoder import logit_from_score

    logits = {document.id: document.score for document in head}
    mapped = {document.id: logit_from_score(document.score) for document in theirs}
    differences = [abs(logits[key] - mapped[key]) for key in logits if key in mapped]
    agreement["max_abs_difference"] = max([agreement["max_abs_difference"], *differences])
    agreement["passages"] += len(differences)
    agreement["questions"] += 1
    agreement["same_order"] += [d.id for d in head] == [d.id for d in theirs]


def first_hit(golds: list[str], documents: list[Any]) -> int | None:
    return first_hit_rank_for(golds, [document.content or "" for document in documents])


def measure_search(
    asked: list[tuple[str, str, list[str]]],
    searches: list[Searches],
    ranking: dict[str, Ranker],
    files: RunFiles,
    checkpoints: Checkpoints,
) -> tuple[dict[str, Any], dict[str, Any]]:
    """Per question every retriever (turns rotating), then every ranker over our hybrid's first candidates:
    first-hit ranks and milliseconds, and the agreement of our head's logits with the exported ranker's scores."""
    state = checkpoints.progress("search") or {
        "done": 0,
        "retrieval": {name: {"ranks": [], "ms": []} for name in RETRIEVERS},
        "reranked": {name: {"ranks": [], "ms": []} for name in (HYBRID_ORDER, *ranking)},
        "agreement": {"max_abs_difference": 0.0, "passages": 0, "questions": 0, "same_order": 0},
    }
    retrieval, reranked, agreement = state["retrieval"], state["reranked"], state["agreement"]
    top_k, names = files.settings.ranker_top_k, list(ranking)
    bar = tqdm(asked, desc="retrieval and re-ranking", unit="question", initial=state["done"])
    for turn, (_, question, golds) in enumerate(asked):
        if turn < state["done"]:
            continue
        found: dict[str, tuple[list[Any], float]] = {}
        for search in rotated(searches, turn):
            found.update(search(question))
        for name in RETRIEVERS:
            documents, seconds = found[name]
            retrieval[name]["ranks"].append(first_hit(golds, documents[:DEPTH]))
            retrieval[name]["ms"].append(round(1000 * seconds, 3))
        candidates = found["ours hybrid"][0][: files.settings.fused_top_k]
        reranked[HYBRID_ORDER]["ranks"].append(first_hit(golds, candidates[:top_k]))
        results = {}
        for name in rotated(names, turn):
            results[name], seconds = timed_call(functools.partial(ranking[name], question, candidates))
            reranked[name]["ranks"].append(first_hit(golds, results[name][:top_k]))
            reranked[name]["ms"].append(round(1000 * seconds, 3))
        agree(agreement, results[HEAD_ALONE], results[HAYSTACK_RANKER])
        state["done"] = turn + 1
        checkpoints.save_progress("search", state, state["done"])
        bar.update()
    bar.close()
    reranking = {"candidates": files.settings.fused_top_k, "top_k": top_k, "systems": reranked, "agreement": agreement}
    return retrieval, reranking


def our_asker(pipeline: Any) -> Callable[[str], list[Any]]:
    answers_from = answer_component(pipeline)
    return lambda q: run_pipeline(pipeline, request_inputs(pipeline, query=q))[answers_from]["answers"]


def haystack_asker(pipeline: Any) -> Callable[[str], list[Any]]:
    pipeline.warm_up()
    return lambda q: pipeline.run(haystack_qa_inputs(pipeline, q))["reader"]["answers"]


def first_answers(answers: list[Any]) -> dict[str, str | None]:
    """The first answer with the no-answer on (None: "no answer") and with it off (the first that is not)."""
    return {
        "on": answers[0].data if answers else None,
        "off": next((answer.data for answer in answers if answer.data is not None), None),
    }


def timed_questions(asked: list[Any], threads: str, latency_limit: int) -> list[Any]:
    """The questions asked on ``threads``: all on the last thread count (exact match and F1 are read there),
    the first ``latency_limit`` on the others, which give milliseconds only."""
    return asked if threads == THREAD_COUNTS[-1] else asked[:latency_limit]


def measure_end_to_end(
    askers: dict[str, Callable[[str], list[Any]]],
    asked: list[tuple[str, str, list[str]]],
    warmup: int,
    checkpoints: Checkpoints,
    latency_limit: int,
) -> dict[str, Any]:
    """Every pipeline asked the questions on each thread count (:func:`timed_questions`), taking turns: seconds,
    and (on the last thread count) exact match and F1 with the no-answer on and off."""
    labels = list(askers)
    state = checkpoints.progress("end_to_end") or {
        "done": {t: 0 for t in THREAD_COUNTS},
        "runs": {
            label: {"em": {"on": [], "off": []}, "f1": {"on": [], "off": []}, "seconds": {t: [] for t in THREAD_COUNTS}}
            for label in labels
        },
    }
    runs = state["runs"]
    for threads in THREAD_COUNTS:
        questions = timed_questions(asked, threads, latency_limit)
        if state["done"][threads] == len(questions):
            continue
        use_threads(int(threads))
        for _, question, _ in asked[:warmup]:
            for label in labels:
                askers[label](question)
        bar = tqdm(questions, desc=f"{threads} thread(s)", unit="question", initial=state["done"][threads])
        for turn, (_, question, golds) in enumerate(questions):
            if turn < state["done"][threads]:
                continue
            for label in rotated(labels, turn):
                answers, seconds = timed_call(functools.partial(askers[label], question))
                runs[label]["seconds"][threads].append(round(seconds, 5))
                if threads == THREAD_COUNTS[-1]:
                    for setting, answer in first_answers(answers).items():
                        for metric, value in scores(answer, golds).items():
                            runs[label][metric][setting].append(value)
            state["done"][threads] = turn + 1
            checkpoints.save_progress("end_to_end", state, turn + 1)
            bar.update()
        bar.close()
    return {"runs": runs}


def checkpoint_settings(args: argparse.Namespace) -> dict[str, Any]:
    """What shapes the numbers: a checkpoint written with other values is not reused."""
    names = ("store", "questions", "limit", "latency_limit", "pipelines", "fusion", "st_backend", "warmup")
    names += ("index_repeats",)
    return {name: getattr(args, name) for name in (*names, "index_threads", "cold_repeats")}


def measure_indexing_from(ours: dict[str, Any], run: Path, work: Path, args: argparse.Namespace) -> dict[str, Any]:
    """Our store's passages written out, then both systems indexing them (:func:`measure_indexing`)."""
    write_passages(ours["qa"].get_component("hybrid").document_store, work / "passages.jsonl")
    return measure_indexing(run, work / "passages.jsonl", work, args.index_repeats, args.index_threads)


def shared_settings(settings: NativeSettings, files: RunFiles) -> dict[str, Any]:
    """What both sides share, for the page."""
    reader, fast = settings.reader, settings.fast_reader
    return {
        "question encoder": settings.question_model,
        "passage encoder": settings.passage_model,
        "candidates per retriever": settings.candidates,
        "documents after the fusion (qa / qa_fast)": f"{settings.fused_top_k} / {settings.fast_fused_top_k}",
        "re-ranker (documents kept, tokens)": f"{settings.ranker_model} ({settings.ranker_top_k}, {settings.ranker_max_length})",
        "reader of qa (answers, tokens, stride)": f"{reader.model} ({reader.top_k}, {reader.max_length}, {reader.stride})",
        "reader of qa_fast": f"{fast.model} ({fast.top_k}, {fast.max_length}, {fast.stride})",
        "Haystack's fusion end to end": files.fusion,
        "Haystack's sentence-transformers back end": files.st_backend,
    }  # fmt: skip


def measure(args: argparse.Namespace) -> dict[str, Any]:
    """The whole run (see the module docstring); the summary without its command."""
    settings = NativeSettings.from_pipelines(args.pipelines)
    asked = asked_questions(args.questions, args.limit)
    if not asked:
        raise SystemExit(f"no question with a short enough answer in {args.questions}")
    ours = {name: load_pipeline(pipeline_path(args.pipelines, name), store=args.store, require_stores=True) for name in ("qa", "qa_fast", "bm25", "dense")}  # fmt: skip
    for pipeline in ours.values():
        pipeline.warm_up()
    with work_folder(args.work) as work:
        log("exporting our models for Haystack's components")
        exports = export_models(settings, work / "exports")
        files = RunFiles(settings, exports, args.store, work / "haystack_store.json", args.pipelines, args.st_backend, args.fusion)  # fmt: skip
        run = files.write(work / "run.json")
        checkpoints = Checkpoints(work, checkpoint_settings(args))
        if not files.haystack_store.exists():
            (work / "phases" / "indexing.json").unlink(missing_ok=True)  # its store is gone: index again
        indexing = checkpoints.phase("indexing", lambda: measure_indexing_from(ours, run, work, args))
        log("reading Haystack's saved store")
        store = load_haystack_store(files.haystack_store)
        use_threads(int(THREAD_COUNTS[-1]))
        searches = [*our_searches(ours), *haystack_searches(files, store)]
        retrieval, reranking = checkpoints.phase(
            "search", lambda: measure_search(asked, searches, rankers(ours, files), files, checkpoints)
        )
        askers = {
            "qa": our_asker(ours["qa"]),
            "qa_fast": our_asker(ours["qa_fast"]),
            "haystack_qa": haystack_asker(haystack_qa(files, store, fast=False, fusion=args.fusion)),
            "haystack_qa_fast": haystack_asker(haystack_qa(files, store, fast=True, fusion=args.fusion)),
        }
        end_to_end = checkpoints.phase(
            "end_to_end", lambda: measure_end_to_end(askers, asked, args.warmup, checkpoints, args.latency_limit)
        )
        cold = checkpoints.phase(
            "cold", lambda: measure_cold(run, asked[0][1], work, args.cold_repeats, int(THREAD_COUNTS[-1]))
        )
    return {
        "questions": args.questions,
        "store": args.store,
        "asked": {path: sum(1 for q in asked if q[0] == path) for path in args.questions.split(",")},
        "shared": shared_settings(settings, files),
        "indexing": indexing,
        "retrieval": retrieval,
        "reranking": reranking,
        "end_to_end": end_to_end,
        "cold": cold,
        "versions": installed_versions(VERSIONS),
        "million_store": million_store(json.loads(SCALE_RESULTS.read_text(encoding="utf-8")))
        if SCALE_RESULTS.is_file()
        else None,
        "under_load": under_load(json.loads(LOAD_RESULTS.with_suffix(".json").read_text(encoding="utf-8")))
        if LOAD_RESULTS.with_suffix(".json").is_file()
        else None,
        "machine": {"cpu": cpu_name(), "cores": os.cpu_count()},
    }


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--store", default="indexes/pool", help="our indexed store; both systems index its passages")
    parser.add_argument("--questions", default=SELECTION, help="comma-separated question files")
    parser.add_argument("--limit", type=int, default=250, help="questions per file")
    parser.add_argument(
        "--pipelines", help="folder with our qa, qa_fast, bm25, dense and index files (default: packaged)"
    )
    parser.add_argument("--fusion", choices=FUSIONS, default=FUSIONS[0], help="Haystack's joiner end to end")
    parser.add_argument("--st-backend", choices=("torch", "onnx", "openvino"), default="torch")
    parser.add_argument(
        "--latency-limit",
        type=int,
        default=100,
        help="questions timed end to end on 1 thread (all are asked on 2, where exact match is read)",
    )
    parser.add_argument("--warmup", type=int, default=5, help="questions asked untimed on each thread count")
    parser.add_argument("--index-repeats", type=int, default=1)
    parser.add_argument("--index-threads", type=int, default=2)
    parser.add_argument("--cold-repeats", type=int, default=3)
    parser.add_argument("--work", type=Path, help="folder for exports and stores (default: a temporary one)")
    parser.add_argument("--out", type=Path, default=REPO_ROOT / "docs" / "benchmarks" / "peers" / "haystack_native")
    parser.add_argument("--from-json", action="store_true", help="render the page again from its JSON")
    return parser


def main(argv: Sequence[str] | None = None) -> None:
    report_main(
        MODULE,
        build_parser(),
        argv,
        measure,
        render,
        at_least_one=("limit", "latency_limit", "index_repeats", "cold_repeats", "index_threads"),
    )


if __name__ == "__main__":
    main()
