"""The one redaction of command lines (and the environment assignments they carry): what must never
travel in a trace, a report or an error message.

Redacted to <redacted>: the value of an option or assignment whose name suggests a secret
(-Djavax.net.ssl.keyStorePassword=…, --password X, --password=X, nodetool's -pw X, --api-key K, --token T,
DB_PASSWORD=…, GITHUB_TOKEN=…), also inside a word that is itself a script (sh -c '… --password X');
the password of a URL (scheme://user:pw@host, user:pw@host). A JVM's classpath (thousands of
characters of jar paths) becomes a count of its entries. Redacting too much is harmless; too
little is a leaked credential: the names are matched generously.
"""

import re
from collections.abc import Sequence

REDACTED = "<redacted>"
# The most of one argument (or script) read: beyond it, the argument is cut at a word's start and the
# rest counted, not shown (redacting too much is harmless). Every pattern below is linear too:
# possessive, anchored where a name starts, and read on after a value, never back over it; so any
# process's command line costs time in proportion to its length, however it is crafted.
SCANNED_CHARACTERS = 4096

_SECRET = r"pass|pwd|\bpw\b|secret|token|credential|api[-_.]?key|private[-_.]?key"  # -pw: nodetool's password
_SECRET_NAME = re.compile(_SECRET, re.IGNORECASE)
_CLASSPATH_OPTIONS = {"-cp", "-classpath", "--class-path"}
# A value: quoted (an unclosed quote runs to the end), or up to a space or quote.
_VALUE = r"""(?P<value>'[^']*+'?|"[^"]*+"?|[^\s'"]++)"""
# NAME=value inside a word (a whole argument, or a script given to sh -c): the name is the run of
# [\w.-] before '=', read from its start.
_ASSIGNED_NAME = re.compile(r"(?<![\w.-])[\w.-]++(?==)")
_ASSIGNED_VALUE = re.compile(f"={_VALUE}")
# --name value: an option that starts a word, then spaces, then a value that does not start with '-'.
_OPTION_NAME = re.compile(r"(?<!\S)--?[\w.-]++(?=\s)")
_OPTION_VALUE = re.compile(rf"\s++(?!-){_VALUE}")
_URL_PASSWORD = re.compile(
    r"(?P<user>(?<![a-z0-9+.-])[a-z][a-z0-9+.-]*+://[^/\s:@]*+):(?P<value>[^/\s@]++)@", re.IGNORECASE
)
_BARE_PASSWORD = re.compile(
    r"(?P<user>(?:^|(?<=[\s=]))[\w.%+-]++):(?P<value>[^\s@/:]++)@(?=[\w-]++(?:\.[\w-]++)*+(?::\d++)?+(?:/|\s|$))"
)


def _redact_values(text: str, name: re.Pattern, value: re.Pattern) -> str:
    """The value after each secret-looking `name` redacted. The search goes on after the value
    (redacted: nothing in it can leak), so the text is read once."""
    shown: list[str] = []
    position = 0
    while found := name.search(text, position):
        given = value.match(text, found.end()) if _SECRET_NAME.search(found.group()) else None
        if given is None:
            shown.append(text[position : found.end()])
            position = found.end()
        else:
            shown += [text[position : given.start("value")], REDACTED]
            position = given.end()
    shown.append(text[position:])
    return "".join(shown)


def redact_text(text: str) -> str:
    """One word (or a script) with the secrets in it replaced by <redacted>."""
    text = _redact_values(text, _ASSIGNED_NAME, _ASSIGNED_VALUE)
    text = _redact_values(text, _OPTION_NAME, _OPTION_VALUE)
    text = _URL_PASSWORD.sub(lambda m: f"{m['user']}:{REDACTED}@", text)
    return _BARE_PASSWORD.sub(lambda m: f"{m['user']}:{REDACTED}@", text)


def _scanned(word: str) -> tuple[str, str]:
    """What of `word` is read: all of it, or its first SCANNED_CHARACTERS cut back to the start of the
    token they end in (a secret cut in two would show its first half); and what stands for the rest."""
    if len(word) <= SCANNED_CHARACTERS:
        return word, ""
    kept = word[:SCANNED_CHARACTERS]
    kept = kept[: max(kept.rfind(space) for space in " \t\n") + 1]
    return kept, f"<{len(word) - len(kept):,} characters not shown>"


def redact_command(argv: Sequence[str]) -> str:
    """The command line, fit to store or print: secrets redacted, a classpath counted, each argument
    read up to SCANNED_CHARACTERS."""
    shown = []
    words = iter(argv)
    for whole in words:
        word, rest = _scanned(whole)
        if word in _CLASSPATH_OPTIONS:
            entries = next(words, "")
            shown += [word, f"<classpath: {len(entries.split(':')) if entries else 0} entries>"]
        elif whole.startswith("-") and "=" not in whole and _SECRET_NAME.search(whole[:SCANNED_CHARACTERS]):
            # --password X: the next word is the secret (whatever it looks like)
            shown.append(word + rest)
            if next(words, None) is not None:
                shown.append(REDACTED)
        else:
            shown.append(redact_text(word) + rest)
    return " ".join(shown)
