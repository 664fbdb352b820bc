"""The LangChain retriever."""
