"""A trace never carries credentials: secrets on a command line are redacted, by one function
(casstrace.redaction.redact_command) wherever a command line is stored or printed."""

import time

import pytest

from casstrace.redaction import REDACTED, SCANNED_CHARACTERS, redact_command


def test_secret_options_and_classpath_are_redacted():
    argv = [
        "/usr/bin/java",
        "-cp",
        "/a/x.jar:/a/y.jar",
        "-Djavax.net.ssl.keyStorePassword=hunter2",
        "-Djavax.net.ssl.keyStore=/etc/cassandra/keystore",
        "--password",
        "hunter3",
        "-Xmx1G",
        "org.apache.cassandra.service.CassandraDaemon",
    ]
    assert redact_command(argv) == (
        "/usr/bin/java -cp <classpath: 2 entries> -Djavax.net.ssl.keyStorePassword=<redacted> "
        "-Djavax.net.ssl.keyStore=/etc/cassandra/keystore --password <redacted> -Xmx1G "
        "org.apache.cassandra.service.CassandraDaemon"
    )


CASES = [
    # (argv, what is shown)
    (
        ["java", "-Djavax.net.ssl.keyStorePassword=hunter2", "-Xmx1G"],
        "java -Djavax.net.ssl.keyStorePassword=<redacted> -Xmx1G",
    ),
    (["java", "-Dcassandra.jmx.remote.password.file=/etc/pw"], "java -Dcassandra.jmx.remote.password.file=<redacted>"),
    (["tool", "--password", "hunter2", "--host", "h"], "tool --password <redacted> --host h"),
    (["tool", "--password", "-starts-with-a-dash"], "tool --password <redacted>"),
    (["tool", "--password=hunter2"], "tool --password=<redacted>"),
    (["tool", "--api-key", "K123", "x"], "tool --api-key <redacted> x"),
    (["tool", "--api_key=K123"], "tool --api_key=<redacted>"),
    (["tool", "--apikey", "K123"], "tool --apikey <redacted>"),
    (["tool", "--token", "T123"], "tool --token <redacted>"),
    (["tool", "--auth-token=T123"], "tool --auth-token=<redacted>"),
    (["tool", "-secret", "S"], "tool -secret <redacted>"),
    (["tool", "--password"], "tool --password"),
    (
        ["nodetool", "-u", "cassandra", "-pw", "hunter2", "-h", "127.0.0.1", "settraceprobability", "0"],
        "nodetool -u cassandra -pw <redacted> -h 127.0.0.1 settraceprobability 0",
    ),
    (["sh", "-c", "nodetool -pw hunter2 status"], "sh -c nodetool -pw <redacted> status"),
    (
        ["env", "DB_PASSWORD=hunter2", "GITHUB_TOKEN=ghp_x", "HOME=/root", "run"],
        "env DB_PASSWORD=<redacted> GITHUB_TOKEN=<redacted> HOME=/root run",
    ),
    (["curl", "https://alice:hunter2@example.com/x"], "curl https://alice:<redacted>@example.com/x"),
    (["psql", "postgresql://bob:pw%40x@db:5432/app"], "psql postgresql://bob:<redacted>@db:5432/app"),
    (["cqlsh", "alice:hunter2@127.0.0.1"], "cqlsh alice:<redacted>@127.0.0.1"),
    (["tool", "--url=https://u:p@h/"], "tool --url=https://u:<redacted>@h/"),
    (["sh", "-c", "cqlsh --password hunter2 -e 'SELECT 1'"], "sh -c cqlsh --password <redacted> -e 'SELECT 1'"),
    (
        ["sh", "-c", "API_TOKEN=abc ./run --password='two words'"],
        "sh -c API_TOKEN=<redacted> ./run --password=<redacted>",
    ),
    (["java", "-cp", "/a/x.jar:/a/y.jar:/a/z.jar", "Main"], "java -cp <classpath: 3 entries> Main"),
    (["java", "-classpath", "", "Main"], "java -classpath <classpath: 0 entries> Main"),
    # nothing secret: shown as given
    (["ls", "-l", "/var/lib/cassandra"], "ls -l /var/lib/cassandra"),
    (
        ["java", "-XX:+UseG1GC", "-Dcassandra.config=file:///etc/c.yaml", "user@host"],
        "java -XX:+UseG1GC -Dcassandra.config=file:///etc/c.yaml user@host",
    ),
    (["git", "clone", "git@github.com:org/repo.git"], "git clone git@github.com:org/repo.git"),
]


@pytest.mark.parametrize("argv, shown", CASES)
def test_redaction_table(argv, shown):
    assert redact_command(argv) == shown


# Words crafted against the old patterns (each took seconds at 8 KB), and plain long words.
CRAFTED = [
    "pass" * 1024,
    "-" + "pw." * 1365,
    "a.a." * 1024,
    "pw='" * 1024,
    "a://x:" + "y" * 4090,
    "x:" * 2048,
    "a=a:" * 1024,
    " --password" * 372,
    "a" * 4096,
]


def _seconds(argv: list[str]) -> float:
    """The least of three timings of redacting `argv` (the least is the one the machine disturbed least)."""
    best = float("inf")
    for _ in range(3):
        began = time.perf_counter()
        redact_command(argv)
        best = min(best, time.perf_counter() - began)
    return best


def test_a_megabyte_of_argv_is_redacted_in_linear_time():
    """1 MB of crafted arguments against 64 KB of them: linear time is 16 times as long, the old
    patterns' was thousands of times (and minutes); 1 MB in one argument is read up to the bound."""
    megabyte = [word for _ in range(256 // len(CRAFTED) + 1) for word in CRAFTED][:256]
    assert sum(map(len, megabyte)) >= 1_000_000
    small, large = _seconds(megabyte[:16]), _seconds(megabyte)
    assert large < 10  # seconds, on a busy machine; a few hundred ms on a quiet one
    assert large < 64 * max(small, 0.001)
    one_word = _seconds(["x", "pw='" * 250_000])
    assert one_word < 1


def test_a_long_argument_is_cut_where_a_token_starts():
    shown = redact_command(["sh", "-c", "echo " + "a" * 5000 + " --password hunter2"])
    assert shown == f"sh -c echo <{5000 + 1 + len('--password hunter2'):,} characters not shown>"
    shown = redact_command(["echo", "https://u:" + "p" * SCANNED_CHARACTERS + "@host"])
    assert "pppp" not in shown and shown.startswith("echo <")  # a secret straddling the bound is not half-shown
    assert redact_command(["tool", "--password" + "x" * 5000, "hunter2"]).endswith(REDACTED)
