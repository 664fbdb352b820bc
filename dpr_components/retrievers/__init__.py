"""What the retriever components share (``question_retrievers``). The components are
``haystack_integrations.components.retrievers.dpr``."""
