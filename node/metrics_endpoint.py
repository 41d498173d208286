"""The HTTP endpoint of `watch --metrics-port`: GET /metrics answers the latest page it was given.

A stdlib HTTP server on a thread of its own (daemon: it never holds the watch's way out). It binds
when made, so a port in use fails before anything changes on the node; it serves what publish()
gave last, so a scrape never waits for the watch's figures.

The address is an IPv4 or IPv6 address (`::1`, `::`, also in brackets) or a host name that resolves;
an empty one is refused rather than taken, as the socket layer would, for every interface.

A scraper can never cost the watch more than a few threads or a word on its terminal: each
connection has a thread of its own for at most IDLE_TIMEOUT_S without a byte from the client (each
wait for the request, each send of the page); at most MAX_CONNECTIONS are served at once, and one
more is closed unanswered; a client that goes away mid-response (a scrape timing out) ends its
connection without a traceback."""

import errno
import http.server
import ipaddress
import socket
import threading
from typing import Any

from casstrace.errors import CasstraceError

DEFAULT_ADDRESS = "127.0.0.1"  # the node's own machine only, unless --metrics-address says otherwise
ADDRESS_FIX = "give --metrics-address an address of this machine: 127.0.0.1 or ::1, 0.0.0.0 or :: (every interface)"
EVERY_INTERFACE = ("0.0.0.0", "::")
# Prometheus keeps one connection per target and scrapes every 15 s by default: a few scrapers fit.
MAX_CONNECTIONS = 8
# Seconds a connection may wait on its client (a request not sent, a page not taken) before it is closed.
IDLE_TIMEOUT_S = 5.0


def bind_address(address: str) -> ipaddress.IPv4Address | ipaddress.IPv6Address:
    """The IP address to serve on for --metrics-address's `address`; CasstraceError when there is none."""
    text = address.strip()
    if text.startswith("[") and text.endswith("]"):  # as in a URL
        text = text[1:-1]
    if not text:
        raise CasstraceError("--metrics-address is empty (it would serve on every interface)", ADDRESS_FIX)
    try:
        return ipaddress.ip_address(text)
    except ValueError:
        pass
    try:
        resolved = socket.getaddrinfo(text, None, type=socket.SOCK_STREAM)[0][4][0]
    except (OSError, UnicodeError, ValueError):  # ValueError: a NUL in it
        raise CasstraceError(
            f"--metrics-address {address!r} is neither an IP address nor a host name that resolves", ADDRESS_FIX
        ) from None
    return ipaddress.ip_address(resolved)


def metrics_url(address: ipaddress.IPv4Address | ipaddress.IPv6Address, port: int) -> str:
    host = f"[{address}]" if address.version == 6 else str(address)
    return f"http://{host}:{port}/metrics"


class _BoundedServer(http.server.ThreadingHTTPServer):
    """A thread per connection, MAX_CONNECTIONS at most: one more is closed at once, unanswered."""

    daemon_threads = True  # never holds the watch's way out

    def __init__(self, address: tuple[str, int], handler: type[http.server.BaseHTTPRequestHandler], most: int):
        self.slots = threading.BoundedSemaphore(most)
        super().__init__(address, handler)

    def process_request(self, request: Any, client_address: Any) -> None:
        if not self.slots.acquire(blocking=False):
            self.shutdown_request(request)
            return
        try:
            super().process_request(request, client_address)
        except BaseException:  # no thread started: the slot is not taken
            self.slots.release()
            raise

    def process_request_thread(self, request: Any, client_address: Any) -> None:
        try:
            super().process_request_thread(request, client_address)
        finally:
            self.slots.release()


class MetricsEndpoint:
    def __init__(
        self,
        port: int,
        address: str = DEFAULT_ADDRESS,
        content_type: str = "text/plain",
        *,
        max_connections: int = MAX_CONNECTIONS,
        idle_timeout_s: float = IDLE_TIMEOUT_S,
    ):
        self.content_type = content_type
        self._page = b""
        endpoint = self

        class Handler(http.server.BaseHTTPRequestHandler):
            timeout = idle_timeout_s  # each recv and send on the connection (StreamRequestHandler.setup)

            def handle(self) -> None:
                try:
                    super().handle()
                except (ConnectionError, TimeoutError):  # the scraper went away, or took too long
                    self.close_connection = True

            def do_GET(self) -> None:
                if self.path.split("?", 1)[0] != "/metrics":
                    self.send_error(404, "casstrace serves /metrics")
                    return
                body = endpoint._page
                self.send_response(200)
                self.send_header("Content-Type", endpoint.content_type)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, format: str, *args: object) -> None:
                pass  # a scrape every 15 s is no news for the watch's terminal

        self.address = bind_address(address)

        class Server(_BoundedServer):
            address_family = socket.AF_INET6 if self.address.version == 6 else socket.AF_INET

        try:
            self.server = Server((str(self.address), port), Handler, max_connections)
        except OSError as error:
            in_use = error.errno in (errno.EADDRINUSE, errno.EACCES)
            raise CasstraceError(
                f"cannot serve metrics on {metrics_url(self.address, port)}: {error.strerror}",
                "give another --metrics-port" if in_use else ADDRESS_FIX,
            ) from None
        self.thread = threading.Thread(target=self.server.serve_forever, name="casstrace-metrics", daemon=True)

    @property
    def port(self) -> int:
        return int(self.server.server_address[1])

    def describe(self) -> str:
        """Where Prometheus scrapes it, for the user."""
        every = " (every interface)" if str(self.address) in EVERY_INTERFACE else ""
        return f"{metrics_url(self.address, self.port)}{every}"

    def start(self) -> "MetricsEndpoint":
        self.thread.start()
        return self

    def publish(self, page: str) -> None:
        self._page = page.encode()  # one reference swap: a scrape reads the old page or the new one

    def close(self) -> None:
        if self.thread.is_alive():
            self.server.shutdown()
        self.server.server_close()
