"""Pipeline files: malformed, oversized or hostile YAML, and components that would reach the network."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.reliability.harness import PIPELINES, assert_clear_error, assert_success, cli

YAML = pytest.mark.reliability(category="yaml", expect="clear error")
NETWORK = pytest.mark.reliability(category="network components", expect="clear error")

BM25_COMPONENT = """
  bm25:
    type: haystack_integrations.components.retrievers.dpr.bm25_retriever.BM25Retriever
    init_parameters:
      top_k: {top_k}
      document_store:
        type: haystack_integrations.document_stores.dpr.document_store.EmbeddedDocumentStore
        init_parameters:
          path: {store}
"""


def _write(tmp_path: Path, text: str, name: str = "pipeline.yml") -> Path:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


def _bm25_pipeline(tmp_path: Path, store: Path, top_k: str = "3", extra: str = "", connections: str = "[]") -> Path:
    return _write(
        tmp_path,
        "components:" + BM25_COMPONENT.format(top_k=top_k, store=store) + extra + f"connections: {connections}\n",
    )


def _alias_bomb(levels: int = 9, width: int = 9) -> str:
    lines = ['l0: &l0 ["lol"]']
    for level in range(1, levels + 1):
        lines.append(f"l{level}: &l{level} [" + ", ".join([f"*l{level - 1}"] * width) + "]")
    lines.append(
        f"components: {{bomb: {{type: haystack_integrations.components.retrievers.dpr.bm25_retriever.BM25Retriever, init_parameters: {{filters: *l{levels}}}}}}}"
    )
    return "\n".join(lines) + "\n"


@YAML
@pytest.mark.timeout(20)
def test_alias_bomb(tmp_path: Path) -> None:
    """A 'billion laughs' pipeline file: nine levels of nine nested aliases in a few hundred bytes"""
    path = _write(tmp_path, _alias_bomb())
    assert path.stat().st_size < 1400
    assert_clear_error(cli("run", path, "-q", "x"), str(path), "aliases expand the document beyond")


@YAML
def test_recursive_alias(tmp_path: Path) -> None:
    """A pipeline file whose alias refers to the list that contains it"""
    path = _write(tmp_path, "components: &loop {x: *loop}\n")
    assert_clear_error(cli("run", path, "-q", "x"), "an alias refers to a structure that contains it")


@YAML
def test_deep_nesting(tmp_path: Path) -> None:
    """A pipeline file nested 500 levels deep"""
    path = _write(tmp_path, "components: " + "[" * 500 + "]" * 500 + "\n")
    assert_clear_error(cli("run", path, "-q", "x"), "nested more than 64 levels deep")


@YAML
def test_oversized_file(tmp_path: Path) -> None:
    """A 2 MB pipeline file"""
    path = _write(tmp_path, "# " + "x" * 2_000_000 + "\ncomponents: {}\n")
    assert_clear_error(cli("run", path, "-q", "x"), "a pipeline file may have at most 1,000,000")


@YAML
def test_directory_as_pipeline(tmp_path: Path) -> None:
    """A directory given as the pipeline file"""
    assert_clear_error(cli("run", tmp_path, "-q", "x"), str(tmp_path), "is a directory")


@YAML
def test_pipeline_not_utf8(tmp_path: Path) -> None:
    """A pipeline file in Latin-1 instead of UTF-8"""
    path = tmp_path / "latin1.yml"
    path.write_bytes("# caf\xe9\ncomponents: {}\n".encode("latin-1"))
    assert_clear_error(cli("run", path, "-q", "x"), str(path), "not UTF-8")


@YAML
def test_empty_pipeline_file(tmp_path: Path) -> None:
    """An empty pipeline file"""
    assert_clear_error(cli("run", _write(tmp_path, ""), "-q", "x"), "the pipeline file is empty")


@YAML
def test_pipeline_is_a_list(tmp_path: Path) -> None:
    """A pipeline file that is a YAML list instead of a mapping"""
    assert_clear_error(
        cli("run", _write(tmp_path, "- bm25\n- dense\n"), "-q", "x"), "needs a 'components' mapping, got list"
    )


@YAML
def test_invalid_yaml_syntax(tmp_path: Path) -> None:
    """A pipeline file with an unclosed bracket"""
    assert_clear_error(cli("run", _write(tmp_path, "components: {bm25: [\n"), "-q", "x"), "not valid YAML")


@YAML
def test_component_without_type(tmp_path: Path) -> None:
    """A component entry without a type"""
    path = _write(tmp_path, "components:\n  bm25:\n    init_parameters: {top_k: 3}\n")
    assert_clear_error(cli("run", path, "-q", "x"), "component 'bm25' needs a 'type'")


@YAML
def test_unknown_component_type(tmp_path: Path, indexed_store: Path) -> None:
    """A component type that names no class"""
    extra = "  other:\n    type: dpr_components.retrievers.NoSuchRetriever\n"
    path = _bm25_pipeline(tmp_path, indexed_store, extra=extra)
    assert_clear_error(cli("run", path, "-q", "x"), "other", "unknown type 'dpr_components.retrievers.NoSuchRetriever'")


@YAML
def test_connection_to_missing_component(tmp_path: Path, indexed_store: Path) -> None:
    """A connection whose receiver names a component the file does not define"""
    path = _bm25_pipeline(
        tmp_path, indexed_store, connections="[{sender: bm25.documents, receiver: ranker.bm25_documents}]"
    )
    assert_clear_error(cli("run", path, "-q", "x"), "connection 1", "names no component 'ranker'")


@YAML
def test_connection_socket_mismatch(tmp_path: Path, indexed_store: Path) -> None:
    """A connection between sockets that do not exist"""
    extra = "  ranker:\n    type: haystack_integrations.components.rankers.dpr.hybrid_ranker.HybridRanker\n    init_parameters: {mode: rrf}\n"
    path = _bm25_pipeline(
        tmp_path, indexed_store, extra=extra, connections="[{sender: bm25.nothing, receiver: ranker.bm25_documents}]"
    )
    assert_clear_error(cli("run", path, "-q", "x"), "cannot connect the components")


@YAML
def test_wrong_typed_yaml_value(tmp_path: Path, indexed_store: Path) -> None:
    """A YAML parameter of the wrong type: top_k: ten"""
    path = _bm25_pipeline(tmp_path, indexed_store, top_k="ten")
    assert_clear_error(cli("run", path, "-q", "x"), str(path), "bm25.top_k: expected an integer, got 'ten'")


@YAML
def test_unknown_parameter_name(tmp_path: Path, indexed_store: Path) -> None:
    """A misspelt parameter name in the YAML (topk for top_k)"""
    path = _write(tmp_path, _bm25_pipeline(tmp_path, indexed_store).read_text().replace("top_k:", "topk:"))
    assert_clear_error(cli("run", path, "-q", "x"), "bm25.topk: BM25Retriever has no parameter 'topk'")


@YAML
def test_component_construction_fails(tmp_path: Path, indexed_store: Path) -> None:
    """A component whose own constructor refuses its parameters (a negative top_k)"""
    path = _bm25_pipeline(tmp_path, indexed_store, top_k="-5")
    assert_clear_error(
        cli("run", path, "-q", "x"), "component 'bm25' (BM25Retriever)", "top_k must be a positive integer"
    )


@pytest.mark.reliability(category="yaml", expect="correct result")
def test_shipped_pipelines_with_store_alias_still_load(indexed_store: Path, tiny_st_dir: Path) -> None:
    """The shipped hybrid search pipeline, with its store folder replaced by --store"""
    result = cli(
        "run",
        PIPELINES / "search.yml",
        "--store",
        indexed_store,
        "--set",
        f"hybrid.model={tiny_st_dir}",
        "--set",
        "hybrid.weight=0.001",
        "-q",
        "who wrote hamlet",
        "--json",
    )
    assert_success(result)
    assert '"hamlet#0"' in result.out


# --- components that may reach the network ----------------------------------------------------

FETCHER = """components:
  fetcher:
    type: haystack.components.fetchers.link_content.LinkContentFetcher
    init_parameters: {timeout: 3}
connections: []
"""

GENERATOR = """components:
  llm:
    type: haystack.components.generators.chat.openai.OpenAIChatGenerator
    init_parameters:
      model: gpt-4o-mini
      api_base_url: http://collector.invalid/v1
      api_key: {type: env_var, env_vars: [HOME], strict: false}
connections: []
"""

SECRET_IN_LOCAL_COMPONENT = """components:
  reader:
    type: haystack_integrations.components.converters.dpr.corpus_reader.CorpusReader
    init_parameters:
      format: {type: env_var, env_vars: [HOME], strict: false}
connections: []
"""


@NETWORK
def test_link_fetcher_refused(tmp_path: Path) -> None:
    """A pipeline with a LinkContentFetcher, which downloads any URL"""
    result = cli("run", _write(tmp_path, FETCHER), "--input", 'urls=["http://collector.invalid/"]')
    assert_clear_error(result, "component 'fetcher'", "LinkContentFetcher", "--allow-network")


@NETWORK
def test_generator_with_api_base_url_refused(tmp_path: Path) -> None:
    """An OpenAI chat generator pointed at another api_base_url, with an environment variable as its key"""
    result = cli("run", _write(tmp_path, GENERATOR), "-q", "x")
    assert_clear_error(result, "component 'llm'", "OpenAIChatGenerator", "--allow-network")


@NETWORK
def test_environment_secret_refused(tmp_path: Path) -> None:
    """An environment-variable Secret inside an otherwise local component's parameters"""
    result = cli("run", _write(tmp_path, SECRET_IN_LOCAL_COMPONENT), "--input", "path=x.jsonl")
    assert_clear_error(result, "reader.format reads a secret from the environment (HOME)", "--allow-network")


@NETWORK
def test_elasticsearch_store_refused(tmp_path: Path) -> None:
    """The shipped Elasticsearch search pipeline without --allow-network"""
    result = cli("run", PIPELINES / "search_elasticsearch.yml", "-q", "who wrote hamlet")
    assert_clear_error(result, "bm25.document_store", "ElasticsearchDocumentStore", "--allow-network")


@NETWORK
def test_remote_store_smuggled_through_set(indexed_store: Path) -> None:
    """A --set that replaces the local store by an Elasticsearch one"""
    store = '{"type": "haystack_integrations.document_stores.elasticsearch.document_store.ElasticsearchDocumentStore", "init_parameters": {}}'
    result = cli("run", PIPELINES / "bm25.yml", "--set", f"bm25.document_store={store}", "-q", "x")
    assert_clear_error(result, "bm25.document_store", "ElasticsearchDocumentStore", "--allow-network")


@pytest.mark.reliability(category="network components", expect="correct result")
@pytest.mark.parametrize("how", ["flag", "environment"])
def test_network_components_build_when_allowed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, how: str) -> None:
    """A trusted pipeline with a fetcher, a generator and an Elasticsearch store, allowed (built only, nothing sent)"""
    from dpr_components.pipeline_files.loading import load_pipeline

    if how == "environment":
        monkeypatch.setenv("DPR_ALLOW_NETWORK", "1")
    allow = how == "flag"
    fetcher = load_pipeline(_write(tmp_path, FETCHER, "fetcher.yml"), allow_network=allow)
    generator = load_pipeline(_write(tmp_path, GENERATOR, "generator.yml"), allow_network=allow)
    search = load_pipeline(PIPELINES / "search_elasticsearch.yml", allow_network=allow)
    assert type(fetcher.get_component("fetcher")).__name__ == "LinkContentFetcher"
    assert generator.get_component("llm").api_base_url == "http://collector.invalid/v1"
    assert type(search.get_component("bm25").document_store).__name__ == "ElasticsearchDocumentStore"
