"""The one escaping of text from outside: what came from a node or a user (statement text, aliases,
identifiers, file and thread names, a node's error text) is shown, never obeyed, in every format.

A statement's quoted alias may hold any character, and any client of a watched node can send one:
an ESC starting an OSC (`ESC ] 52 ; c ; … BEL` writes the clipboard, `ESC ] 8 ;` a hyperlink, `ESC ] 0 ;`
the window title), a DCS, a CSI (`ESC [`, or the one-byte 0x9b); a newline or carriage return that forges
a row of a table; a right-to-left override (U+202E) that makes a browser or a terminal show the
statement's text in another order than the node ran it. `printable` writes each such character as a
visible escape (`\\n`, `\\x1b`, `\\x9b`, `\\u202e`): C0 (tab and newline included), DEL, C1 (0x80–0x9f),
the Unicode line and paragraph separators, every invisible format character (Unicode's category Cf:
the bidirectional embeddings, overrides, isolates and marks, zero-width spaces and joiners, the byte
order mark, tags). Escaped text holds none of them, so escaping twice changes nothing; and every
escape is as long as it is printed, so tables stay aligned.

Every format shows such text through it: the terminal text and live tables, Markdown, HTML (before
html.escape: the page, its tables and the charts' labels), the Prometheus label values (before the
exposition's own escaping). JSON stays faithful data: json.dumps escapes C0 itself, `json_printable`
the rest as `\\uXXXX`, which a JSON reader decodes to the very character and a terminal cannot obey.
"""

import functools
import sys

_NAMED = {"\n": "\\n", "\r": "\\r", "\t": "\\t"}
# Unicode's format characters (category Cf, as of Unicode 15.1; tests/unit/test_terminal.py checks the
# list against the running Python's unicodedata). U+202A–U+202E, U+2066–U+2069, U+200E/U+200F and
# U+061C are the bidirectional controls.
_FORMAT = (
    0xAD,
    *range(0x600, 0x606),
    0x61C,
    0x6DD,
    0x70F,
    0x890,
    0x891,
    0x8E2,
    0x180E,
    *range(0x200B, 0x2010),
    *range(0x202A, 0x202F),
    *range(0x2060, 0x2065),
    *range(0x2066, 0x2070),
    0xFEFF,
    *range(0xFFF9, 0xFFFC),
    0x110BD,
    0x110CD,
    *range(0x13430, 0x13440),
    *range(0x1BCA0, 0x1BCA4),
    *range(0x1D173, 0x1D17B),
    0xE0001,
    *range(0xE0020, 0xE0080),
)
_UNSAFE = (*range(0x20), 0x7F, *range(0x80, 0xA0), 0x2028, 0x2029, *_FORMAT)


def _escape(code: int) -> str:
    char = chr(code)
    if char in _NAMED:
        return _NAMED[char]
    if code < 0x100:
        return f"\\x{code:02x}"
    return f"\\u{code:04x}" if code < 0x10000 else f"\\U{code:08x}"


@functools.cache
def _table() -> dict[int, str]:
    # made on the first text that needs it: `casstrace import` prints only plain text, and its start is timed
    return {code: _escape(code) for code in _UNSAFE}


def printable(text: str) -> str:
    """`text` with every control and invisible format character written as a visible escape: safe to
    show in any format and one line, whatever it held."""
    # str.isprintable is False for every character escaped here (categories Cc, Cf, Zl, Zp), and
    # for more: True says there is nothing to escape.
    return text if text.isprintable() else text.translate(_table())


def _json_escape(code: int) -> str:
    """JSON's escape of a character: \\uXXXX, a surrogate pair beyond the BMP."""
    if code < 0x10000:
        return f"\\u{code:04x}"
    high, low = divmod(code - 0x10000, 0x400)
    return f"\\u{0xD800 + high:04x}\\u{0xDC00 + low:04x}"


# What json.dumps leaves raw (it escapes C0 itself): inside a JSON string, \uXXXX is the same character.
@functools.cache
def _json_table() -> dict[int, str]:
    return {code: _json_escape(code) for code in _UNSAFE if code >= 0x7F}


def json_printable(document: str) -> str:
    """A JSON document (json.dumps's output) with the control and format characters JSON allows raw
    escaped: the same data, safe on a terminal."""
    return document.translate(_json_table())


def warn(message: str) -> None:
    """One warning line on standard error, `casstrace: warning: ...`, escaped for the terminal."""
    print(f"casstrace: warning: {printable(message)}", file=sys.stderr)
