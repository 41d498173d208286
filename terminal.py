"""The one escaping of text for a terminal: what came from a node or a user (statement text, aliases,
identifiers, file and thread names, a node's error text) is shown, never obeyed.

A statement's quoted alias may hold any character, and any client of a watched node can send one:
an ESC starting an OSC (`ESC ] 52 ; c ; … BEL` writes the clipboard, `ESC ] 0 ;` the window title), a
DCS, a CSI (`ESC [`, or the one-byte 0x9b); a newline or carriage return that forges a row of a
table. Every text and live output passes such text through `printable`, which writes each control
character as a visible escape (`\\n`, `\\x1b`, `\\x9b`, `\\u2028`): C0 (tab and newline included), DEL,
C1 (0x80–0x9f), the Unicode line and paragraph separators, and the bidirectional overrides and
isolates that reorder what a terminal shows. Escaped text holds none of them, so escaping twice changes
nothing; and every escape is as long as it is printed, so tables stay aligned.

HTML (html.escape) and the Prometheus exposition keep their own escaping. JSON escapes C0 itself;
`json_printable` escapes the rest (`\\u009b`), which JSON allows raw but a terminal would obey.
"""

import sys

_NAMED = {"\n": "\\n", "\r": "\\r", "\t": "\\t"}
_BIDI = (*range(0x202A, 0x202F), *range(0x2066, 0x206A), 0x200E, 0x200F, 0x061C)
_UNSAFE = (*range(0x20), 0x7F, *range(0x80, 0xA0), 0x2028, 0x2029, *_BIDI)


def _escape(code: int) -> str:
    char = chr(code)
    if char in _NAMED:
        return _NAMED[char]
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


_TABLE = {code: _escape(code) for code in _UNSAFE}


def printable(text: str) -> str:
    """`text` with every control character written as a visible escape: safe to print on a terminal
    and one line, whatever it held."""
    return text.translate(_TABLE)


# What json.dumps leaves raw (it escapes C0 itself): inside a JSON string, \uXXXX is the same character.
_JSON_TABLE = {code: f"\\u{code:04x}" for code in _UNSAFE if code >= 0x7F}


def json_printable(document: str) -> str:
    """A JSON document (json.dumps's output) with the control characters JSON allows raw escaped:
    the same data, safe on a terminal."""
    return document.translate(_JSON_TABLE)


def warn(message: str) -> None:
    """One warning line on standard error, `casstrace: warning: ...`, escaped for the terminal."""
    print(f"casstrace: warning: {printable(message)}", file=sys.stderr)
