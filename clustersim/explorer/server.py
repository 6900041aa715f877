"""Serving the explorer: a werkzeug server we can stop (tests, Ctrl-C), on 127.0.0.1.

Why not ``app.run``: it blocks until the process ends and cannot be shut down from another
thread; ``make_server`` gives a server with ``shutdown()``, and port 0 picks a free port.
"""

from __future__ import annotations

import threading
from typing import Any

__all__ = ["Served", "serve"]


class Served:
    """A running server: ``url``, and ``stop()`` that returns when it has stopped."""

    def __init__(self, server: Any, thread: threading.Thread) -> None:
        self._server = server
        self._thread = thread
        self.url = f"http://{server.host}:{server.port}/"

    def stop(self) -> None:
        self._server.shutdown()
        self._thread.join(timeout=10)
        self._server.server_close()


def serve(app: Any, host: str = "127.0.0.1", port: int = 8050) -> Served:
    """Serve a Dash app in a background thread (``port=0``: any free port)."""
    from werkzeug.serving import make_server

    server = make_server(host, port, app.server, threaded=True)
    thread = threading.Thread(target=server.serve_forever, name="clustersim-explore-http",
                              daemon=True)
    thread.start()
    return Served(server, thread)
