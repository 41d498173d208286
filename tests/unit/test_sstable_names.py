"""SSTable path parsing, on real paths of each naming scheme (sources in the comments)."""

import datetime

import pytest

from casstrace.traces.sstable_names import parse_sstable_path

# (path, keyspace, table, table_id, index, version, format, generation, component)
REAL_PATHS = [
    # Cassandra 2.1, the reference write-up (sysdig topfiles_bytes output)
    (
        "/var/lib/cassandra/data/benchmarks/test-23182450d5c011e5acecb7882d261790/benchmarks-test-ka-130-Data.db",
        "benchmarks",
        "test",
        "23182450d5c011e5acecb7882d261790",
        None,
        "ka",
        "big",
        130,
        "Data",
    ),
    (
        "/var/lib/cassandra/data/benchmarks/test-23182450d5c011e5acecb7882d261790/benchmarks-test-ka-130-Index.db",
        "benchmarks",
        "test",
        "23182450d5c011e5acecb7882d261790",
        None,
        "ka",
        "big",
        130,
        "Index",
    ),
    (
        "/var/lib/cassandra/data/benchmarks/test-55d49260d5cb11e5acecb7882d261790/benchmarks-test-ka-16-Data.db",
        "benchmarks",
        "test",
        "55d49260d5cb11e5acecb7882d261790",
        None,
        "ka",
        "big",
        16,
        "Data",
    ),
    # Cassandra 2.0: table directory without an id
    (
        "/var/lib/cassandra/data/home_security/activity/home_security-activity-jb-1-CompressionInfo.db",
        "home_security",
        "activity",
        None,
        None,
        "jb",
        "big",
        1,
        "CompressionInfo",
    ),
    # 2.0 secondary index SSTable: '<table>.<index>' in the file name
    (
        "/var/lib/cassandra/data/Keyspace1/digitalasset_3_0_2/Keyspace1-digitalasset_3_0_2.digitalasset_3_0_2_id-jb-1-Data.db",
        "Keyspace1",
        "digitalasset_3_0_2",
        None,
        "digitalasset_3_0_2_id",
        "jb",
        "big",
        1,
        "Data",
    ),
    # Cassandra 2.2 (a CorruptSSTableException report)
    (
        "/mnt/data/cassandra/reis/image-6a85c44086a711e5aef4b53617129a2a/lb-47344-big-Data.db",
        "reis",
        "image",
        "6a85c44086a711e5aef4b53617129a2a",
        None,
        "lb",
        "big",
        47344,
        "Data",
    ),
    # 3.0 secondary index in its '.<index>' directory
    (
        "/data/data/keyspace1/digitalasset_3_0_2-980fca722ea611e78ff92901fcc7f505/.index2_tags/mb-1-big-Data.db",
        "keyspace1",
        "digitalasset_3_0_2",
        "980fca722ea611e78ff92901fcc7f505",
        "index2_tags",
        "mb",
        "big",
        1,
        "Data",
    ),
    # 3.x / 4.x component set
    (
        "/var/lib/cassandra/data/system/local-7ad54392bcdd35a684174e047860b377/mc-3-big-Digest.crc32",
        "system",
        "local",
        "7ad54392bcdd35a684174e047860b377",
        None,
        "mc",
        "big",
        3,
        "Digest",
    ),
    (
        "/var/lib/cassandra/data/system/local-7ad54392bcdd35a684174e047860b377/nb-1-big-TOC.txt",
        "system",
        "local",
        "7ad54392bcdd35a684174e047860b377",
        None,
        "nb",
        "big",
        1,
        "TOC",
    ),
    (
        "/var/lib/cassandra/data/system/local-7ad54392bcdd35a684174e047860b377/nb-1-big-Summary.db",
        "system",
        "local",
        "7ad54392bcdd35a684174e047860b377",
        None,
        "nb",
        "big",
        1,
        "Summary",
    ),
    (
        "/var/lib/cassandra/data/system/local-7ad54392bcdd35a684174e047860b377/nb-1-big-Filter.db",
        "system",
        "local",
        "7ad54392bcdd35a684174e047860b377",
        None,
        "nb",
        "big",
        1,
        "Filter",
    ),
    (
        "/var/lib/cassandra/data/system/local-7ad54392bcdd35a684174e047860b377/nb-1-big-Statistics.db",
        "system",
        "local",
        "7ad54392bcdd35a684174e047860b377",
        None,
        "nb",
        "big",
        1,
        "Statistics",
    ),
    # Cassandra 5.0.9, the shared sysdig capture (storage_compatibility_mode CASSANDRA_4 writes nb)
    (
        "/tmp/cass-probe/data/data/probe/streams_lz4-1a81fdb0e66811f19555a79a9024071e/nb-13-big-Data.db",
        "probe",
        "streams_lz4",
        "1a81fdb0e66811f19555a79a9024071e",
        None,
        "nb",
        "big",
        13,
        "Data",
    ),
    # 5.0 BTI format: Partitions and Rows instead of Index and Summary
    (
        "/datasets/sstables/test_da/wide_table-9099a7c06c1811f19864870fb8444786/da-2-bti-Partitions.db",
        "test_da",
        "wide_table",
        "9099a7c06c1811f19864870fb8444786",
        None,
        "da",
        "bti",
        2,
        "Partitions",
    ),
    (
        "/datasets/sstables/test_da/wide_table-9099a7c06c1811f19864870fb8444786/da-2-bti-Rows.db",
        "test_da",
        "wide_table",
        "9099a7c06c1811f19864870fb8444786",
        None,
        "da",
        "bti",
        2,
        "Rows",
    ),
    (
        "/var/lib/cassandra/data/ks/t-6d79ab1e71211ef993499ff68342f4e0/bb-1-bti-CRC.db",
        "ks",
        "t",
        "6d79ab1e71211ef993499ff68342f4e0",
        None,
        "bb",
        "bti",
        1,
        "CRC",
    ),
    # Written by casstrace's own sandboxes (`sandbox start --version ...`, a table k.t, one flush):
    # 4.0.19 and 4.1.10 write nb-big, as 5.0.9 does in its default CASSANDRA_4 compatibility mode;
    # 5.0.9 with --sstable-format bti (storage_compatibility_mode NONE) writes da-bti.
    (
        "/root/.local/share/casstrace/h4-40/data/k/t-71119ac0e73811f1b52499b7f5c046d6/nb-1-big-Data.db",
        "k",
        "t",
        "71119ac0e73811f1b52499b7f5c046d6",
        None,
        "nb",
        "big",
        1,
        "Data",
    ),
    (
        "/root/.local/share/casstrace/h4-41/data/k/t-4ad5b3a0e73811f19bdff541e4fbe161/nb-1-big-Index.db",
        "k",
        "t",
        "4ad5b3a0e73811f19bdff541e4fbe161",
        None,
        "nb",
        "big",
        1,
        "Index",
    ),
    (
        "/root/.local/share/casstrace/h4-50bti/data/k/t-74f25760e73811f1855a97c9be0e2b40/da-1-bti-Data.db",
        "k",
        "t",
        "74f25760e73811f1855a97c9be0e2b40",
        None,
        "da",
        "bti",
        1,
        "Data",
    ),
    (
        "/root/.local/share/casstrace/h4-50bti/data/k/t-74f25760e73811f1855a97c9be0e2b40/da-1-bti-Partitions.db",
        "k",
        "t",
        "74f25760e73811f1855a97c9be0e2b40",
        None,
        "da",
        "bti",
        1,
        "Partitions",
    ),
    (
        "/root/.local/share/casstrace/h4-50bti/data/k/t-74f25760e73811f1855a97c9be0e2b40/da-1-bti-Rows.db",
        "k",
        "t",
        "74f25760e73811f1855a97c9be0e2b40",
        None,
        "da",
        "bti",
        1,
        "Rows",
    ),
    # 5.0 storage-attached index component
    (
        "/var/lib/cassandra/data/qfd_demo/orders_sai-5f1c0e7a0d3e11ef9b6e9d1e4c1a2b3c/nb-6-big-SAI+aa+orders_sai_status_idx+TermsData.db",
        "qfd_demo",
        "orders_sai",
        "5f1c0e7a0d3e11ef9b6e9d1e4c1a2b3c",
        None,
        "nb",
        "big",
        6,
        "SAI",
    ),
    # 5.0 BTI (the test's BTI node): an SAI component of the SSTable (every index shares it), and a
    # legacy secondary index's own SSTable in its hidden table's '.<index>' directory
    (
        "/root/.local/share/casstrace/test-bti-sandbox/data/casstrace_shapes/people-0d493010ea8b11f19b6ea7edf2753d3b/da-1-bti-SAI+aa+PartitionKeyBlocks.db",
        "casstrace_shapes",
        "people",
        "0d493010ea8b11f19b6ea7edf2753d3b",
        None,
        "da",
        "bti",
        1,
        "SAI",
    ),
    (
        "/root/.local/share/casstrace/test-bti-sandbox/data/casstrace_shapes/people-0d493010ea8b11f19b6ea7edf2753d3b/.people_city/da-1-bti-Data.db",
        "casstrace_shapes",
        "people",
        "0d493010ea8b11f19b6ea7edf2753d3b",
        "people_city",
        "da",
        "bti",
        1,
        "Data",
    ),
]


@pytest.mark.parametrize("path, keyspace, table, table_id, index, version, fmt, generation, component", REAL_PATHS)
def test_real_paths(path, keyspace, table, table_id, index, version, fmt, generation, component):
    name = parse_sstable_path(path)
    assert name is not None, path
    assert (name.keyspace, name.table, name.table_id, name.index) == (keyspace, table, table_id, index)
    assert (name.version, name.format, name.generation, name.component) == (version, fmt, generation, component)
    assert not name.temporary and name.snapshot is None and not name.backup


def test_uuid_generations_decode_to_their_creation_time():
    # Cassandra 4.1+ with uuid_sstable_identifiers_enabled (example from ScyllaDB's tools, which share the format)
    name = parse_sstable_path(
        "/var/lib/cassandra/data/ks/tab-0a1b2c3d4e5f60718293a4b5c6d7e8f9/nb-3fw2_0tj4_46w3k2cpidnirvjy7k-big-Data.db"
    )
    assert name.generation == "3fw2_0tj4_46w3k2cpidnirvjy7k"
    assert (name.version, name.format, name.component) == ("nb", "big", "Data")
    # days 3fw2, seconds 0tj4, 100-ns units 46w3k (base 36) since 1582-10-15
    assert name.generation_time == datetime.datetime(2022, 5, 23, 10, 37, 52, 704000, tzinfo=datetime.UTC)

    bti = parse_sstable_path(
        "/var/lib/cassandra/data/ks/tab-0a1b2c3d4e5f60718293a4b5c6d7e8f9/da-3gmz_0v2f_5bbwg2ho2ac0ws3cra-bti-Data.db"
    )
    assert (bti.version, bti.format, bti.generation) == ("da", "bti", "3gmz_0v2f_5bbwg2ho2ac0ws3cra")
    assert bti.generation_time.year == 2025
    assert parse_sstable_path("/d/ks/t-0a1b2c3d4e5f60718293a4b5c6d7e8f9/nb-13-big-Data.db").generation_time is None


def test_temporary_files_of_old_releases():
    name = parse_sstable_path(".ccm/2-0-17/node1/data0/Keyspace1/Standard1/Keyspace1-Standard1-tmp-jb-1-Data.db")
    assert (name.keyspace, name.table, name.version, name.generation, name.temporary) == (
        "Keyspace1",
        "Standard1",
        "jb",
        1,
        True,
    )
    # before 1.1 the file name held no keyspace: it is the directory
    ancient = parse_sstable_path("/var/lib/cassandra/data/Keyspace1/Standard1-tmp-g-1-Data.db")
    assert (ancient.keyspace, ancient.table, ancient.version, ancient.temporary) == (
        "Keyspace1",
        "Standard1",
        "g",
        True,
    )


def test_snapshots_and_backups_name_their_table():
    snapshot = parse_sstable_path(
        "/home/automaton/dse_data/cassandra/baselines/iot-3e2d0c602b0311ee80bfa378d3cf1972/snapshots/baselines_backup_node0/bb-5-bti-Rows.db"
    )
    assert (snapshot.keyspace, snapshot.table, snapshot.snapshot, snapshot.component) == (
        "baselines",
        "iot",
        "baselines_backup_node0",
        "Rows",
    )
    backup = parse_sstable_path(
        "/var/lib/cassandra/data/ks/t-3e2d0c602b0311ee80bfa378d3cf1972/backups/nb-7-big-Index.db"
    )
    assert (backup.keyspace, backup.table, backup.backup, backup.component) == ("ks", "t", True, "Index")


def test_components_of_one_sstable_share_its_identity():
    directory = "/tmp/cass-probe/data/data/probe/streams_lz4-1a81fdb0e66811f19555a79a9024071e/"
    data = parse_sstable_path(directory + "nb-13-big-Data.db")
    info = parse_sstable_path(directory + "nb-13-big-CompressionInfo.db")
    other = parse_sstable_path(directory + "nb-14-big-Data.db")
    assert data.sstable == info.sstable == ("probe", "streams_lz4", None, 13)
    assert other.sstable != data.sstable
    assert data.label == "probe.streams_lz4 gen 13 Data"


@pytest.mark.parametrize(
    "path",
    [
        "/var/lib/cassandra/commitlog/CommitLog-7-1700000000000.log",
        "/var/lib/cassandra/data/ks/t-3e2d0c602b0311ee80bfa378d3cf1972/nb_txn_compaction_1c5f1f60-6d1b-11ee-9d6e-5b5c3a0c8e0a.log",
        "/sys/fs/cgroup/memory/process_api/0454f768f4f541c5c550efe7b787bf24/memory.stat",
        "/usr/lib/jvm/java-17-openjdk-amd64/lib/modules",
        "tcp 127.0.0.1:9042->127.0.0.1:50412",
        "nb-1-big-Data.db",  # no directories: no keyspace or table to name
    ],
)
def test_other_files_are_not_sstables(path):
    assert parse_sstable_path(path) is None


def test_deleted_files_keep_their_identity():
    name = parse_sstable_path(
        "/var/lib/cassandra/data/ks/t-3e2d0c602b0311ee80bfa378d3cf1972/nb-7-big-Data.db (deleted)"
    )
    assert (name.keyspace, name.generation, name.component) == ("ks", 7, "Data")


def test_each_file_names_its_part_of_a_read():
    """SAI components name their index (or none: the SSTable's own, shared by its indexes); a legacy
    index's hidden table names its index."""
    table = "/d/ks/people-0d493010ea8b11f19b6ea7edf2753d3b"
    parts = {
        f"{table}/nb-1-big-SAI+aa+people_team+TermsData.db": ("SAI people_team TermsData", "people_team"),
        f"{table}/nb-1-big-SAI+aa+RowToPartition.db": ("SAI RowToPartition", None),
        f"{table}/.people_city/nb-1-big-Data.db": ("people_city Data", None),
        f"{table}/da-2-bti-Partitions.db": ("Partitions", None),
    }
    for path, (part, attached) in parts.items():
        name = parse_sstable_path(path)
        assert name is not None and (name.part, name.attached_index) == (part, attached), path
