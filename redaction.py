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

_SECRET = r"pass|pwd|\bpw\b|secret|token|credential|api[-_.]?key|private[-_.]?key"  # -pw: nodetool's password
_SECRET_NAME = re.compile(_SECRET, re.IGNORECASE)
_CLASSPATH_OPTIONS = {"-cp", "-classpath", "--class-path"}
_VALUE = r"""(?:'[^']*'|"[^"]*"|[^\s'"]+)"""
# NAME=value and --name value inside a word (a whole argument, or a script given to sh -c)
_ASSIGNMENT = re.compile(rf"(?P<name>[\w.-]*(?:{_SECRET})[\w.-]*)=(?P<value>{_VALUE})", re.IGNORECASE)
_SPACED_OPTION = re.compile(
    rf"(?P<name>(?<!\S)--?[\w.-]*(?:{_SECRET})[\w.-]*)(?P<space>\s+)(?P<value>(?!-){_VALUE})", re.IGNORECASE
)
_URL_PASSWORD = re.compile(r"(?P<user>\b[a-z][a-z0-9+.-]*://[^/\s:@]*):(?P<value>[^/\s@]+)@", re.IGNORECASE)
_BARE_PASSWORD = re.compile(
    r"(?P<user>(?:^|(?<=[\s=]))[\w.%+-]+):(?P<value>[^\s@/:]+)@(?=[\w-]+(?:\.[\w-]+)*(?::\d+)?(?:/|\s|$))"
)


def redact_text(text: str) -> str:
    """One word (or a script) with the secrets in it replaced by <redacted>."""
    text = _ASSIGNMENT.sub(lambda m: f"{m['name']}={REDACTED}", text)
    text = _SPACED_OPTION.sub(lambda m: f"{m['name']}{m['space']}{REDACTED}", text)
    text = _URL_PASSWORD.sub(lambda m: f"{m['user']}:{REDACTED}@", text)
    return _BARE_PASSWORD.sub(lambda m: f"{m['user']}:{REDACTED}@", text)


def redact_command(argv: Sequence[str]) -> str:
    """The command line, fit to store or print: secrets redacted, a classpath counted."""
    shown = []
    words = iter(argv)
    for word in words:
        if word in _CLASSPATH_OPTIONS:
            entries = next(words, "")
            shown += [word, f"<classpath: {len(entries.split(':')) if entries else 0} entries>"]
        elif word.startswith("-") and "=" not in word and _SECRET_NAME.search(word):
            # --password X: the next word is the secret (whatever it looks like)
            shown.append(word)
            if next(words, None) is not None:
                shown.append(REDACTED)
        else:
            shown.append(redact_text(word))
    return " ".join(shown)
