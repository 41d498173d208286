"""The metrics endpoint (node.metrics_endpoint) served on a loopback port, as scrapers misuse it: idle
connections, more of them than it serves, a client gone before the page is sent. The truths: the
process's own thread count, the sockets' ends as the client sees them, and standard error."""

import select
import socket
import struct
import threading
import time
import urllib.request

import pytest

from casstrace.node.metrics_endpoint import IDLE_TIMEOUT_S, MAX_CONNECTIONS, MetricsEndpoint

PAGE = "casstrace_sessions_sampled_total 7\n"


@pytest.fixture
def endpoint():
    served = MetricsEndpoint(0, idle_timeout_s=1.0).start()
    served.publish(PAGE)
    yield served
    served.close()


def scrape(endpoint: MetricsEndpoint) -> str:
    with urllib.request.urlopen(f"http://127.0.0.1:{endpoint.port}/metrics", timeout=5) as answer:
        return answer.read().decode()


def connected(endpoint: MetricsEndpoint) -> socket.socket:
    return socket.create_connection(("127.0.0.1", endpoint.port), timeout=10)


def closed_by_server(client: socket.socket, within_s: float) -> bool:
    """The server closed the connection (end of file, or a reset) within `within_s`."""
    client.settimeout(within_s)
    try:
        return client.recv(1) == b""
    except ConnectionResetError:
        return True
    except TimeoutError:
        return False


def settled(threads: int, within_s: float = 5.0) -> int:
    """The thread count once it comes down to `threads` (or after `within_s`)."""
    deadline = time.monotonic() + within_s
    while threading.active_count() > threads and time.monotonic() < deadline:
        time.sleep(0.02)
    return threading.active_count()


def test_the_bounds_are_a_few_seconds_and_a_few_scrapers():
    assert IDLE_TIMEOUT_S == 5.0 and MAX_CONNECTIONS == 8  # what docs/watch-service.md states


def test_idle_connections_hold_at_most_the_bound_of_threads_and_the_rest_are_closed(endpoint):
    before = threading.active_count()
    idle = []
    try:
        # One at a time: a burst overflows the listen backlog of 5 (a SYN dropped is retried after 1 s).
        for _ in range(MAX_CONNECTIONS + 5):
            idle.append(connected(endpoint))
            time.sleep(0.02)
        time.sleep(0.2)  # every connection accepted: a thread each, or closed
        assert threading.active_count() - before <= MAX_CONNECTIONS
        refused, _, _ = select.select(idle, [], [], 0.2)  # readable: closed (well within the timeout)
        assert len(refused) == 5 and all(closed_by_server(client, 0.1) for client in refused)
        # The served ones are closed once idle for the timeout: their threads end, a scrape is answered.
        held = [client for client in idle if client not in refused]
        assert all(closed_by_server(client, 2.0) for client in held)
        assert settled(before) == before
        assert scrape(endpoint) == PAGE
    finally:
        for client in idle:
            client.close()


def test_an_idle_connection_is_closed_after_the_timeout(endpoint):
    client = connected(endpoint)
    began = time.monotonic()
    try:
        assert not closed_by_server(client, 0.5)  # before the timeout: still open
        assert closed_by_server(client, 3.0)
        assert 1.0 <= time.monotonic() - began < 3.0
    finally:
        client.close()


def test_a_client_gone_before_the_page_leaves_nothing_on_stderr_and_the_next_scrape_is_served(endpoint, capfd):
    large = "".join(f'casstrace_table_read_bytes_total{{table="ks.t{i}"}} {i}\n' for i in range(200_000))
    endpoint.publish(large)  # ~10 MB: more than the socket buffers take, so the send meets the closed end
    before = threading.active_count()
    for _ in range(3):
        client = connected(endpoint)
        client.sendall(b"GET /metrics HTTP/1.1\r\nHost: casstrace\r\n\r\n")
        client.recv(1)  # the answer has begun
        client.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))  # a reset, not a FIN
        client.close()
    assert settled(before) == before
    assert scrape(endpoint) == large
    captured = capfd.readouterr()
    assert captured.err == "" and captured.out == ""
