"""What both trainers (the DPR bi-encoder and the span reader) share about a run: its folder and
log (``run_folder``, ``run_log``), checkpoint files (``checkpoint_files``), random and process
state (``rng``, ``process_state``), optimiser and schedule (``optimizer``, ``schedule``), setting
types (``setting_types``) and steps that are not finite (``finite``)."""
