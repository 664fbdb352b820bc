"""The encoder side of the embedder components: their shared settings (``encoder_component``). The
components are ``haystack_integrations.components.embedders.dpr``."""
