"""Connecting to a Cassandra node the way cqlsh does.

Settings come, highest first, from the command line (host, port, username, --ssl: never a password),
environment variables, and the cqlsh configuration file (~/.cassandra/cqlshrc by default):
  host, port   CQLSH_HOST, CQLSH_PORT; cqlshrc [connection] hostname, port. Default 127.0.0.1:9042.
  credentials  CASSTRACE_USERNAME, CASSTRACE_PASSWORD; the credentials file named by cqlshrc
               [authentication] credentials (default ~/.cassandra/credentials, section
               [PlainTextAuthProvider]); cqlshrc [authentication] username, password.
  TLS          --ssl or cqlshrc [connection] ssl = true; certificate SSL_CERTFILE or cqlshrc
               [certfiles] <host> or [ssl] certfile; SSL_VALIDATE or [ssl] validate (default true);
               client certificate [ssl] usercert, userkey.
The session talks to that one node only: it is the node whose JVM is traced, so it must coordinate.
"""

import ast
import configparser
import os
import socket
import ssl
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Self

from cassandra import ConsistencyLevel, OperationTimedOut
from cassandra.auth import PlainTextAuthProvider
from cassandra.cluster import EXEC_PROFILE_DEFAULT, Cluster, ExecutionProfile, NoHostAvailable, Session
from cassandra.policies import WhiteListRoundRobinPolicy
from cassandra.protocol import _ProtocolHandler

from casstrace.errors import CasstraceError, not_utf8
from casstrace.node.jvm import listening_address
from casstrace.node.segments import LinearSegmentsConnection
from casstrace.traces.addresses import normalize_ip

DEFAULT_HOST = "127.0.0.1"
DEFAULT_PORT = 9042


@dataclass(frozen=True)
class TlsSettings:
    certfile: str | None = None
    validate: bool = True
    usercert: str | None = None
    userkey: str | None = None

    def context(self, host: str) -> ssl.SSLContext:
        context = ssl.create_default_context(cafile=self.certfile) if self.certfile else ssl.create_default_context()
        if not self.validate:
            context.check_hostname = False
            context.verify_mode = ssl.CERT_NONE
        if self.usercert:
            context.load_cert_chain(self.usercert, self.userkey)
        return context


@dataclass(frozen=True)
class ConnectionSettings:
    host: str = DEFAULT_HOST
    port: int = DEFAULT_PORT
    username: str | None = None
    # repr=False: settings get logged and shown in tracebacks; the password must not be.
    password: str | None = field(default=None, repr=False)
    tls: TlsSettings | None = None
    connect_timeout: float = 5.0
    request_timeout: float = 60.0


def default_cqlshrc() -> Path:
    return Path.home() / ".cassandra" / "cqlshrc"


def _read_ini(path: Path) -> configparser.ConfigParser:
    # Interpolation off: passwords may hold '%'.
    parser = configparser.ConfigParser(interpolation=None)
    if path.is_file():
        try:
            parser.read(path, encoding="utf-8")
        except (configparser.Error, UnicodeDecodeError) as error:
            raise CasstraceError(f"cannot parse {path}: {_ini_error(error)}", f"fix or move {path}") from None
    return parser


def _ini_error(error: configparser.Error | UnicodeDecodeError) -> str:
    """What is wrong with the file, on one line (configparser's own messages take several)."""
    if isinstance(error, UnicodeDecodeError):
        return not_utf8(error)
    if isinstance(error, configparser.MissingSectionHeaderError):
        return f"line {error.lineno}, {error.line.strip()!r}, comes before any [section] header"
    if isinstance(error, configparser.ParsingError):
        # Python 3.11 keeps each line as its repr
        return "; ".join(
            f"line {lineno}, {_unrepr(line).strip()!r}, is not KEY = VALUE" for lineno, line in error.errors
        )
    return " ".join(str(error).split())


def _unrepr(line: str) -> str:
    return str(ast.literal_eval(line)) if line[:1] in ("'", '"') else line


def _first(*values: str | int | None) -> str | None:
    return next((str(value) for value in values if value not in (None, "")), None)


def _as_bool(value: str) -> bool:
    return value.strip().lower() in ("1", "true", "yes", "on")


def _credentials_path(rc: configparser.ConfigParser) -> Path:
    return Path(os.path.expanduser(rc.get("authentication", "credentials", fallback="") or "~/.cassandra/credentials"))


def configuration_files(cqlshrc: Path | None) -> list[Path]:
    """The files resolve_settings reads: the commands that connect never write over them."""
    rc_path = Path(cqlshrc) if cqlshrc else default_cqlshrc()
    return [rc_path, _credentials_path(_read_ini(rc_path))]


def resolve_settings(
    host: str | None = None,
    port: int | None = None,
    username: str | None = None,
    ssl_enabled: bool = False,
    cqlshrc: Path | None = None,
    connect_timeout: float = 5.0,
    request_timeout: float = 60.0,
    environ: Mapping[str, str] = os.environ,
    node_pid: int | None = None,
) -> ConnectionSettings:
    """node_pid: the JVM the command watches, when given (--pid, --container): with no host given,
    the address it listens on at the port (a container's own address), else 127.0.0.1."""
    rc = _read_ini(Path(cqlshrc) if cqlshrc else default_cqlshrc())
    host = _first(host, environ.get("CQLSH_HOST"), rc.get("connection", "hostname", fallback=None))
    port_text = _first(port, environ.get("CQLSH_PORT"), rc.get("connection", "port", fallback=None)) or str(
        DEFAULT_PORT
    )
    try:
        if not port_text.strip().isascii():  # int() takes any script's digits: '١٢' would be port 12
            raise ValueError(port_text)
        port = int(port_text)
    except ValueError:
        raise CasstraceError(f"port {port_text!r} is not a number", "give --port or CQLSH_PORT as a number") from None
    if not 1 <= port <= 65535:
        raise CasstraceError(f"port {port} is not a TCP port", "give --port or CQLSH_PORT between 1 and 65535")
    host = host or (listening_address(node_pid, port) if node_pid is not None else None) or DEFAULT_HOST

    credentials = _read_ini(_credentials_path(rc))
    username = _first(
        username,
        environ.get("CASSTRACE_USERNAME"),
        credentials.get("PlainTextAuthProvider", "username", fallback=None),
        rc.get("authentication", "username", fallback=None),
    )
    password = _first(
        environ.get("CASSTRACE_PASSWORD"),
        credentials.get("PlainTextAuthProvider", "password", fallback=None),
        rc.get("authentication", "password", fallback=None),
    )

    tls = None
    if ssl_enabled or _as_bool(rc.get("connection", "ssl", fallback="false")):

        def rc_path(section: str, key: str) -> str | None:
            value = rc.get(section, key, fallback=None)
            return os.path.expanduser(value) if value else None

        validate = _first(environ.get("SSL_VALIDATE"), rc.get("ssl", "validate", fallback=None)) or "true"
        tls = TlsSettings(
            certfile=_first(
                os.path.expanduser(environ.get("SSL_CERTFILE", "")),
                rc_path("certfiles", host),
                rc_path("ssl", "certfile"),
            ),
            validate=_as_bool(validate),
            usercert=rc_path("ssl", "usercert"),
            userkey=rc_path("ssl", "userkey"),
        )
    return ConnectionSettings(host, port, username, password, tls, connect_timeout, request_timeout)


@contextmanager
def answered_in_time(session: Session, request: str) -> Iterator[None]:
    """Around a request casstrace makes for itself (preparing the query, reading the schema and the
    node's settings): the driver's timeout is a --request-timeout too short for this node, said so."""
    try:
        yield
    except OperationTimedOut:
        timeout = session.get_execution_profile(EXEC_PROFILE_DEFAULT).request_timeout
        raise CasstraceError(
            f"the node did not answer {request} within --request-timeout ({timeout:g} s)",
            "give a longer --request-timeout: it bounds casstrace's own reads of the schema before the query too",
        ) from None


class NodeSession:
    """A driver session bound to one node. Use as a context manager, or call close()."""

    def __init__(
        self,
        settings: ConnectionSettings,
        keyspace: str | None = None,
        protocol_handler: type[_ProtocolHandler] | None = None,
        token_map: bool = False,
    ):
        """token_map: also learn the cluster's nodes and their tokens at connect (casstrace.node.replicas
        asks it where a partition lives); the session still sends every request to the one node."""
        self.settings = settings
        try:
            socket.getaddrinfo(settings.host, settings.port, type=socket.SOCK_STREAM)
        except (socket.gaierror, UnicodeError) as error:
            raise CasstraceError(
                f"cannot resolve the host {settings.host!r} ({getattr(error, 'strerror', error)})",
                "give --host as an IP address, or a name this machine resolves",
            ) from None
        auth = PlainTextAuthProvider(settings.username, settings.password or "") if settings.username else None
        profile = ExecutionProfile(
            load_balancing_policy=WhiteListRoundRobinPolicy([settings.host]),
            consistency_level=ConsistencyLevel.ONE,
            request_timeout=settings.request_timeout,
        )
        self.cluster = Cluster(
            contact_points=[settings.host],
            port=settings.port,
            auth_provider=auth,
            ssl_context=settings.tls.context(settings.host) if settings.tls else None,
            connect_timeout=settings.connect_timeout,
            control_connection_timeout=settings.connect_timeout,
            execution_profiles={EXEC_PROFILE_DEFAULT: profile},
            # The run reads system_schema itself; the driver's own schema and token refreshes would
            # only add reads on the node while it is being traced.
            schema_metadata_enabled=False,
            token_metadata_enabled=token_map,
            # The driver's v5 segment reassembly is quadratic in a page's bytes (node.segments).
            connection_class=LinearSegmentsConnection,
        )
        try:
            self.session = self.cluster.connect()
        except NoHostAvailable as error:
            self.cluster.shutdown()
            raise CasstraceError(
                f"cannot connect to Cassandra at {settings.host}:{settings.port}: {_first_reason(error)}",
                "check --host/--port (or CQLSH_HOST/CQLSH_PORT), that the node is up, "
                "and its credentials and TLS settings",
            ) from None
        except Exception:
            self.cluster.shutdown()
            raise
        if protocol_handler is not None:
            self.session.client_protocol_handler = protocol_handler
        if keyspace:
            self.use_keyspace(keyspace)

    def use_keyspace(self, keyspace: str) -> None:
        try:
            self.session.set_keyspace(keyspace)
        except Exception as error:  # InvalidRequest from the server
            self.close()
            raise CasstraceError(
                f"cannot use keyspace {keyspace!r}: {getattr(error, 'message', None) or error}",
                "check --keyspace (DESCRIBE KEYSPACES in cqlsh lists them)",
            ) from None

    def address(self) -> str:
        """The address of the node the session talks to, as the cluster names it (not a host name)."""
        for pool in self.session.get_pools():
            return normalize_ip(str(pool.host.address))
        return normalize_ip(str(socket.getaddrinfo(self.settings.host, self.settings.port)[0][4][0]))

    def own_addresses(self) -> set[str]:
        """Every address of the node the session talks to: its native one and those system.local gives
        (broadcast, listen, rpc). Its trace events name it by its broadcast address (events.source)."""
        found = {self.address()}
        pool = next(iter(self.session.get_pools()), None)
        try:
            row = self.session.execute(
                "SELECT broadcast_address, listen_address, rpc_address FROM system.local",
                host=pool.host if pool is not None else None,
            ).one()
        except Exception:  # a node that cannot say: its native address names it
            return found
        return found | {normalize_ip(str(address)) for address in row or () if address is not None}

    def client_addresses(self) -> set[tuple[str, int]]:
        """(ip, port) of this client's end of each of its connections to the node: the node's
        sockets to us have these as their remote address."""
        connections = list(self.cluster.control_connection.get_connections())
        for pool in self.session.get_pools():
            connections.extend(pool.get_connections())
        addresses = set()
        for connection in connections:
            sock = getattr(connection, "_socket", None)  # the driver offers no public accessor
            if sock is None:
                continue
            try:
                ip, port = sock.getsockname()[:2]
            except OSError:
                continue
            addresses.add((normalize_ip(ip), port))
        return addresses

    def other_clients_requests(self, own: set[tuple[str, int]]) -> int | None:
        """Requests the node's client connections other than `own` (this client's: client_addresses)
        have made so far, by the node's own count (system_views.clients, Cassandra 4.0+; a virtual
        table, read on the node this session talks to). None where the node cannot say."""
        pool = next(iter(self.session.get_pools()), None)
        try:
            rows = self.session.execute(
                "SELECT address, port, request_count FROM system_views.clients",
                host=pool.host if pool is not None else None,
            )
        except Exception:  # no such table (3.x), no permission on it: not measured, not 0
            return None
        return sum(row.request_count or 0 for row in rows if (normalize_ip(str(row.address)), row.port) not in own)

    def close(self) -> None:
        self.cluster.shutdown()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _first_reason(error: NoHostAvailable) -> str:
    reasons = list(getattr(error, "errors", {}).values())
    if not reasons:
        return str(error)
    reason = reasons[0]
    if isinstance(reason, (socket.timeout, TimeoutError)) or "timed out" in str(reason).lower():
        return "connection timed out"
    return str(reason)
