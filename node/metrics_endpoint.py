"""The HTTP endpoint of `watch --metrics-port`: GET /metrics answers the latest page it was given.

A stdlib HTTP server on a thread of its own (daemon: it never holds the watch's way out). It binds
when made, so a port in use fails before anything changes on the node; it serves what publish()
gave last, so a scrape never waits for the watch's figures."""

import http.server
import threading

from casstrace.errors import CasstraceError

DEFAULT_ADDRESS = "127.0.0.1"  # the node's own machine only, unless --metrics-address says otherwise


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

        try:
            self.server = http.server.ThreadingHTTPServer((address, port), Handler)
        except OSError as error:
            raise CasstraceError(
                f"cannot serve metrics on {address}:{port}: {error.strerror}",
                "give another --metrics-port (or --metrics-address)",
            ) from None
        self.server.daemon_threads = True
        self.thread = threading.Thread(target=self.server.serve_forever, name="casstrace-metrics", daemon=True)

    @property
    def port(self) -> int:
        return int(self.server.server_address[1])

    def start(self) -> "MetricsEndpoint":
        self.thread.start()
        return self

    def publish(self, page: str) -> None:
        self._page = page.encode()  # one reference swap: a scrape reads the old page or the new one

    def close(self) -> None:
        if self.thread.is_alive():
            self.server.shutdown()
        self.server.server_close()
