"""Just enough CQL to name causes: which table a SELECT reads, which columns it selects, what WHERE restricts.

This is not a CQL parser. It tokenizes (so quoted names, strings and parentheses cannot confuse it)
and reads the three clauses the findings need; anything it does not recognise leaves a field empty,
and the findings then say less rather than guess.
"""

import math
import re
from collections.abc import Callable
from dataclasses import dataclass, field

from casstrace.analyses.units import KIB
from casstrace.traces.meta import CassandraMeta, ColumnMeta, IndexMeta, SSTableFileMeta
from casstrace.traces.storage import SSTableStorage

_TOKEN = re.compile(
    r"""\s*(?:
        (?P<comment>--[^\n]*|//[^\n]*|/\*.*?\*/)
      | (?P<quoted>"(?:[^"]|"")*")            # quoted identifier, "" escapes a quote
      | (?P<string>'(?:[^']|'')*')            # string literal
      | (?P<dollar>\$\$.*?\$\$)               # $$ string $$
      | (?P<word>[A-Za-z_][A-Za-z0-9_]*)
      | (?P<number>-?[0-9][A-Za-z0-9_.+-]*)   # numbers, uuids, blobs (0x..)
      | (?P<op><=|>=|!=|[=<>(),.*;?:\[\]{}+-])
      | (?P<other>\S)                          # anything else stands for itself
    )""",
    re.VERBOSE | re.DOTALL,
)
AGGREGATES = ("count", "sum", "avg", "min", "max")  # CQL's native aggregate functions
_CLAUSE_ENDS = {"order", "limit", "allow", "per", "group", "bypass"}


@dataclass
class Token:
    kind: str  # 'ident' (names and keywords alike), 'literal' or 'op'
    text: str  # identifiers: lower-cased unless quoted (CQL's rule); other tokens verbatim
    quoted: bool = False

    def is_word(self, *words: str) -> bool:
        return self.kind == "ident" and not self.quoted and self.text in words


@dataclass
class Select:
    text: str
    keyspace: str | None
    table: str | None
    select_all: bool  # SELECT * (or SELECT JSON *)
    columns: list[str]  # names the selection reads (function arguments included)
    restrictions: dict[str, str] = field(default_factory=dict)  # column -> operator ('=', 'IN', '>', ...)
    token_restricted: bool = False  # WHERE token(pk) ...
    has_limit: bool = False
    in_values: dict[str, int] = field(default_factory=dict)  # column -> values of its IN (...) list
    aggregate: bool = False  # the selection aggregates rows (count, sum, avg, min, max), or GROUP BY groups them
    allow_filtering: bool = False
    distinct: bool = False  # SELECT DISTINCT: partition keys (and static columns), one row a partition
    # columns of which the selection takes one element or field (attrs['k'], addr.city): the whole
    # cell is read all the same (a frozen value is one cell; a collection's elements lie together)
    elements: list[str] = field(default_factory=list)


def tokenize(text: str) -> list[Token]:
    tokens, position = [], 0
    text = text.strip()
    while position < len(text):
        match = _TOKEN.match(text, position)
        if not match:  # only whitespace left: every other character is a token
            break
        position = match.end()
        kind = match.lastgroup
        assert kind is not None  # every alternative of _TOKEN is a named group
        value = match.group(kind)
        if kind == "comment":
            continue
        if kind == "word":
            tokens.append(Token("ident", value.lower()))
        elif kind == "quoted":
            tokens.append(Token("ident", value[1:-1].replace('""', '"'), quoted=True))
        elif kind in ("op", "other"):
            tokens.append(Token("op", value))
        else:
            tokens.append(Token("literal", value))
    return tokens


def parse_select(text: str | None) -> Select | None:
    """The SELECT's table, selection and restrictions; None when the text is not a SELECT we can read."""
    if not text:
        return None
    tokens = tokenize(text)
    if not tokens or not tokens[0].is_word("select"):
        return None
    position, distinct = 1, False
    while position < len(tokens) and tokens[position].is_word("json", "distinct"):
        distinct = distinct or tokens[position].is_word("distinct")
        position += 1
    selection, position = _until(tokens, position, lambda t: t.is_word("from"))
    if position >= len(tokens):
        return None
    keyspace, table, position = _table_name(tokens, position + 1)
    if table is None:
        return None
    select_all = len(selection) == 1 and selection[0].text == "*"
    result = Select(
        text=text,
        keyspace=keyspace,
        table=table,
        select_all=select_all,
        columns=[] if select_all else _selected_columns(selection),
        distinct=distinct,
        elements=[] if select_all else _element_columns(selection),
    )
    if position < len(tokens) and tokens[position].is_word("where"):
        where, position = _until(tokens, position + 1, lambda t: t.is_word(*_CLAUSE_ENDS) or t.text == ";")
        _read_restrictions(where, result)
    result.has_limit = any(t.is_word("limit") for t in tokens[position:])
    result.allow_filtering = any(t.is_word("filtering") for t in tokens[position:])
    grouped = any(t.is_word("group") and n.is_word("by") for t, n in zip(tokens[position:], tokens[position + 1 :]))
    result.aggregate = grouped or any(
        token.is_word(*AGGREGATES) and index + 1 < len(selection) and selection[index + 1].text == "("
        for index, token in enumerate(selection)
    )
    return result


def _until(tokens: list[Token], position: int, stop: Callable[[Token], bool]) -> tuple[list[Token], int]:
    """Tokens from position up to (not including) the first depth-0 token where stop(token) holds."""
    depth, taken = 0, []
    while position < len(tokens):
        token = tokens[position]
        if depth == 0 and stop(token):
            break
        if token.text in "([{" and token.kind == "op":
            depth += 1
        elif token.text in ")]}" and token.kind == "op":
            depth -= 1
        taken.append(token)
        position += 1
    return taken, position


def _split(tokens: list[Token], separator: Callable[[Token], bool]) -> list[list[Token]]:
    parts, position = [], 0
    while position <= len(tokens):
        part, position = _until(tokens, position, separator)
        parts.append(part)
        position += 1
    return [part for part in parts if part]


def _table_name(tokens: list[Token], position: int) -> tuple[str | None, str | None, int]:
    if position >= len(tokens) or tokens[position].kind != "ident":
        return None, None, position
    first = tokens[position].text
    if position + 2 < len(tokens) and tokens[position + 1].text == "." and tokens[position + 2].kind == "ident":
        return first, tokens[position + 2].text, position + 3
    return None, first, position + 1


def _selected_columns(selection: list[Token]) -> list[str]:
    columns: list[str] = []
    for item in _split(selection, lambda t: t.text == ","):
        depth, skip_next = 0, False
        for index, token in enumerate(item):
            if token.kind == "op":
                depth += token.text in "([{"
                depth -= token.text in ")]}"
                continue
            if skip_next:
                skip_next = False
                continue
            if token.is_word("as"):
                if depth == 0:
                    break  # the rest is the alias
                skip_next = True  # CAST(x AS type): the type is not a column
                continue
            followed_by_call = index + 1 < len(item) and item[index + 1].text == "("
            a_field = index > 0 and item[index - 1].text == "." and item[index - 1].kind == "op"
            if token.kind == "ident" and not followed_by_call and not a_field and token.text not in columns:
                columns.append(token.text)
    return columns


def _element_columns(selection: list[Token]) -> list[str]:
    """Columns the selection takes an element (`attrs['k']`, `attrs['a'..'c']`) or a field (`addr.city`) of."""
    elements: list[str] = []
    for index, token in enumerate(selection[:-1]):
        after = selection[index + 1]
        if token.kind == "ident" and after.kind == "op" and after.text in ("[", ".") and token.text not in elements:
            elements.append(token.text)
    return elements


def _read_restrictions(where: list[Token], select: Select) -> None:
    for condition in _split(where, lambda t: t.is_word("and")):
        head = condition[0]
        if head.is_word("token") and len(condition) > 1 and condition[1].text == "(":
            select.token_restricted = True
            continue
        if head.text == "(" and head.kind == "op":  # (c1, c2) > (1, 2)
            names, rest = _until(condition, 1, lambda t: t.text == ")")
            operator = condition[rest + 1].text.upper() if rest + 1 < len(condition) else "?"
            for token in names:
                if token.kind == "ident":
                    select.restrictions[token.text] = operator
            continue
        if head.kind == "ident" and len(condition) > 1:
            operator = condition[1].text.upper()
            if condition[1].is_word("contains") and len(condition) > 2 and condition[2].is_word("key"):
                operator = "CONTAINS KEY"
            select.restrictions[head.text] = operator
            if operator == "IN" and len(condition) > 3 and condition[2].text == "(":
                items = _until(condition, 3, lambda t: t.text == ")")[0]
                select.in_values[head.text] = len(_split(items, lambda t: t.text == ","))


@dataclass
class TableSchema:
    """A table as the trace's meta `cassandra.tables` describes it."""

    keyspace: str
    table: str
    columns: dict[str, ColumnMeta]  # by name
    partition_key: list[str]
    clustering: list[str]
    compression: dict[str, str]
    sstables: list[SSTableFileMeta]
    storage: list[SSTableStorage] = field(default_factory=list)  # chunks and statistics, when recorded
    indexes: list[IndexMeta] = field(default_factory=list)  # its secondary indexes
    base_table: str | None = None  # a materialized view's table (the view is read from its own SSTables)

    def index_used(self, select: Select) -> IndexMeta | None:
        """The secondary index a SELECT reads through: one on a column its WHERE restricts, when the
        partition key is not all restricted (else the partition is read by key and filtered)."""
        if self.reads_partitions(select):
            return None
        for index in self.indexes:
            if indexed_column(index["target"]) in select.restrictions:
                return index
        return None

    @property
    def stored_partitions(self) -> int | None:
        """Partitions in the table's SSTables (Statistics.db), None when not recorded."""
        counts = [s["stats"]["partitions"] for s in self.storage if "partitions" in (s.get("stats") or {})]
        return sum(counts) if counts else None

    def reads_partitions(self, select: Select) -> bool:
        """Whether the SELECT reads partitions by key (every partition key column restricted, no token
        range), not a range of the table."""
        return (
            bool(self.partition_key)
            and set(self.partition_key) <= set(select.restrictions)
            and not select.token_restricted
        )

    def partitions_read(self, select: Select) -> int:
        """Partitions a SELECT by key names: the product of their IN lists (1 without IN); 1 for a
        range read (its partitions are not counted here)."""
        if not self.reads_partitions(select):
            return 1
        return math.prod(select.in_values.get(column, 1) for column in self.partition_key)

    @property
    def regular_columns(self) -> list[str]:
        return [name for name, column in self.columns.items() if column.get("kind") in ("regular", "static")]

    def returned_cells(self, select: Select) -> list[str]:
        """The columns whose cells a SELECT returns per row (its regular and static ones for `*`)."""
        return self.regular_columns if select.select_all else [c for c in select.columns if c in self.columns]

    @property
    def chunk_bytes(self) -> int | None:
        """Compression chunk length in bytes; None when the table is not compressed."""
        options = self.compression or {}
        if not options.get("class") or str(options.get("enabled", "true")).lower() == "false":
            return None
        kib = options.get("chunk_length_in_kb", options.get("chunk_length_kb", 16))
        try:
            return int(kib) * KIB
        except (TypeError, ValueError):
            return None

    @property
    def compressor(self) -> str | None:
        name = (self.compression or {}).get("class")
        return name.rsplit(".", 1)[-1] if name and self.chunk_bytes else None


def indexed_column(target: str) -> str:
    """The column an index's target names: 'city', 'values(tags)', 'keys(attrs)', 'full(addr)', '"Name"'."""
    inner = target.split("(", 1)[1].rstrip(")") if target.endswith(")") and "(" in target else target
    return inner[1:-1].replace('""', '"') if inner.startswith('"') else inner


def find_table(cassandra: CassandraMeta, keyspace: str | None, table: str | None) -> TableSchema | None:
    """The table's schema from meta `cassandra`'s tables (None: not recorded)."""
    for entry in cassandra.get("tables") or []:
        if entry.get("table") == table and (keyspace is None or entry.get("keyspace") == keyspace):
            return TableSchema(
                keyspace=entry.get("keyspace", ""),
                table=entry.get("table", ""),
                columns={column["name"]: column for column in entry.get("columns") or []},
                partition_key=list(entry.get("partition_key") or []),
                clustering=list(entry.get("clustering") or []),
                compression=dict(entry.get("compression") or {}),
                sstables=list(entry.get("sstables") or []),
                storage=list(entry.get("storage") or []),
                indexes=list(entry.get("indexes") or []),
                base_table=entry.get("base_table"),
            )
    return None
