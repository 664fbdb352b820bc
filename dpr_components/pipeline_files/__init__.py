"""Pipeline files read safely, for the command line, the server and the LangChain retriever alike:
bounded YAML (``safe_yaml``), what a file may build (``policy``: components that stay on this machine
unless the network is allowed) and building it with checked parameters, store folders and
overrides (``loading``)."""
