"""The one rule for a client's socket (traces.addresses.ClientSockets), on real connections as the
kernel lists them (/proc/net/tcp), the truth being each socket's own ends: every client's on the
native port, one client's by its ends, never a connection on another port (between nodes); and the
analyses' reading of it from a trace's socket rows (amplification.SocketWrites)."""

import os
import socket

from casstrace.analyses.amplification import SocketWrites
from casstrace.probes.proc.proc_fds import tcp_sockets
from casstrace.traces.addresses import ClientSockets, parse_address


def test_the_rule_on_the_kernel_s_sockets():
    with socket.create_server(("127.0.0.1", 0)) as native, socket.create_server(("127.0.0.1", 0)) as storage:
        port = native.getsockname()[1]
        ours, theirs = socket.create_connection(("127.0.0.1", port)), socket.create_connection(("127.0.0.1", port))
        peer = socket.create_connection(storage.getsockname())
        accepted = [native.accept()[0] for _ in range(2)] + [storage.accept()[0]]
        try:
            listed = {
                (parse_address(local), parse_address(remote)) for local, remote in tcp_sockets(os.getpid()).values()
            }
            accepted_ends = {(conn.getsockname(), conn.getpeername()) for conn in accepted}
            assert accepted_ends <= listed
            every_client = ClientSockets.of(port)
            assert {ends for ends in accepted_ends if every_client.holds(*ends)} == {
                (conn.getsockname(), conn.getpeername()) for conn in accepted[:2]
            }
            # one client's: given its ends in the trace's spelling ('ip:port', an IPv4-mapped address too)
            ours_only = ClientSockets.of(port, [f"[::ffff:127.0.0.1]:{ours.getsockname()[1]}"])
            assert {ends for ends in listed if ours_only.holds(*ends)} == {((native.getsockname()), ours.getsockname())}
            # the client's own end of the same connection is not the node's socket of it
            assert not every_client.holds(ours.getsockname(), ours.getpeername())
            assert not ours_only.holds(peer.getsockname(), peer.getpeername())
        finally:
            for conn in (ours, theirs, peer, *accepted):
                conn.close()


def test_a_socket_whose_node_end_was_not_recorded_is_judged_by_its_remote_end():
    client = ("10.0.0.7", 51234)
    assert ClientSockets.of(9042, [client]).holds(None, client)
    assert not ClientSockets.of(9042, [client]).holds(None, ("10.0.0.7", 51235))
    assert not ClientSockets.of(9042).holds(None, client)  # every client's: only the node's port says


def test_the_analyses_read_the_trace_s_socket_rows_by_it():
    every_client = ClientSockets.of(9042)
    to_client = SocketWrites(1, ["127.0.0.1", "9042"], ["127.0.0.9", "50000"], written=100)
    to_peer = SocketWrites(1, ["127.0.0.1", "7000"], ["127.0.0.2", "50001"], written=200)
    ipv6 = SocketWrites(1, ["::1", "9042"], ["::1", "50002"], written=300)
    unnamed = SocketWrites(1, [""], [""], written=400)
    assert [s.written for s in (to_client, to_peer, ipv6, unnamed) if s.is_one_of(every_client)] == [100, 300]
    assert ipv6.remote_end == ("::1", 50002)
