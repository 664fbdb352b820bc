"""Small helpers with one job each, used across the package: checks of user text and numbers
(``validation``, ``type_checks``, ``vector_checks``), files (``atomic_files``, ``line_files``, ``input_files``,
``output_files``, ``output_folders``), settings and bounded knobs from the environment (``settings``,
``knobs``), thread counts (``threads``), pipeline graphs (``pipeline_graph``), record ids read once
(``record_ids``), async twins of methods (``worker_threads``), optional JSON records (``json_files``), where
questions and training data come from (``sources``), the similarity vocabulary (``similarity``), the init
parameters a component writes to its pipeline data (``init_parameters``), Haystack's ``device`` on CPU-only
components (``devices``), the optional modules of the package's extras with the one line naming the extra
when one is missing (``extras``) and named fault points for crash tests (``fault_points``)."""
