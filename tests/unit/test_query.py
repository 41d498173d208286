"""analyses/query.py: what a SELECT reads (selection, table, restrictions)."""

from casstrace.analyses.query import parse_select


def test_query_parsing_reads_selection_table_and_restrictions():
    q = parse_select(
        'SELECT writetime(c0) AS w, CAST(c1 AS text), "Mixed" FROM ks."T" '
        "WHERE token(a) > 3 AND (b, c) >= (1, 2) AND d IN (1, 2) AND e CONTAINS KEY 'x' LIMIT 3"
    )
    assert (q.keyspace, q.table, q.select_all) == ("ks", "T", False)
    assert q.columns == ["c0", "c1", "Mixed"]
    assert q.restrictions == {"b": ">=", "c": ">=", "d": "IN", "e": "CONTAINS KEY"}
    assert q.token_restricted and q.has_limit
    assert parse_select("select * from streams where stream_id = 1").select_all
    assert parse_select("INSERT INTO t (a) VALUES (1)") is None
    assert parse_select("SELECT a FROM t WHERE s = 'it''s AND x = 1'").restrictions == {"s": "="}
