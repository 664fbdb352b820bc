"""LangChain retriever over this package's retrieval: a pipeline file or a retriever component.

Needs ``langchain-core`` (``pip install "dpr-components[langchain]"``); no other module of the
package imports LangChain."""

try:
    import langchain_core  # noqa: F401 - whether it is installed, nothing more
except ImportError as error:  # one line saying what to install
    raise ImportError(
        'dpr_components.langchain needs langchain-core: pip install "dpr-components[langchain]"'
    ) from error

from dpr_components.langchain.retriever import HaystackRetriever

__all__ = ["HaystackRetriever"]
