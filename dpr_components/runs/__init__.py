"""What both trainers (the DPR bi-encoder and the span reader) share about a run: its folder and
log (``run_folder``, ``run_log``), checkpoint files (``checkpoint_files``), random and process
state (``rng``, ``process_state``), optimiser and schedule (``optimizer``, ``schedule``), setting
types (``setting_types``), steps that are not finite (``finite``) and the training loop itself
(``loop``), to which each trainer supplies its steps, evaluation and checkpoints."""
