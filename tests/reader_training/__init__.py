"""Reader training: loss, mining, resuming."""
