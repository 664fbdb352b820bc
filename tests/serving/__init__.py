"""haystack serve: the HTTP server, its API, page, concurrency and training jobs."""
