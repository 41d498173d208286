"""A node's JVM that went away (casstrace.node.gone): whether it has, and its log's last word, with
real processes (a `sleep` stands for the JVM) and log files written as Cassandra writes them."""

import subprocess

from casstrace.errors import CasstraceError
from casstrace.ledger import TRACE_PROBABILITY, Ledger, process_start
from casstrace.node.gone import LOG_TAIL_BYTES, MAX_LINE_CHARS, gone_message, last_word, node_gone
from casstrace.node.jvm import CassandraProcess
from casstrace.node.tracing import TraceProbability
from test_watch_units import FakeNodetool

INFO = "INFO  [main] 2026-11-27 18:00:00,000 CassandraDaemon.java:100 - Startup complete"
ERROR = "ERROR [ReadStage-2] 2026-11-27 18:01:00,000 JVMStabilityInspector.java:70 - Exception in thread"
OOM = "java.lang.OutOfMemoryError: Java heap space"
ARGUMENTS = (
    "INFO  [main] 2026-11-27 18:00:00,000 CassandraDaemon.java:619 - JVM Arguments: [-XX:+HeapDumpOnOutOfMemoryError]"
)


def test_a_jvm_is_gone_once_it_ended_even_unreaped():
    jvm = subprocess.Popen(["sleep", "600"])
    start = process_start(jvm.pid)
    assert not node_gone(jvm.pid, start)
    jvm.kill()
    jvm.wait()
    assert node_gone(jvm.pid, start)
    assert node_gone(jvm.pid, None)  # never seen running


def test_the_log_s_last_word_is_its_fatal_line_else_its_last_error_else_its_last_line(tmp_path):
    log = tmp_path / "system.log"
    log.write_text("\n".join([INFO, OOM, "\tat org.apache.cassandra...", ERROR, INFO, ""]))
    assert last_word(log) == OOM
    log.write_text("\n".join([ARGUMENTS, INFO]))  # a flag naming the error is no error
    assert last_word(log) == INFO
    log.write_text("\n".join([INFO, ERROR, INFO, "   "]))
    assert last_word(log) == ERROR
    log.write_text(INFO + "\n")
    assert last_word(log) == INFO
    log.write_text("")
    assert last_word(log) is None
    assert last_word(tmp_path / "absent.log") is None


def test_the_last_word_is_shown_as_text_and_bounded(tmp_path):
    log = tmp_path / "system.log"
    log.write_text("x" * LOG_TAIL_BYTES * 2 + "\n" + "ERROR \x1b]52;c;aGk=\x07 " + "y" * 1000 + "\n")
    word = last_word(log)
    assert word is not None and word.startswith("ERROR \\x1b]52;c;aGk=\\x07 ") and "\x1b" not in word
    assert len(word) == MAX_LINE_CHARS


def test_the_message_names_the_pid_and_the_log(tmp_path):
    (tmp_path / "system.log").write_text(ERROR + "\n")
    process = CassandraProcess(4242, ("java", f"-Dcassandra.logdir={tmp_path}", "CassandraDaemon"))
    said = gone_message(process)
    assert said.startswith("the node went away: its JVM (pid 4242) has exited")
    assert str(tmp_path / "system.log") in said and ERROR in said
    assert gone_message(CassandraProcess(4242, ())) == "the node went away: its JVM (pid 4242) has exited"


def test_no_command_is_given_for_a_jvm_that_went_away(tmp_path):
    """The JVM ended while it traced: nothing to put back (the setting went with it), no command to run,
    and no record left for the next casstrace."""
    jvm = subprocess.Popen(["sleep", "600"])
    ledger, node, warnings = Ledger(jvm.pid, tmp_path), FakeNodetool(0.0), list[str]()
    with TraceProbability(node, 0.3, warnings.append, ledger) as switch:  # type: ignore[arg-type]  # a FakeNodetool for the Nodetool
        jvm.kill()
        jvm.wait()
        node.failures = [CasstraceError("JMX refused", "fix")] * 2
    assert switch.node_gone and switch.restored is None
    (said,) = warnings
    assert f"JVM (pid {jvm.pid}) is gone" in said and "settraceprobability" not in said
    assert ledger.read(TRACE_PROBABILITY) is None
