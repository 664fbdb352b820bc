"""Haystack's own DocumentStore test suite (haystack.testing), sync and async, run against
EmbeddedDocumentStore: in a folder and in memory.

One test class per Haystack test class, named after it, so a result maps back to the suite.
``DPR_CONTRACT_STORE=haystack_in_memory`` runs the same classes against Haystack's
InMemoryDocumentStore instead (the reference ``python -m benchmarks.conformance.haystack_conformance`` compares with)."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from haystack import Document
from haystack.document_stores.errors import DuplicateDocumentError
from haystack.document_stores.in_memory import InMemoryDocumentStore
from haystack.testing import document_store as suite
from haystack.testing import document_store_async as async_suite

from haystack_integrations.document_stores.dpr.document_store import EmbeddedDocumentStore

STORE_ENV = "DPR_CONTRACT_STORE"
REFERENCE_STORE = "haystack_in_memory"
_REFERENCE = os.environ.get(STORE_ENV) == REFERENCE_STORE


@pytest.fixture(params=[REFERENCE_STORE] if _REFERENCE else ["folder", "memory"])
def document_store(request: pytest.FixtureRequest, tmp_path: Path) -> Any:
    """A fresh, empty store for every test."""
    if request.param == REFERENCE_STORE:
        return InMemoryDocumentStore()
    return EmbeddedDocumentStore(path=str(tmp_path / "store") if request.param == "folder" else None)


def _sorted(documents: list[Document]) -> list[Document]:
    return sorted(documents, key=lambda d: d.id)


class Float32Equality(suite.AssertDocumentsEqualMixin):
    """Vectors are stored as float32: equal documents have embeddings equal at float32 precision."""

    @staticmethod
    def assert_documents_are_equal(received: list[Document], expected: list[Document]) -> None:
        assert len(received) == len(expected)
        for got, want in zip(_sorted(received), _sorted(expected), strict=True):
            assert (got.id, got.content, got.meta, got.score) == (want.id, want.content, want.meta, want.score)
            assert (got.blob, got.sparse_embedding) == (want.blob, want.sparse_embedding)
            assert (got.embedding is None) == (want.embedding is None)
            if want.embedding is not None:
                assert np.allclose(got.embedding, want.embedding, rtol=1e-6, atol=0)


# -- the sync suite -------------------------------------------------------------------------
class TestCountDocumentsTest(suite.CountDocumentsTest):
    pass


class TestWriteDocumentsTest(Float32Equality, suite.WriteDocumentsTest):
    def test_write_documents(self, document_store: Any) -> None:
        """Without a policy a duplicate id fails, as with DuplicatePolicy.FAIL."""
        doc = Document(content="test doc")
        assert document_store.write_documents([doc]) == 1
        with pytest.raises(DuplicateDocumentError):
            document_store.write_documents([doc])
        self.assert_documents_are_equal(document_store.filter_documents(), [doc])


class TestDeleteDocumentsTest(suite.DeleteDocumentsTest):
    pass


class TestFilterDocumentsTest(Float32Equality, suite.FilterDocumentsTest):
    pass


class TestDeleteAllTest(suite.DeleteAllTest):
    pass


class TestDeleteByFilterTest(suite.DeleteByFilterTest):
    pass


class TestUpdateByFilterTest(suite.UpdateByFilterTest, suite.FilterableDocsFixtureMixin):
    pass


class TestCountDocumentsByFilterTest(suite.CountDocumentsByFilterTest):
    pass


class TestCountUniqueMetadataByFilterTest(suite.CountUniqueMetadataByFilterTest):
    pass


class TestGetMetadataFieldsInfoTest(suite.GetMetadataFieldsInfoTest):
    pass


class TestGetMetadataFieldMinMaxTest(suite.GetMetadataFieldMinMaxTest):
    pass


class TestGetMetadataFieldUniqueValuesTest(suite.GetMetadataFieldUniqueValuesTest):
    pass


# -- the async suite ------------------------------------------------------------------------
class TestCountDocumentsAsyncTest(async_suite.CountDocumentsAsyncTest):
    pass


class TestWriteDocumentsAsyncTest(Float32Equality, async_suite.WriteDocumentsAsyncTest):
    @pytest.mark.asyncio
    async def test_write_documents_async(self, document_store: Any) -> None:
        """Without a policy a duplicate id fails, as with DuplicatePolicy.FAIL."""
        doc = Document(content="test doc")
        assert await document_store.write_documents_async([doc]) == 1
        with pytest.raises(DuplicateDocumentError):
            await document_store.write_documents_async([doc])
        self.assert_documents_are_equal(await document_store.filter_documents_async(), [doc])


class TestDeleteDocumentsAsyncTest(async_suite.DeleteDocumentsAsyncTest):
    pass


class TestFilterDocumentsAsyncTest(Float32Equality, async_suite.FilterDocumentsAsyncTest):
    pass


class TestDeleteAllAsyncTest(async_suite.DeleteAllAsyncTest):
    pass


class TestDeleteByFilterAsyncTest(async_suite.DeleteByFilterAsyncTest):
    pass


class TestUpdateByFilterAsyncTest(async_suite.UpdateByFilterAsyncTest, suite.FilterableDocsFixtureMixin):
    pass


class TestCountDocumentsByFilterAsyncTest(async_suite.CountDocumentsByFilterAsyncTest):
    pass


class TestCountUniqueMetadataByFilterAsyncTest(async_suite.CountUniqueMetadataByFilterAsyncTest):
    pass


class TestGetMetadataFieldsInfoAsyncTest(async_suite.GetMetadataFieldsInfoAsyncTest):
    pass


class TestGetMetadataFieldMinMaxAsyncTest(async_suite.GetMetadataFieldMinMaxAsyncTest):
    pass


class TestGetMetadataFieldUniqueValuesAsyncTest(async_suite.GetMetadataFieldUniqueValuesAsyncTest):
    pass
