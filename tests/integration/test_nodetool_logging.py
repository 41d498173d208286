"""nodetool run on a node's classes logs to stderr, never to a file in the user's working directory.

A packaged node's classpath holds its conf directory, whose logback.xml writes to ${cassandra.logdir}:
nodetool started without a configuration of its own wrote `cassandra.logdir_IS_UNDEFINED/system.log`
where the user ran casstrace. Truth: that directory, made by logback itself when the configuration is
left out (the control), and absent with casstrace's command.
"""

from dataclasses import replace
from pathlib import Path

import pytest

from casstrace.node.jvm import find_cassandra
from casstrace.node.tracing import Nodetool, nodetool_for
from casstrace.sandbox.control import Sandbox

pytestmark = pytest.mark.integration

PACKAGED_LOGBACK = """<configuration>
  <appender name="SYSTEMLOG" class="ch.qos.logback.core.FileAppender">
    <file>${cassandra.logdir}/system.log</file>
    <encoder><pattern>%-5level [%thread] %msg%n</pattern></encoder>
  </appender>
  <root level="INFO"><appender-ref ref="SYSTEMLOG"/></root>
</configuration>
"""
UNDEFINED = "cassandra.logdir_IS_UNDEFINED"


def packaged(sandbox: Sandbox, conf: Path):
    """The sandbox's JVM as a packaged node's looks: a conf directory with its logback.xml first on the classpath."""
    conf.mkdir()
    (conf / "logback.xml").write_text(PACKAGED_LOGBACK)
    process = find_cassandra(sandbox.pid())
    argv = list(process.argv)
    at = argv.index("-cp") + 1
    argv[at] = f"{conf}:{argv[at]}"
    return replace(process, argv=tuple(argv))


def test_nodetool_on_a_packaged_nodes_classes_writes_no_log_where_it_runs(sandbox, tmp_path, monkeypatch):
    process = packaged(sandbox, tmp_path / "conf")
    work = tmp_path / "work"
    work.mkdir()
    monkeypatch.chdir(work)
    tool = nodetool_for(process)
    assert "ReleaseVersion" in tool.run("version")
    assert not (work / UNDEFINED).exists()
    # The control: the same command without the tools configuration is what wrote the directory.
    bare = Nodetool(tuple(arg for arg in tool.command if not arg.startswith("-Dlogback.configurationFile=")))
    bare.run("version")
    assert (work / UNDEFINED / "system.log").is_file()
