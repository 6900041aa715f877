"""``run.convergence`` and ``run.emulation``: how a prediction turns time into accuracy.

``run.convergence`` chooses the convergence layer: ``emulate`` trains a small real task with
each algorithm's own arithmetic in simulated-time order (:mod:`clustersim.sim.emulate`),
``analytic`` uses the fitted convergence model, ``off`` predicts time only, and ``auto`` (the
default) is ``analytic`` where a profile exists.  ``run.emulation`` holds the emulation's
settings, all optional::

    run:
      convergence: emulate
      emulation: {task: digits, target: 0.9, eval_every: "0.5 s", max_time: "600 s",
                  max_iterations: 5000, lr: 0.1, batch: 32, hidden: 32}

Kept in a module of its own so that the schema's ``run:`` parser stays a few lines.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

from clustersim.errors import InputError
from clustersim.scenario.fields import Section, as_choice, as_float, as_int, as_time

__all__ = ["CONVERGENCE_MODES", "check_convergence", "EMULATION_TASKS", "EmulationSpec", "parse_emulation"]

CONVERGENCE_MODES = ("auto", "emulate", "analytic", "off")
EMULATION_TASKS = ("digits", "teacher_student", "gaussian")

#: the metric each task's target is on, and its default target (higher is better for all)
DEFAULT_TARGETS = {"digits": 0.9, "teacher_student": 0.99, "gaussian": 0.8}

#: settings passed to the task (clustersim.algorithms.tasks), with the tasks that take them
_TASK_FIELDS = {"lr": EMULATION_TASKS, "batch": EMULATION_TASKS,
                "momentum": EMULATION_TASKS, "hidden": ("digits", "gaussian"),
                "features": ("teacher_student",), "noise": ("teacher_student",)}


@dataclass(frozen=True)
class EmulationSpec:
    """Validated ``run.emulation``.

    ``target``: the task's metric to reach (accuracy for digits and gaussian, the fraction of
    the teacher's signal learned for teacher_student).  ``eval_every`` (simulated seconds)
    and ``eval_updates`` (updates of the reference model) say when the curve is sampled; at
    least one is on.  The run stops at the target, at ``max_time`` simulated seconds, or when
    the workers have done ``max_iterations`` iterations each.  ``task_settings`` go to the
    task (``lr``, ``batch``, ``momentum``, ``hidden``, ``features``, ``noise``).
    """

    task: str = "digits"
    target: float = 0.9
    eval_every: float | None = None
    eval_updates: int = 10
    max_time: float = math.inf
    max_iterations: int = 2000
    task_settings: dict[str, Any] = field(default_factory=dict)


def parse_emulation(raw: Any, path: tuple = ("run", "emulation")) -> EmulationSpec:
    """Read ``run.emulation``; every error names the field and what is allowed."""
    s = Section(raw, path, ("task", "target", "eval_every", "eval_updates", "max_time",
                            "max_iterations", *_TASK_FIELDS))
    task = s.get("task", as_choice, "digits", choices=EMULATION_TASKS, kind="emulation task")
    for key, tasks in _TASK_FIELDS.items():
        if s.has(key) and task not in tasks:
            raise InputError(f"{key} applies to the {' and '.join(tasks)} task"
                             f"{'s' if len(tasks) > 1 else ''} only, not to {task}",
                             path=(*path, key))
    settings: dict[str, Any] = {}
    if s.has("lr"):
        settings["lr"] = s.get("lr", as_float, positive=True)
    if s.has("batch"):
        settings["batch"] = s.get("batch", as_int, minimum=0 if task == "teacher_student"
                                  else 1)
    if s.has("momentum"):
        settings["momentum"] = s.get("momentum", as_float, minimum=0.0, maximum=0.999)
    if s.has("hidden"):
        settings["hidden"] = s.get("hidden", as_int, minimum=0, maximum=4096)
    if s.has("features"):
        settings["features"] = s.get("features", as_int, minimum=1, maximum=1_000_000)
    if s.has("noise"):
        settings["noise"] = s.get("noise", as_float, minimum=0.0)
    eval_every = s.get("eval_every", as_time, None)
    if eval_every is not None and not eval_every > 0:
        raise InputError(f"must be a positive time, not {eval_every}", path=(*path, "eval_every"))
    eval_updates = s.get("eval_updates", as_int, 0 if eval_every is not None else 10, minimum=0)
    if eval_every is None and eval_updates == 0:
        raise InputError("the curve needs a sampling rule: give eval_every (a simulated time) "
                         "or eval_updates >= 1", path=(*path, "eval_updates"))
    max_time = s.get("max_time", as_time, math.inf)
    if not max_time > 0:
        raise InputError(f"must be a positive time, not {max_time}", path=(*path, "max_time"))
    return EmulationSpec(
        task=task,
        target=s.get("target", as_float, DEFAULT_TARGETS[task], minimum=0.0, maximum=1.0),
        eval_every=eval_every,
        eval_updates=eval_updates,
        max_time=max_time,
        max_iterations=s.get("max_iterations", as_int, 2000, minimum=1),
        task_settings=settings,
    )


def check_convergence(mode: str, workload: Any) -> None:
    """``run.convergence: analytic`` needs a profile: the model's shipped one or the scenario's
    ``workload.convergence`` (``auto`` quietly predicts time only without one)."""
    if mode == "analytic" and workload is not None and workload.convergence is None:
        from clustersim.convergence.profile import REQUIRED_HINT

        raise InputError(f"'analytic' needs a convergence profile and model "
                         f"{workload.model.name!r} has none shipped (or it is off): give "
                         f"workload.convergence with {REQUIRED_HINT}",
                         path=("run", "convergence"))
