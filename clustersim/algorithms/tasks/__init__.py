"""Tasks the convergence emulation trains: what the algorithms' ``ctx.math`` runs on.

* ``teacher_student`` (:mod:`.teacher`): linear regression against a known teacher, losses
  and optimum in closed form;
* ``digits`` (:mod:`.digits`): scikit-learn's 1,797 real handwritten digits, softmax
  regression or a small perceptron, accuracy on a held-out split;
* ``gaussian``: the proxy model's synthetic clusters (:mod:`clustersim.algorithms.proxy`).

:func:`task_math` is the emulation's ``make_math``: one :class:`~.model.TaskModel` per actor,
workers on their own shard and stream, servers (centres, parameter-server weights) without.
"""

from __future__ import annotations

from typing import Any

from clustersim.algorithms.tasks.digits import Digits, GaussianClusters
from clustersim.algorithms.tasks.model import Task, TaskModel
from clustersim.algorithms.tasks.teacher import TeacherStudent

__all__ = ["TASKS", "Task", "TaskModel", "TeacherStudent", "Digits", "GaussianClusters",
           "make_task", "task_math"]

#: task name -> its class (the keyword arguments each takes are its dataclass fields)
TASKS: dict[str, type] = {"teacher_student": TeacherStudent, "digits": Digits,
                          "gaussian": GaussianClusters}


def make_task(name: str, seed: int, **settings: Any) -> Task:
    """The task ``name`` with ``settings`` (``lr``, ``batch``, ``hidden``, ...) and ``seed``."""
    return TASKS[name](seed=seed, **settings)


def task_math(task: Task, job: Any, rank: int, role: str, index: int) -> TaskModel:
    """The math hook of one actor of ``job`` (a :class:`~clustersim.algorithms.base.JobInfo`):
    workers read shard ``index`` of ``job.workers`` from stream ``rank``."""
    if role == "worker":
        return TaskModel(task, shard=index, shards=job.workers, stream=rank,
                         workers=job.workers)
    return TaskModel(task, stream=rank, workers=job.workers)
