"""A trace never carries credentials: secrets on a command line are redacted, by one function
(casstrace.redaction.redact_command) wherever a command line is stored or printed."""

import shlex
import time

import pytest

from casstrace.redaction import REDACTED, SCANNED_CHARACTERS, redact_command


def test_secret_options_and_classpath_are_redacted(tmp_path):
    keystore = tmp_path / "keystore"
    keystore.touch()  # an existing path is shown: it is no secret
    argv = [
        "/usr/bin/java",
        "-cp",
        "/a/x.jar:/a/y.jar",
        "-Djavax.net.ssl.keyStorePassword=hunter2",
        f"-Djavax.net.ssl.keyStore={keystore}",
        "--password",
        "hunter3",
        "-Xmx1G",
        "org.apache.cassandra.service.CassandraDaemon",
    ]
    assert redact_command(argv) == (
        "/usr/bin/java -cp <classpath: 2 entries> -Djavax.net.ssl.keyStorePassword=<redacted> "
        f"-Djavax.net.ssl.keyStore={keystore} --password <redacted> -Xmx1G "
        "org.apache.cassandra.service.CassandraDaemon"
    )


CASES = [
    # (argv, what is shown)
    (
        ["java", "-Djavax.net.ssl.keyStorePassword=hunter2", "-Xmx1G"],
        "java -Djavax.net.ssl.keyStorePassword=<redacted> -Xmx1G",
    ),
    (["java", "-Dcassandra.jmx.remote.password.file=/etc/pw"], "java -Dcassandra.jmx.remote.password.file=<redacted>"),
    # deny by default: a host name is no more evidently harmless than a password
    (["tool", "--password", "hunter2", "--host", "h"], "tool --password <redacted> --host <redacted>"),
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
        "nodetool -u <redacted> -pw <redacted> -h 127.0.0.1 settraceprobability 0",  # a user name too
    ),
    (["sh", "-c", "nodetool -pw hunter2 status"], "sh -c nodetool -pw <redacted> status"),
    (
        ["env", "DB_PASSWORD=hunter2", "GITHUB_TOKEN=ghp_x", "HOME=/root", "run"],
        "env DB_PASSWORD=<redacted> GITHUB_TOKEN=<redacted> HOME=/root run",
    ),
    # a URL's whole user info: a token is often the user name (https://ghp_TOKEN@github.com)
    (["curl", "https://alice:hunter2@example.com/x"], "curl https://<redacted>@example.com/x"),
    (["psql", "postgresql://bob:pw%40x@db:5432/app"], "psql postgresql://<redacted>@db:5432/app"),
    (["cqlsh", "alice:hunter2@127.0.0.1"], "cqlsh <redacted>@127.0.0.1"),
    (["tool", "--url=https://u:p@h/"], "tool --url=https://<redacted>@h/"),
    # cqlsh -e's statement may set a password (CREATE ROLE r WITH PASSWORD = '...')
    (["sh", "-c", "cqlsh --password hunter2 -e 'SELECT 1'"], "sh -c cqlsh --password <redacted> -e <redacted>"),
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


# Each form a credential takes on a command line: (argv, the secrets, what must still be shown).
FORMS = {
    "separate short option": (["cqlsh", "-u", "alice", "-p", "s3cret"], ["s3cret", "alice"], ["cqlsh", "-u", "-p"]),
    "attached short option": (["mysql", "-ualice", "-ps3cret", "db"], ["s3cret", "alice"], ["mysql", "-u", "-p", "db"]),
    "numeric password": (["sshpass", "-p", "1234", "ssh", "-p2222"], ["1234", "2222"], ["sshpass", "-p", "ssh"]),
    "nodetool -pw": (["nodetool", "-pw", "s3cret", "status"], ["s3cret"], ["nodetool", "-pw", "status"]),
    "long option with =": (["tool", "--secret-file=x1", "--user=alice"], ["x1", "alice"], ["--secret-file=", "--user"]),
    "long option separate": (["tool", "--login", "s3cret", "--password", "-dash"], ["s3cret", "dash"], ["--login"]),
    "user:password option value": (
        ["curl", "--user", "alice:s3cret", "--proxy-user=bob:pw2"],
        ["alice", "s3cret", "bob", "pw2"],
        ["curl", "--user", "--proxy-user="],
    ),
    "-u user:password": (["curl", "-u", "alice:s3cret", "-uTOKEN:"], ["alice", "s3cret", "TOKEN"], ["curl", "-u"]),
    "Authorization header": (
        ["curl", "-H", "Authorization: Bearer abc123", "--header=Proxy-Authorization: Basic 42"],
        ["abc123", "Bearer", "42"],
        ["-H", "Authorization:", "--header=Proxy-Authorization:"],
    ),
    "X-Api-Key header": (
        ["curl", "--header", "X-Api-Key: 12345", "-H", "X-Auth-Token:t0k"],
        ["12345", "t0k"],
        ["--header", "X-Api-Key:", "-H"],
    ),
    "Cookie header": (["curl", "-H", "Cookie: session=abc; id=9", "-b", "sid=xyz"], ["abc", "xyz"], ["Cookie:", "-b"]),
    "header as an argument": (["http", "example.org", "Authorization:Bearer t0k"], ["t0k"], ["http", "example.org"]),
    "environment assignment": (
        ["env", "DB_PASSWORD=1234", "LOGIN=s3cret", "run"],
        ["1234", "s3cret"],
        ["LOGIN=", "run"],
    ),
    "URL user info": (
        ["git", "clone", "https://ghp_t0k@github.com/o/r.git", "https://u:pw2@h/x?api_key=k3y&page=2#access_token=t4"],
        ["ghp_t0k", "pw2", "k3y", "t4"],
        ["git", "clone", "github.com/o/r.git", "@h/x?api_key=", "page=2"],
    ),
    "bare user:password@host": (["cqlsh", "alice:s3cret@10.0.0.1"], ["alice", "s3cret"], ["cqlsh", "@10.0.0.1"]),
    "sh -c script": (
        [
            "sh",
            "-c",
            "mysql -ps3cret db; curl -u alice:pw2 -H 'Authorization: Bearer abc' https://u:pw3@h/ && "
            "TOKEN=t0k nodetool -pw pw4 status | bash -c 'cqlsh -p pw5'",
        ],
        ["s3cret", "alice", "pw2", "abc", "pw3", "t0k", "pw4", "pw5"],
        ["sh -c mysql -p", " db; curl -u ", "-H 'Authorization: ", "TOKEN=", "nodetool -pw", "status | bash -c"],
    ),
    "python -c script": (
        ["python3", "-c", "import os; os.system('curl -u a:pw6 h')"],
        ["pw6"],
        ["python3 -c import os; os.system"],
    ),
}


@pytest.mark.parametrize("argv, secrets, names", FORMS.values(), ids=FORMS.keys())
def test_every_form_of_credential_is_redacted(argv, secrets, names):
    shown = redact_command(argv)
    assert not [secret for secret in secrets if secret in shown], shown
    assert not [name for name in names if name not in shown], shown


def test_harmless_values_are_shown(tmp_path):
    """What a reader of a trace needs: the program, options, numbers, switches, addresses, paths (an
    existing one, or one a command creates in an existing directory); anything else is redacted."""
    (tmp_path / "in.bin").touch()
    argv = [
        "dd", f"if={tmp_path}/in.bin", f"of={tmp_path}/out.bin", "bs=1M", "count=10", "status=none",
        "--host", "127.0.0.1:9042", "--bind=::1", "-n5", "-la", "--dirs", f"{tmp_path}:{tmp_path}/in.bin",
        "--name", "node1", "-Xhello", f"file://{tmp_path}/in.bin",
    ]  # fmt: skip
    assert redact_command(argv) == (
        f"dd if={tmp_path}/in.bin of={tmp_path}/out.bin bs=1M count=10 status=none --host 127.0.0.1:9042 "
        f"--bind=::1 -n5 -la --dirs {tmp_path}:{tmp_path}/in.bin --name <redacted> -X<redacted> "
        f"file://{tmp_path}/in.bin"
    )
    # a path whose directory does not exist, or a new file in /, is not evidently a path
    assert redact_command(["tool", "--out", "/nonexistent-dir/x", "-o", "/hunter2"]) == (
        "tool --out <redacted> -o <redacted>"
    )


def test_a_jvm_command_line_keeps_what_diagnosis_needs(tmp_path):
    conf = tmp_path / "cassandra.yaml"
    conf.touch()
    argv = [
        "/usr/bin/java", "-ea", "-server", "-Xms1G", "-Xmx1G", "-Xss256k", "-XX:+UseG1GC", "-XX:-UseBiasedLocking",
        "-XX:MaxGCPauseMillis=300", f"-Dcassandra.config=file://{conf}", f"-Dcassandra.storagedir={tmp_path}",
        "-Dcassandra.jmx.local.port=7199", "-Djava.rmi.server.hostname=127.0.0.1", "-Dcassandra-foreground=yes",
        "-Dcom.sun.management.jmxremote.password=s3cret", "-Dcluster.name=Prod", "-XX:OnError=kill -9 %p",
        "--add-exports=java.base/jdk.internal.misc=ALL-UNNAMED", "-cp", "/a.jar:/b.jar",
        "org.apache.cassandra.service.CassandraDaemon",
    ]  # fmt: skip
    assert redact_command(argv) == (
        "/usr/bin/java -ea -server -Xms1G -Xmx1G -Xss256k -XX:+UseG1GC -XX:-UseBiasedLocking "
        f"-XX:MaxGCPauseMillis=300 -Dcassandra.config=file://{conf} -Dcassandra.storagedir={tmp_path} "
        "-Dcassandra.jmx.local.port=7199 -Djava.rmi.server.hostname=127.0.0.1 -Dcassandra-foreground=yes "
        "-Dcom.sun.management.jmxremote.password=<redacted> -Dcluster.name=<redacted> -XX:OnError=<redacted> "
        "--add-exports=java.base/jdk.internal.misc=<redacted> -cp <classpath: 2 entries> "
        "org.apache.cassandra.service.CassandraDaemon"
    )


def test_scripts_nested_beyond_the_depth_are_redacted():
    script = "echo a"
    for _ in range(4):
        script = f"sh -c {shlex.quote(script)}"
    assert redact_command(["sh", "-c", script]).count(REDACTED) == 1
    assert "echo" not in redact_command(["sh", "-c", script])


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
