"""The inputs of ``haystack run``: ``--input`` and ``--inputs-file`` gathered into one mapping (flat names and
``{component: {name: value}}``, placed by :func:`~dpr_components.pipeline_requests.inputs.request_inputs`)."""

from __future__ import annotations

import argparse
import math
from pathlib import Path
from typing import Any

from dpr_components.pipeline_files.loading import parse_value
from dpr_components.utils.output_files import describe_os_error
from dpr_components.utils.validation import load_json_text


def _set_input(data: dict[str, Any], name: str, value: Any) -> None:
    """``NAME`` goes to every component with that input, ``COMPONENT.NAME`` to one."""
    if "." in name:
        component, socket = name.split(".", 1)
        data.setdefault(component, {})[socket] = value
    else:
        data[name] = value


def _read_inputs_file(path: str) -> dict[str, Any]:
    """The JSON object of pipeline inputs in ``path``."""
    if Path(path).is_dir():
        raise ValueError(f"--inputs-file {path} is a directory, not a JSON file")
    try:
        text = Path(path).read_bytes().decode("utf-8")
    except OSError as error:
        raise ValueError(f"--inputs-file {describe_os_error(error, path)}") from None
    except UnicodeDecodeError as error:
        raise ValueError(f"--inputs-file {path}: not UTF-8 text ({error.reason} at byte {error.start})") from None
    loaded = load_json_text(text, f"--inputs-file {path}", line_numbers=True)
    if not isinstance(loaded, dict):
        raise ValueError(f"--inputs-file {path}: expected a JSON object of inputs, got {type(loaded).__name__}")
    return loaded


def base_inputs(args: argparse.Namespace) -> dict[str, Any]:
    """The inputs given by ``--inputs-file`` and ``--input``."""
    data: dict[str, Any] = {}
    if args.inputs_file:
        data.update(_read_inputs_file(args.inputs_file))
    for item in args.input:
        if "=" not in item:
            raise ValueError(f"--input expects NAME=VALUE, got {item!r}")
        name, raw = item.split("=", 1)
        _set_input(data, name, parse_value(raw, f"--input {name}"))
    if getattr(args, "keep_removed", False):
        data["keep_removed"] = True
    return {**data, **_run_folder_inputs(args)}


def _run_folder_inputs(args: argparse.Namespace) -> dict[str, Any]:
    """The inputs ``--out``, ``--max-minutes`` and ``--max-passages`` give (those given)."""
    data: dict[str, Any] = {}
    if getattr(args, "out", None):
        data["output_dir"] = args.out
    minutes = getattr(args, "max_minutes", None)
    if minutes is not None:
        if not math.isfinite(minutes) or minutes <= 0:
            raise ValueError(f"--max-minutes must be a positive number of minutes, got {minutes}")
        data["max_minutes"] = minutes
    if getattr(args, "max_passages", None) is not None:
        data["max_passages"] = args.max_passages
    return data


def merge_inputs(base: dict[str, Any], extra: dict[str, Any]) -> dict[str, Any]:
    """``base`` updated by ``extra``, per component for nested inputs."""
    merged = {k: (dict(v) if isinstance(v, dict) else v) for k, v in base.items()}
    for key, value in extra.items():
        if isinstance(value, dict) and isinstance(merged.get(key), dict):
            merged[key].update(value)
        else:
            merged[key] = value
    return merged
