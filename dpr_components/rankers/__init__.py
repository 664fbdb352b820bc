"""The engines of the ranker components: the λ fit of the hybrid (``hybrid_fit``). The components are
``haystack_integrations.components.rankers.dpr``."""
