"""What both trainers (:mod:`dpr_components.encoder_training` and
:mod:`dpr_components.reader_training`) share about a run: its folder and log (``run_folder``,
``run_log``), checkpoint files (``checkpoint_files``), random and process state (``rng``,
``process_state``), optimiser and schedule (``optimizer``, ``schedule``), the settings every run has and their checks
(``settings``, ``setting_types``), steps that are not finite (``finite``), the training state
(``state``), the log window (``log_window``), the training loop itself (``loop``), to which each
trainer supplies a task: its steps, log entries, evaluation and checkpoints, and the result of a run
(``result``)."""
