"""Every test gets its own what-if point cache (``CLUSTERSIM_CACHE_DIR``, inherited by the
commands tests start): no test reads points another test, or the user, simulated, and none
writes to the real cache folder.  Also a Dask scheduler without workers, for the executor tests
(``scheduler``)."""

import re

import pytest


@pytest.fixture(autouse=True)
def _own_point_cache(monkeypatch, tmp_path_factory, request):
    name = re.sub(r"[^A-Za-z0-9_.-]+", "_", request.node.nodeid)[-120:]
    monkeypatch.setenv("CLUSTERSIM_CACHE_DIR", str(tmp_path_factory.getbasetemp() / "cache"
                                                   / name))


@pytest.fixture
def scheduler():
    """A Dask scheduler on TCP in this process, with no worker (its LocalCluster; the
    address is ``scheduler.scheduler_address``)."""
    distributed = pytest.importorskip("dask.distributed")
    cluster = distributed.LocalCluster(n_workers=0, processes=False, protocol="tcp://",
                                       scheduler_port=0, dashboard_address=":0")
    try:
        yield cluster
    finally:
        cluster.close()
