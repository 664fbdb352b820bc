"""What keeps pipeline files of earlier layouts loading: the old component type paths, each
removed in the release named by ``type_paths.REMOVED_IN``."""
