"""Names vulture reports as unused that are used where it cannot see (read by vulture, never run)."""

PretrainedConfig  # dpr_components/encoder_training/dpr_layout.py: named in a string, cast("PretrainedConfig", ...)
run_manager  # dpr_components/langchain/retriever.py: a keyword of LangChain's _get_relevant_documents signature
