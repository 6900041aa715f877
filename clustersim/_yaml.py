"""The YAML loader every reader of the project's YAML uses.

libyaml's parser (``yaml.CSafeLoader``) where PyYAML was built with it - every PyYAML wheel on
PyPI is - and the pure-Python ``yaml.SafeLoader`` otherwise: the same safe types, nodes, marks
(lines) and error classes, several times faster on the catalog, scenario and topology files
that every command reads at start-up.
"""

from __future__ import annotations

from typing import Any

import yaml

__all__ = ["SafeLoader", "safe_load"]

SafeLoader: type = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


def safe_load(text: str) -> Any:
    """``yaml.safe_load`` with :data:`SafeLoader`."""
    return yaml.load(text, Loader=SafeLoader)  # noqa: S506 - a safe loader
