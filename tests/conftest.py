"""Every test gets its own what-if point cache (``CLUSTERSIM_CACHE_DIR``, inherited by the
commands tests start): no test reads points another test, or the user, simulated, and none
writes to the real cache folder."""

import re

import pytest


@pytest.fixture(autouse=True)
def _own_point_cache(monkeypatch, tmp_path_factory, request):
    name = re.sub(r"[^A-Za-z0-9_.-]+", "_", request.node.nodeid)[-120:]
    monkeypatch.setenv("CLUSTERSIM_CACHE_DIR", str(tmp_path_factory.getbasetemp() / "cache"
                                                   / name))
