"""The HTTP endpoint of `watch --metrics-port`: GET /metrics answers the latest page it was given.

A stdlib HTTP server on a thread of its own (daemon: it never holds the watch's way out). It binds
when made, so a port in use fails before anything changes on the node; it serves what publish()
gave last, so a scrape never waits for the watch's figures.

The address is an IPv4 or IPv6 address (`::1`, `::`, also in brackets) or a host name that resolves;
an empty one is refused rather than taken, as the socket layer would, for every interface."""

import errno
import http.server
import ipaddress
import socket
import threading

from casstrace.errors import CasstraceError

DEFAULT_ADDRESS = "127.0.0.1"  # the node's own machine only, unless --metrics-address says otherwise
ADDRESS_FIX = "give --metrics-address an address of this machine: 127.0.0.1 or ::1, 0.0.0.0 or :: (every interface)"
EVERY_INTERFACE = ("0.0.0.0", "::")


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


class MetricsEndpoint:
    def __init__(self, port: int, address: str = DEFAULT_ADDRESS, content_type: str = "text/plain"):
        self.content_type = content_type
        self._page = b""
        endpoint = self

        class Handler(http.server.BaseHTTPRequestHandler):
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

        class Server(http.server.ThreadingHTTPServer):
            address_family = socket.AF_INET6 if self.address.version == 6 else socket.AF_INET

        try:
            self.server = Server((str(self.address), port), Handler)
        except OSError as error:
            in_use = error.errno in (errno.EADDRINUSE, errno.EACCES)
            raise CasstraceError(
                f"cannot serve metrics on {metrics_url(self.address, port)}: {error.strerror}",
                "give another --metrics-port" if in_use else ADDRESS_FIX,
            ) from None
        self.server.daemon_threads = True
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
