"""The checks the evaluator components share (``batch_checks``). The components are
``haystack_integrations.components.evaluators.dpr``."""
