"""The haystack command's start-up: fast help and argument errors, OpenMP's wait policy."""
