"""What keeps pipeline files of earlier layouts loading: the old component type paths, each
removed in the release named by ``old_paths.REMOVED_IN``."""
