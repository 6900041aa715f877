"""Serving the explorer: a werkzeug server we can stop (tests, Ctrl-C), on 127.0.0.1.

Why not ``app.run``: it blocks until the process ends and cannot be shut down from another
thread; ``make_server`` gives a server with ``shutdown()``, and port 0 picks a free port.
Why :func:`bind` apart: the command binds the port before it simulates the starting points,
so a port in use (or a host that is not this machine's) is one clear error at once, not a
werkzeug message and exit 1 after minutes of simulation; the server then takes that socket.
Why :class:`_Quiet`: the page polls the server twice a second per open tab, and werkzeug logs
every request - hundreds of lines a minute that bury anything worth reading.  Requests that
succeed are not logged (with ``-q`` or without: the bar and the page say what happens); the
ones that fail (4xx, 5xx) still are, and an exception's traceback is logged by Flask.
"""

from __future__ import annotations

import errno
import socket
import threading
from typing import Any

from clustersim.errors import InputError

__all__ = ["Served", "bind", "serve", "open_url", "is_local"]


def _quiet_handler() -> type:
    """werkzeug's request handler, logging only the requests that fail (status 400 and up)."""
    from werkzeug.serving import WSGIRequestHandler

    class _Quiet(WSGIRequestHandler):
        def log_request(self, code: int | str = "-", size: int | str = "-") -> None:
            if str(code)[:1] in ("4", "5"):
                super().log_request(code, size)

    return _Quiet


class Served:
    """A running server: ``url``, and ``stop()`` that returns when it has stopped."""

    def __init__(self, server: Any, thread: threading.Thread) -> None:
        self._server = server
        self._thread = thread
        self.url = open_url(server.host, server.port)

    def stop(self) -> None:
        self._server.shutdown()
        self._thread.join(timeout=10)
        self._server.server_close()


def open_url(host: str, port: int) -> str:
    """The address a browser on this machine opens for a server on ``host:port``.

    Why not ``http://HOST:PORT/``: ``0.0.0.0`` and ``::`` (every interface) are addresses to
    listen on, not to open (``http://0.0.0.0:8050/`` fails in some browsers), and an IPv6
    literal needs brackets (``--host ::`` printed ``http://:::8050/``).  So every interface
    is opened at the loopback address of its family, and IPv6 is bracketed."""
    host = host.strip("[]")
    if host in ("", "0", "0.0.0.0"):  # "0" is every interface too
        host = "127.0.0.1"
    elif host == "::":
        host = "::1"
    if ":" in host:
        host = f"[{host.replace('%', '%25')}]"  # a zone id (fe80::1%eth0) escaped
    return f"http://{host}:{port}/"


def is_local(sock: socket.socket) -> bool:
    """Whether a listening socket is reachable from this machine only (bound to a loopback
    address): the explorer runs simulations for whoever opens its page, so listening
    anywhere else is worth a warning."""
    import ipaddress

    addr = str(sock.getsockname()[0]).split("%")[0]
    try:
        ip = ipaddress.ip_address(addr)
    except ValueError:
        return False
    mapped = getattr(ip, "ipv4_mapped", None)  # ::ffff:127.0.0.1
    return ip.is_loopback or bool(mapped and mapped.is_loopback)


def bind(host: str, port: int) -> socket.socket:
    """A socket listening on ``host:port`` (``port=0``: any free port), or an
    :class:`InputError` naming the port (in use, not allowed) or the host."""
    from werkzeug.serving import get_sockaddr, select_address_family

    try:
        family = select_address_family(host, port)
        address = get_sockaddr(host, port, family)
    except (OSError, ValueError, OverflowError) as exc:
        raise InputError(f"--host {host!r}: not an address to listen on ({exc})") from None
    sock = socket.socket(family, socket.SOCK_STREAM)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # as werkzeug's server
        sock.bind(address)
        sock.listen(128)
    except (OSError, OverflowError) as exc:
        sock.close()
        if isinstance(exc, socket.gaierror) or getattr(exc, "errno", 0) == errno.EADDRNOTAVAIL:
            # a name that does not resolve, an address that is not this machine's
            raise InputError(f"--host {host!r}: not an address of this machine "
                             f"({exc.strerror}); give 127.0.0.1 (this machine only) or 0.0.0.0 "
                             "(every interface)") from None
        raise _port_error(host, port, exc) from None
    return sock


def _port_error(host: str, port: int, exc: Exception) -> InputError:
    if getattr(exc, "errno", None) == errno.EADDRINUSE:
        why = "is in use by another program: stop it, or pick another --port"
    else:
        why = f"cannot be listened on ({getattr(exc, 'strerror', None) or exc})"
    return InputError(f"--port {port}: port {port} on {host} {why} (0 to 65535; 0: any free "
                      "port)")


def serve(app: Any, host: str = "127.0.0.1", port: int = 8050,
          sock: socket.socket | None = None) -> Served:
    """Serve a Dash app in a background thread (``port=0``: any free port), on ``sock``
    when given (from :func:`bind`; the server takes a copy, the caller closes its own)."""
    from werkzeug.serving import make_server

    own = sock is None
    if sock is None:
        sock = bind(host, port)
    try:
        server = make_server(host, port, app.server, threaded=True, fd=sock.fileno(),
                             request_handler=_quiet_handler())
    finally:
        if own:
            sock.close()
    thread = threading.Thread(target=server.serve_forever, name="clustersim-explore-http",
                              daemon=True)
    thread.start()
    return Served(server, thread)
