"""Which connections the node's time is taken on (probes/bcc/node_time.py client_fds): of this process's
own sockets, as the kernel lists them, the accepted ends of the measuring client's connections only."""

import os
import socket

from casstrace.probes.bcc.node_time import client_fds


def test_only_the_measuring_clients_connections_are_timed():
    with socket.create_server(("127.0.0.1", 0)) as server:
        port = server.getsockname()[1]
        ours, theirs = socket.create_connection(("127.0.0.1", port)), socket.create_connection(("127.0.0.1", port))
        accepted = [server.accept()[0] for _ in range(2)]
        try:
            by_client = {conn.getpeername(): conn.fileno() for conn in accepted}
            own = ours.getsockname()
            assert client_fds(os.getpid(), port, {own}) == [by_client[own]]
            # without the client's addresses: every socket on the port (the listener too, where no request is read)
            assert sorted(client_fds(os.getpid(), port)) == sorted([server.fileno(), *by_client.values()])
            assert client_fds(os.getpid(), port, {("127.0.0.1", 9)}) == []  # none is the client's
        finally:
            for conn in (ours, theirs, *accepted):
                conn.close()
