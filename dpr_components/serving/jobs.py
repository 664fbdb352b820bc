"""Training served as background jobs: ``POST /{name}/run`` answers 202 with a job, ``GET /jobs/{id}`` its status.

Jobs run one at a time, in submission order, in a worker thread; their records live in memory
(a restarted server forgets them; the checkpoints stay in the job's run folder). Each job trains
into a run folder of its own under the trainer's ``output_dir``: the one its request names
(``output``, resumed when it holds the same run) or a new one named after the job."""

from __future__ import annotations

import secrets
import threading
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from haystack import Pipeline

from dpr_components.pipeline_requests.errors import one_line
from dpr_components.serving.models import TrainingJob
from dpr_components.serving.wrappers import DeclaredPipelineWrapper
from dpr_components.utils.input_files import check_input_path
from dpr_components.utils.output_folders import DPR_RUN, check_output_folder
from dpr_components.utils.sources import resolve_data_source

MAX_KEPT_JOBS = 100
OUTPUT_KEY = "output_dir"  # the job's run folder among its inputs


class TrainingJobs:
    """The training jobs of one server."""

    def __init__(self) -> None:
        self._jobs: dict[str, TrainingJob] = {}
        self._lock = threading.Lock()
        self._worker = ThreadPoolExecutor(max_workers=1, thread_name_prefix="training")

    def get(self, job_id: str) -> TrainingJob | None:
        """The job's current record, ``None`` if unknown."""
        with self._lock:
            job = self._jobs.get(job_id)
            return job.model_copy() if job else None

    def _update(self, job_id: str, **changes: Any) -> None:
        with self._lock:
            self._jobs[job_id] = self._jobs[job_id].model_copy(update=changes)

    def submit(
        self, name: str, wrapper: TrainWrapper, inputs: dict[str, Any], job_id: str | None = None
    ) -> TrainingJob:
        """Queue a run of ``wrapper`` with ``inputs``; the job as it starts (``queued``)."""
        job = TrainingJob(id=job_id or secrets.token_hex(8), pipeline=name, status="queued")
        with self._lock:
            finished = [key for key, old in self._jobs.items() if old.status in ("done", "failed")]
            for key in finished[: max(0, len(self._jobs) - MAX_KEPT_JOBS + 1)]:
                del self._jobs[key]
            self._jobs[job.id] = job
        self._worker.submit(self._run, job.id, wrapper, inputs)
        return job

    def _run(self, job_id: str, wrapper: TrainWrapper, inputs: dict[str, Any]) -> None:
        self._update(job_id, status="running")
        try:
            outputs = wrapper.run_job(inputs)
        except Exception as error:  # noqa: BLE001 - the job records why; the server keeps running
            self._update(job_id, status="failed", error=one_line(error))
            return
        self._update(
            job_id,
            status="done",
            checkpoint=outputs.get("checkpoint"),
            question_model=outputs.get("question_model"),
            passage_model=outputs.get("passage_model"),
            metrics=outputs.get("metrics"),
        )

    def shutdown(self) -> None:
        """Stop taking jobs; a running one finishes."""
        self._worker.shutdown(wait=False, cancel_futures=True)


class TrainWrapper(DeclaredPipelineWrapper):
    """A training pipeline: each request becomes a background job."""

    def __init__(self, pipeline: Pipeline, spec: dict[str, Any], name: str, jobs: TrainingJobs) -> None:
        super().__init__(pipeline, spec)
        self.name, self.jobs = name, jobs

    def run_api(
        self, data: str, dev_data: str | None = None, corpus: str | None = None, output: str | None = None
    ) -> TrainingJob:
        """Start training DPR encoders in the background.

        Args:
            data: the training file (DPR format) inside the server's input root
            dev_data: a dev file inside the input root (validation and best-model selection)
            corpus: a corpus file inside the input root (random negatives, validation pool)
            output: name of the job's run folder inside the trainer's output folder (a run there with
                the same settings and data is resumed); default: a new folder named after the job

        Returns:
            the job: poll GET /jobs/{id} for its status and, once done, the checkpoint
        """
        inputs: dict[str, Any] = {"data": data, "dev_data": dev_data, "corpus": corpus}
        for name, value in inputs.items():
            if value is not None:  # refused now, with a 400, rather than as a failed job
                check_input_path(resolve_data_source(value), name)
        job_id = secrets.token_hex(8)
        folder = self.run_folder(output or f"job-{job_id}")
        check_output_folder(folder, DPR_RUN, replace=False, hint="give the job another 'output'")
        return self.jobs.submit(self.name, self, {**inputs, OUTPUT_KEY: str(folder)}, job_id)

    def trainer_name(self) -> str:
        """The name of the pipeline's trainer component (the one taking ``output_dir``)."""
        for name, instance in self.ready().walk():
            if hasattr(instance, "output_dir"):
                return name
        raise ValueError("the training pipeline has no component with an output_dir")

    def run_folder(self, output: str) -> Path:
        """The folder ``output`` names inside the trainer's ``output_dir``; a name leaving it is refused."""
        parts = Path(output).parts
        if not parts or Path(output).is_absolute() or any(part in ("..", ".") for part in parts):
            raise ValueError(f"output {output!r}: give a folder name inside the trainer's output folder")
        trainer = self.ready().get_component(self.trainer_name())
        base = Path(getattr(trainer, "output_dir"))  # noqa: B009 - not an attribute of Component
        return base / Path(*parts)

    def run_job(self, inputs: dict[str, Any]) -> dict[str, Any]:
        """Train with ``inputs`` (their ``OUTPUT_KEY`` the run folder); the declared outputs."""
        values = {name: value for name, value in inputs.items() if name != OUTPUT_KEY}
        folder = {self.trainer_name(): {"output_dir": inputs[OUTPUT_KEY]}}
        return dict(self.run_declared(values, per_component=folder)["outputs"])
