"""One request path through the command line, HTTP and LangChain."""
