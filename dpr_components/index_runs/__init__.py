"""Indexing runs above the components: each loads an indexing pipeline and feeds it a corpus file.

``streamed_run`` is ``haystack run index`` on a corpus file a chunk at a time; the sharded run splits the
corpus (``corpus_split``), encodes one shard a process (``shard_spec``: which shard, ``shard_run``, ``shard_files``:
its folder) or one shard a Ray task (``ray_sharding``), and merges the shards into one store after checking them
all (``shard_check``, ``shard_merge``, ``shard_target``: where the merge writes)."""
