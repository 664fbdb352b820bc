"""The packaged YAML pipelines run end to end, sync and async."""
