"""File uploads to ``POST /index/run`` (multipart/form-data), in process: indexed through the folder pipeline
over the served store and found at once; the same file again left alone, a changed one replaced; refused by
content, by name and by size; no upload where no pipeline of the store takes files."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml
from starlette.testclient import TestClient

from dpr_components.serving.app import build_app
from dpr_components.serving.security import ServerPolicy
from dpr_components.utils.input_files import INPUT_ROOT_ENV
from tests.helpers.folder_documents import write_broken_pdf, write_docx, write_pdf
from tests.helpers.serving import write_pipelines

pytestmark = pytest.mark.usefixtures("one_thread")

PDF_LINES = ["Quokkas are small marsupials that live on Rottnest Island near Perth."] * 3


def _client(folder: Path, **policy: int) -> TestClient:
    app, _ = build_app(folder, policy=ServerPolicy(**policy))
    return TestClient(app, base_url="http://127.0.0.1:1416", raise_server_exceptions=False)


@pytest.fixture()
def pipelines(
    tmp_path: Path,
    indexed_store: Path,
    tiny_st_dir: Path,
    tiny_reader_dir: Path,
    tiny_bert_dir: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> Path:
    """The packaged index, index_files and bm25 pipelines on the small store with the tiny models."""
    folder, root = tmp_path / "pipelines", tmp_path / "served"
    root.mkdir()
    monkeypatch.setenv(INPUT_ROOT_ENV, str(root))
    write_pipelines(folder, indexed_store, tiny_st_dir, tiny_reader_dir, tiny_bert_dir, tmp_path / "run")
    for path in folder.glob("*.yml"):
        if path.stem not in ("index", "index_files", "bm25"):
            path.unlink()
    return folder


def _upload(client: TestClient, *files: tuple[str, bytes], route: str = "/index/run") -> object:
    return client.post(route, files=[("file", (name, data)) for name, data in files])


def _found(client: TestClient, query: str, path: str) -> list[str]:
    filters = {"field": "meta.path", "operator": "==", "value": path}
    found = client.post("/bm25/run", json={"query": query, "filters": filters})
    assert found.status_code == 200, found.text
    return [d["content"] for d in found.json()["result"]["documents"]]


def test_an_uploaded_pdf_is_indexed_and_found_at_once(pipelines: Path, tmp_path: Path) -> None:
    client = _client(pipelines)
    pdf = write_pdf(tmp_path / "quokka.pdf", PDF_LINES).read_bytes()
    docx = write_docx(
        tmp_path / "notes.docx", ["Lighthouses guide ships with a lamp at the top of a tower."]
    ).read_bytes()
    sent = _upload(client, ("quokka.pdf", pdf), ("notes.docx", docx))
    assert sent.status_code == 200, sent.text
    result = sent.json()["result"]
    assert result["documents_written"] >= 2
    assert result["files"] == [
        {"path": "notes.docx", "status": "indexed"},
        {"path": "quokka.pdf", "status": "indexed"},
    ]
    assert any("Rottnest" in text for text in _found(client, "quokka rottnest", "quokka.pdf"))
    again = _upload(client, ("quokka.pdf", pdf), route="/index_files/run").json()["result"]
    assert again == {"documents_written": 0, "files": [{"path": "quokka.pdf", "status": "unchanged"}]}
    changed = write_pdf(tmp_path / "changed.pdf", ["Wombats dig burrows with strong claws in Tasmania."] * 3)
    replaced = _upload(client, ("quokka.pdf", changed.read_bytes())).json()["result"]
    assert replaced["files"][0]["status"] == "indexed"
    texts = _found(client, "wombats quokka", "quokka.pdf")
    assert texts and all("Wombats" in t and "Rottnest" not in t for t in texts)
    assert any("Lighthouses" in t for t in _found(client, "lighthouses", "notes.docx"))  # the other file is kept


def test_files_are_refused_by_content_by_name_and_by_size(pipelines: Path, tmp_path: Path) -> None:
    client = _client(pipelines, max_upload_bytes=64 * 1024)
    broken = write_broken_pdf(tmp_path / "broken.pdf").read_bytes()
    cases = {
        "broken": (("broken.pdf", broken),),
        "binary": (("photo.txt", b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR"),),
        "kind": (("tool.exe", b"MZ\x90\x00"),),
        "folder": (("../../etc/passwd.txt", b"root"),),
        "twice": (("a.txt", b"one words here"), ("a.txt", b"two words here")),
    }
    for case, files in cases.items():
        refused = _upload(client, *files)
        detail = refused.json()["detail"]
        assert refused.status_code == 400 and detail.startswith("nothing was indexed: "), (case, refused.text)
        assert "\n" not in detail and "Traceback" not in detail, case
    assert "not of a kind indexed (.exe" in _upload(client, *cases["kind"]).json()["detail"]
    assert "sent more than once" in _upload(client, *cases["twice"]).json()["detail"]
    mixed = _upload(client, ("ok.md", b"# Otters\n\nSea otters hold hands while they sleep."), *cases["broken"])
    assert mixed.status_code == 200, mixed.text
    assert [(f["path"], f["status"]) for f in mixed.json()["result"]["files"]] == [
        ("broken.pdf", "skipped"),
        ("ok.md", "indexed"),
    ]
    large = _upload(client, ("big.txt", b"word " * 20_000))
    assert large.status_code == 413 and "--max-upload-bytes" in large.json()["detail"]
    empty = client.post("/index/run", files=[("other", ("a.txt", b"some words"))])
    assert empty.status_code == 400 and "named 'file'" in empty.json()["detail"]
    as_json = client.post("/index/run", json={"records": [{"id": "otter", "title": "Otter", "text": "Otters swim."}]})
    assert as_json.status_code == 200 and as_json.json()["result"] == {"documents_written": 1}


def test_no_upload_where_no_pipeline_takes_files(pipelines: Path) -> None:
    (pipelines / "index_files.yml").unlink()
    client = _client(pipelines)
    refused = _upload(client, ("a.txt", b"some words to index"))
    assert refused.status_code == 415 and "must be JSON" in refused.json()["detail"]
    bm25 = client.post("/bm25/run", files=[("file", ("a.txt", b"x"))])
    assert bm25.status_code == 415 and "a file upload" not in bm25.json()["detail"]


def test_uploads_go_only_to_the_files_pipeline_of_the_same_store(pipelines: Path, tmp_path: Path) -> None:
    spec = yaml.safe_load((pipelines / "index_files.yml").read_text(encoding="utf-8"))
    for name in ("sync", "writer"):
        spec["components"][name]["init_parameters"]["document_store"]["init_parameters"]["path"] = str(tmp_path / "x")
    (pipelines / "index_files.yml").write_text(yaml.safe_dump(spec, sort_keys=False), encoding="utf-8")
    client = _client(pipelines)
    assert _upload(client, ("a.txt", b"some words to index")).status_code == 415
    assert _upload(client, ("a.txt", b"some words to index"), route="/index_files/run").status_code == 200


def test_a_training_pipeline_is_off_before_its_store_is_looked_at(pipelines: Path, tmp_path: Path) -> None:
    """adapt.yml over a store folder that does not exist, training off: its route says training is off (403),
    not that the store is missing."""
    from tests.helpers.paths import PIPELINES

    spec = yaml.safe_load((PIPELINES / "adapt.yml").read_text(encoding="utf-8"))
    spec["components"]["adapter"]["init_parameters"]["document_store"]["init_parameters"]["path"] = str(tmp_path / "no")
    (pipelines / "adapt.yml").write_text(yaml.safe_dump(spec, sort_keys=False), encoding="utf-8")
    client = _client(pipelines)
    refused = client.post("/adapt/run", json={})
    assert refused.status_code == 403 and "--enable-training" in refused.json()["detail"], refused.text
