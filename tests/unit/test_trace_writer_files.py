"""TraceWriter's file ids (unit: a trace in tmp_path)."""

from casstrace.traces import Trace, TraceWriter


def test_a_file_seen_by_inode_is_the_first_file_row_with_that_inode(tmp_path):
    writer = TraceWriter(tmp_path / "files.trace")
    socket = writer.file_id("tcp 127.0.0.1:9042", "socket", dev=0, inode=77)
    first = writer.file_id("/data/a-Data.db", "file", dev=2049, inode=77)
    renamed = writer.file_id("/data/b-Data.db", "file", dev=2049, inode=77)
    assert writer.file_of_inode("/anything", 2049, 77) == first != renamed
    assert writer.file_of_inode("/anything", 0, 77) != socket  # a socket is no file
    mapped_only = writer.file_of_inode("/data/c-Index.db", 2049, 78, size_bytes=4096)
    assert writer.file_of_inode("/data/c-Index.db", 2049, 78) == mapped_only
    with Trace(writer.finish()) as trace:
        assert [
            tuple(row) for row in trace.rows("SELECT path, size_bytes FROM files WHERE file_id = ?", (mapped_only,))
        ] == [("/data/c-Index.db", 4096)]
