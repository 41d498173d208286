"""Reading CQL text without a node: splitting it into statements, and making sure a statement only reads.

casstrace replays statements on production nodes, so the read-only rule is decided here, by
tokenizing the text as Cassandra's lexer does, never by trusting a prefix: comments (`--`, `//`,
`/* */`), string literals ('…' with '' inside, $$…$$), quoted identifiers ("…" with "" inside),
any case and any whitespace. A statement is a read when its first keyword is SELECT (SELECT
JSON and SELECT DISTINCT are SELECTs too); everything else — INSERT, UPDATE, DELETE, BATCH,
TRUNCATE, USE, DDL, GRANT/REVOKE, lightweight transactions (which are conditional INSERT, UPDATE
or DELETE) — is refused before any connection is made.

One exception, `runnable_statement`: a write (INSERT, UPDATE, DELETE, a BATCH of them) is let
through to be run on a node casstrace started itself (node.own_sandbox decides, once the node is
found); everything else is refused as above.

This module imports no driver, so a refusal costs nothing and works on any machine.
"""

import itertools
import re
from dataclasses import dataclass

from casstrace.errors import CasstraceError

# The most a statement can be: Cassandra's native_transport_max_frame_size (16 MiB by default since
# 4.0), the largest message a client may send; a longer text the node would refuse anyway.
STATEMENT_LIMIT_BYTES = 16 * 2**20
# The most a name (a column, an alias) can be: the native protocol's [string] has a 2-byte length, and
# the result's metadata carries each column's name so.
NAME_LIMIT_BYTES = 65535


@dataclass(frozen=True)
class Token:
    kind: str  # 'word' | 'string' | 'identifier' (quoted) | 'comment' | 'space' | ';' | 'symbol'
    text: str


# Order matters: comments before the '-' and '/' symbols, quoted forms before everything else.
_LEXEME = re.compile(
    r"""
    (?P<comment>--[^\n]*|//[^\n]*|/\*.*?\*/)
  | (?P<string>'(?:[^']|'')*'|\$\$.*?\$\$)
  | (?P<identifier>"(?:[^"]|"")*")
  | (?P<space>\s+)
  | (?P<semicolon>;)
  | (?P<word>[A-Za-z_][A-Za-z0-9_]*)
  | (?P<symbol>.)
""",
    re.S | re.X,
)

# Openings whose end never came: the lexer above would otherwise read them as symbols.
_UNTERMINATED = {
    "'": "a string literal ('…')",
    '"': 'a quoted identifier ("…")',
    "$": "a $$…$$ string",
    "/": "a /* comment",
}


def tokenize(text: str) -> list[Token]:
    """The tokens of a CQL text, as Cassandra's lexer splits it. Raises CasstraceError on an
    unterminated string, quoted identifier or comment (the node would reject the text anyway)."""
    tokens = []
    for match in _LEXEME.finditer(text):
        kind = match.lastgroup or "symbol"
        lexeme = match.group()
        if kind == "symbol" and (lexeme in "'\"" or text.startswith(("$$", "/*"), match.start())):
            opening = _UNTERMINATED[lexeme]
            raise CasstraceError(
                f"the CQL text has {opening} that is never closed",
                "close it, or check the shell's quoting of the statement",
            )
        tokens.append(Token(";" if kind == "semicolon" else kind, lexeme))
    return tokens


def _require_utf8(text: str) -> None:
    """A text from the command line holds what the shell gave: bytes that are not UTF-8 arrive as
    lone surrogates (Python's surrogateescape), which no driver can send."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as error:
        char = ord(text[error.start])
        byte = f"byte 0x{char - 0xDC00:02x}" if 0xDC80 <= char <= 0xDCFF else f"character U+{char:04X}"
        raise CasstraceError(
            f"the CQL text is not UTF-8 ({byte} at character {error.start})",
            "give the statement in UTF-8, the encoding of CQL (check the shell's locale and quoting)",
        ) from None


def split_statements(text: str) -> list[str]:
    """The statements of a CQL text, without comments, blank statements or their final ';' (a BATCH is
    one, from BEGIN to APPLY BATCH, its inner statements' ';' kept). A comment becomes one space, so
    that it never joins the words around it."""
    _require_utf8(text)
    statements: list[str] = []
    current: list[str] = []
    words: list[str] = []  # the current statement's words, upper case: a BATCH's ';' end its inner statements
    for token in tokenize(text):
        if token.kind == ";" and not (words[:1] == ["BEGIN"] and words[-2:] != ["APPLY", "BATCH"]):
            statements.append("".join(current))
            current, words = [], []
        else:
            current.append(" " if token.kind == "comment" else token.text)
            if token.kind == "word":
                words.append(token.text.upper())
    statements.append("".join(current))
    return [statement.strip() for statement in statements if statement.strip()]


def statement_kind(statement: str) -> str:
    """What a statement is, in the words a user would use: 'SELECT', 'INSERT', 'DROP TABLE',
    'BEGIN BATCH', ... (its leading keywords, upper case), or 'empty'."""
    words = [token for token in tokenize(statement) if token.kind not in ("space", "comment")]
    if not words:
        return "empty"
    if words[0].kind != "word":
        return f"a statement starting with {words[0].text[:20]}"
    first = words[0].text.upper()
    second = words[1].text.upper() if len(words) > 1 and words[1].kind == "word" else ""
    if first in ("CREATE", "ALTER", "DROP", "BEGIN", "LIST", "ADD") and second:
        if second in ("CUSTOM", "MATERIALIZED", "UNLOGGED", "COUNTER", "OR") and len(words) > 2:
            return f"{first} {second} {words[2].text.upper()}"
        return f"{first} {second}"
    return first


# The writes `run` may execute on its own sandbox: their kinds as statement_kind says them.
WRITE_KINDS = frozenset({"INSERT", "UPDATE", "DELETE", "BEGIN BATCH", "BEGIN UNLOGGED BATCH", "BEGIN COUNTER BATCH"})


def read_only_statement(text: str) -> str:
    """The one statement of `text` (without comments or the final ';') when it only reads;
    otherwise a CasstraceError saying why. Call it before connecting to anything."""
    statement, kind = _one_statement(text)
    if kind != "SELECT":
        _refuse(kind)
    _check_names(statement)
    return statement


def runnable_statement(text: str) -> tuple[str, bool]:
    """The one statement of `text` (without comments or the final ';') and whether it writes: a read,
    or a write of WRITE_KINDS with bind markers (which only a node casstrace started may run:
    node.own_sandbox); otherwise a CasstraceError saying why. Call it before connecting to anything."""
    statement, kind = _one_statement(text)
    if kind == "SELECT":
        _check_names(statement)
        return statement, False
    if kind not in WRITE_KINDS:
        _refuse(kind)
    if kind.endswith("BATCH"):
        _check_batch(statement)
    if not _has_bind_marker(statement):
        raise no_bind_markers(kind)
    _check_names(statement)
    return statement, True


def _one_statement(text: str) -> tuple[str, str]:
    statements = split_statements(text)
    if len(statements) != 1:
        raise CasstraceError(
            f"expected one CQL statement, found {len(statements)}",
            'give exactly one statement: casstrace run "SELECT ..."',
        )
    return statements[0], statement_kind(statements[0])


def no_bind_markers(kind: str) -> CasstraceError:
    """Why a write without a bind marker is not run: casstrace only runs reads, and writes of values it
    generates; repeated, a write of literals would overwrite the same cells, which are not casstrace's."""
    return CasstraceError(
        f"refusing to run a {kind} statement without bind markers: casstrace only runs reads, and a write only "
        "with values it generates, on a sandbox it started (a write of literals would overwrite cells it did not make)",
        "write the values as ? (at least the key): casstrace fills them with fresh values at every execution",
    )


def _has_bind_marker(statement: str) -> bool:
    """Whether the statement has a `?` or a `:name` marker outside strings, names and comments."""
    tokens = [token for token in tokenize(statement) if token.kind not in ("space", "comment")]
    return any(
        token.text == "?"
        or (token.text == ":" and index + 1 < len(tokens) and tokens[index + 1].kind in ("word", "identifier"))
        for index, token in enumerate(tokens)
        if token.kind == "symbol"
    )


def writes(statement: str) -> bool:
    """Whether a statement runnable_statement let through is a write."""
    return statement_kind(statement) in WRITE_KINDS


def written_rows(statement: str) -> int:
    """The rows a write writes per execution: its INSERT, UPDATE and DELETE statements (a batch's count).
    The three words are reserved in CQL, so an unquoted name is never one of them."""
    return sum(
        token.kind == "word" and token.text.upper() in ("INSERT", "UPDATE", "DELETE") for token in tokenize(statement)
    )


def _check_batch(statement: str) -> None:
    """A BATCH ends with APPLY BATCH and holds INSERT, UPDATE and DELETE statements only (what follows
    each of its ';'): anything else in it is refused here, before the node's own parser sees it."""
    tokens = [token for token in tokenize(statement) if token.kind not in ("space", "comment")]
    words = [token.text.upper() for token in tokens if token.kind == "word"]
    inner = [tokens[i + 1].text.upper() for i, token in enumerate(tokens[:-1]) if token.kind == ";"]
    if words[-2:] != ["APPLY", "BATCH"] or any(word not in ("INSERT", "UPDATE", "DELETE", "APPLY") for word in inner):
        raise CasstraceError(
            "refusing to run a BATCH that is not INSERT, UPDATE and DELETE statements ended by APPLY BATCH",
            "give BEGIN BATCH INSERT ...; UPDATE ...; APPLY BATCH",
        )


def _refuse(kind: str) -> None:
    raise CasstraceError(
        f"refusing to run {kind if kind.startswith('a ') else 'a ' + kind + ' statement'}: "
        "casstrace only runs reads, and never changes data (a write only on a sandbox casstrace started)",
        "give one SELECT statement (SELECT JSON and SELECT DISTINCT are fine)",
    )


def _check_names(statement: str) -> None:
    for token in tokenize(statement):
        name = token.text[1:-1].replace('""', '"') if token.kind == "identifier" else token.text
        if token.kind in ("identifier", "word") and len(name.encode()) > NAME_LIMIT_BYTES:
            raise CasstraceError(
                f"a name in the statement is {len(name.encode()):,} bytes long: the native protocol carries "
                f"a column's name in at most {NAME_LIMIT_BYTES:,} bytes, so no driver could read the result",
                "give the column or alias a shorter name",
            )


# Literals outside strings (tokenize has already taken strings, quoted identifiers and comments out).
_LITERAL = re.compile(
    r"""
    \b[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}\b   # uuid
  | \b0[xX][0-9a-fA-F]*\b                                                            # blob
  | (?<![\w.])-?(?:\d+\.?\d*(?:[eE][+-]?\d+)?|\.\d+(?:[eE][+-]?\d+)?)(?![\w.])         # number
  | (?<![\w.])-?(?:NaN|Infinity)\b
  | \b(?i:true|false)\b
""",
    re.X,
)
_IN_LIST = re.compile(r"\bIN\s*\(\s*\?(?:\s*,\s*\?)*\s*\)", re.IGNORECASE)
UNREADABLE_STATEMENT = "<a statement casstrace could not read>"


def normalize(statement: str, *, keep_in_lengths: bool = False) -> str:
    """The statement as `casstrace watch` groups and stores it, and `casstrace run` stores and reports
    it (as pg_stat_statements keeps a statement): every literal (string, $$-string, number, uuid, blob,
    boolean) as `?`, comments dropped, whitespace collapsed, no final ';', and `IN (?, ?, ...)` as
    `IN (?)`. Executions of one statement with different values become one; and since only this text
    is ever stored, no value reaches a trace. `keep_in_lengths`: an IN list keeps one `?` a value
    (run's: the analyses count the partitions and rows it names).

        SELECT c0 FROM ks.t WHERE id = 42 AND name = 'x'  ->  SELECT c0 FROM ks.t WHERE id = ? AND name = ?
    """
    try:
        tokens = tokenize(statement)
    except CasstraceError:  # cut short: nothing of it can be told apart from a value
        return UNREADABLE_STATEMENT
    parts: list[str] = []
    code: list[str] = []  # the words and symbols since the last string or quoted identifier

    def flush() -> None:
        parts.append(re.sub(r"\s+", " ", _LITERAL.sub("?", "".join(code))))
        code.clear()

    for token in tokens:
        if token.kind == "string":
            flush()
            parts.append("?")
        elif token.kind == "identifier":
            flush()
            parts.append(token.text)
        else:
            code.append(" " if token.kind in ("space", "comment") else token.text)
    flush()
    text = "".join(parts).strip()
    while text.endswith(";"):
        text = text[:-1].rstrip()
    return text if keep_in_lengths else _IN_LIST.sub("IN (?)", text)


# CQL's native aggregate functions. (The analyses' parse of a trace's query has its own list:
# analyses/query.py, which may not import node/.)
NATIVE_AGGREGATES = frozenset({"count", "sum", "avg", "min", "max"})


@dataclass(frozen=True)
class SelectShape:
    """What of a SELECT decides how it may be paged: whether Cassandra aggregates its rows (and pages
    the rows it aggregates internally, at the request's page size), and its LIMIT."""

    calls: frozenset[str]  # the functions its selection calls, lower case, without their keyspace
    group_by: bool
    limit: int | None  # LIMIT n (not PER PARTITION LIMIT); None: none, or a bind marker

    def aggregate(self, user_aggregates: frozenset[str] = frozenset()) -> bool:
        """Whether the result is aggregated: a native or user-defined aggregate, or GROUP BY."""
        return self.group_by or bool(self.calls & (NATIVE_AGGREGATES | user_aggregates))


def select_shape(statement: str) -> SelectShape:
    """The shape of one SELECT statement, read from its tokens (strings, quoted names and comments
    cannot be mistaken for a keyword)."""
    tokens = [t for t in tokenize(statement) if t.kind not in ("space", "comment")]
    words = [t.text.lower() if t.kind == "word" else None for t in tokens]
    names = [  # what a token names: a word lower case, a quoted identifier as written
        word if word is not None else t.text[1:-1].replace('""', '"') if t.kind == "identifier" else None
        for word, t in zip(words, tokens)
    ]
    calls: set[str] = set()
    group_by = False
    limit: int | None = None
    depth, in_selection = 0, True
    for index, token in enumerate(tokens):
        word = words[index]
        following = tokens[index + 1].text if index + 1 < len(tokens) else ""
        if token.kind == "symbol" and token.text in "([{":
            depth += 1
        elif token.kind == "symbol" and token.text in ")]}":
            depth -= 1
        elif word == "from" and depth == 0:
            in_selection = False
        elif in_selection and (name := names[index]) is not None and following == "(":
            calls.add(name)
        elif depth == 0 and word == "group" and index + 1 < len(tokens) and words[index + 1] == "by":
            group_by = True
        elif depth == 0 and word == "limit" and (index == 0 or words[index - 1] != "partition"):
            digits = "".join(t.text for t in itertools.takewhile(lambda t: t.text.isdigit(), tokens[index + 1 :]))
            limit = int(digits) if digits else None
    return SelectShape(frozenset(calls), group_by, limit)


def whole_cell_statement(statement: str) -> str | None:
    """The SELECT with each element of a collection or field of a UDT it selects (`attrs['k']`,
    `tags[1..3]`, `addr.city`) replaced by the whole column, the rest as written; None when it selects
    none. The node reads the whole cell for either (casstrace.node.cells samples its size)."""
    tokens = tokenize(statement)
    significant = [i for i, t in enumerate(tokens) if t.kind not in ("space", "comment")]
    dropped: list[range] = []  # the tokens of each element or field selector
    depth = at = 0
    while at < len(significant):
        token = tokens[significant[at]]
        if depth == 0 and token.kind == "word" and token.text.lower() == "from":
            break
        past = _past_selectors(tokens, significant, at + 1) if token.kind in ("word", "identifier") else at + 1
        if past > at + 1:
            dropped.append(range(significant[at] + 1, significant[past - 1] + 1))
            at = past
            continue
        if token.kind == "symbol" and token.text in "([{":
            depth += 1
        elif token.kind == "symbol" and token.text in ")]}":
            depth -= 1
        at += 1
    if not dropped:
        return None
    gone = {index for selector in dropped for index in selector}
    return "".join(token.text for index, token in enumerate(tokens) if index not in gone)


def _past_selectors(tokens: list[Token], significant: list[int], at: int) -> int:
    """Where the element and field selectors that start at significant token `at` end (`at` itself when
    none does): `[...]` (brackets balanced), `.field` (not `ks.fn(`, a keyspace-qualified function)."""

    def text(position: int) -> str:
        return tokens[significant[position]].text if position < len(significant) else ""

    while at < len(significant):
        if text(at) == "[":
            depth, position = 1, at + 1
            while position < len(significant) and depth:
                depth += (text(position) == "[") - (text(position) == "]")
                position += 1
            if depth:
                return at
            at = position
        elif (
            text(at) == "."
            and at + 1 < len(significant)
            and tokens[significant[at + 1]].kind in ("word", "identifier")
            and text(at + 2) != "("
        ):
            at += 2
        else:
            break
    return at
