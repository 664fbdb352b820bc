"""How components reach any document store: a search interface chosen by what the store offers
(``search_backend``), the ``document_store`` parameter to and from a dict (``serialization``),
async calls of sync methods (``async_calls``), filter policies (``filter_settings``) and the settings
the store retrievers share (``store_retriever``). None of it imports the embedded store: a component
on another store never loads FAISS."""
