"""The one redaction of command lines: what must never travel in a trace, a report or an error message.

Deny by default: a command line keeps its program, its options' names, its plain arguments and the
values that evidently hold no secret; every other value an option or a name is given becomes
<redacted>. The rule, word by word:

- An option's value, given separate (`-u alice`, `--user alice`), attached (`-psecret`) or after '='
  (`--user=alice`), is shown only when it is harmless: a plain number, with or without a unit (`1`,
  `1.5`, `512M`, `300ms`); true/false/yes/no/on/off/auto/none/localhost; an IP address; a path that
  exists (`/etc/c.yaml`, `file:///etc/c.yaml`) or would be created in an existing directory other
  than / (`of=/tmp/out`); or a ':' or ',' list of those (`127.0.0.1:9042`, `/a/lib:/b/lib`). Everything
  else is redacted. A separate word after an option counts as its value (no one knows which options
  take one): `grep -r PATTERN DIR` shows `grep -r <redacted> DIR`.
- A single-dash word is `-x` and an attached value (`-psecret` is `-p<redacted>`), unless it is one of
  the JVM's own (-server, -ea, -jar; -Xmx1G, -XX:+UseG1GC, -XX:Name=value, -Dname=value,
  -javaagent:PATH, ...) or a password option's whole name (nodetool's -pw). A one-letter tail
  (`-la`, `-rf`) is shown: one character hides nothing.
- The value of a name that suggests a secret (--password, -pw, --api-key, --token, DB_PASSWORD=,
  -D...Password=; and -p, the password option of mysql, cqlsh and sshpass) is redacted whatever it
  looks like, numbers and paths too.
- NAME=VALUE (an environment assignment, dd's if=, -Dname=value, a URL's query parameters) shows NAME,
  and VALUE only when harmless and NAME suggests no secret.
- A header (`Name: value`, as given to curl -H) shows its name and redacts its value (always for
  Authorization, Proxy-Authorization, Cookie and any name that suggests a key, token, secret or
  auth). A pair `a:b` with no space (curl -u user:password, -u TOKEN:) is redacted whole: either half
  may be the secret; unless `b` is harmless (`cassandra:4.1`, `localhost:9042`).
- A URL keeps its scheme, host, port and path; its user info (`https://<redacted>@host`: a token is
  often the user name), each query value and its fragment are redacted; so is the user info of a
  bare `user:password@host`. A secret that is itself a URL's path (a webhook's) is not recognised.
- A plain argument (a subcommand, a class name, a file) is shown. One that holds spaces, and the
  value of -c (sh -c, bash -c, python -c), is a script: read word by word by the same rules.
- A JVM's classpath (thousands of characters of jar paths) becomes a count of its entries.
- Each argument is read up to SCANNED_CHARACTERS; the rest is counted, not shown.

Redacting too much is harmless; too little is a leaked credential. `casstrace capture
--keep-command-line` stores a command's line whole, when the user wants every word of it.
"""

import os
import re
from collections.abc import Sequence

REDACTED = "<redacted>"
# The most of one argument (or script) read: beyond it, the argument is cut at a word's start and the
# rest counted, not shown (redacting too much is harmless). Every pattern below is linear (possessive
# or anchored), so any process's command line costs time in proportion to its length, however crafted.
SCANNED_CHARACTERS = 4096
# A script inside a script inside ... (sh -c "bash -c '...'"): deeper than this, a script is redacted.
SCRIPT_DEPTH = 3

_SECRET = r"pass|pwd|\bpw\b|secret|token|credential|api[-_.]?key|private[-_.]?key|auth|cookie|session"
_SECRET_NAME = re.compile(_SECRET, re.IGNORECASE)
# A header's name: any key too (X-Api-Key, X-Key, Ocp-Apim-Subscription-Key).
_SECRET_HEADER = re.compile(_SECRET + r"|key|signature", re.IGNORECASE)
# Short options whose value is a password: mysql -pSECRET, cqlsh/sshpass -p SECRET.
_PASSWORD_OPTIONS = {"-p"}
# A single-dash word that is a password option's whole name (nodetool -pw, openssl -passin).
_SECRET_WORD = re.compile(
    r"-(?:pw|pwd|pass|passin|passout|passwd|password|passphrase|secret|token|api[-_]?key|credentials?)", re.IGNORECASE
)
_CLASSPATH_OPTIONS = {"-cp", "-classpath", "--class-path"}
# The JVM's single-dash words: flags, and options whose value is the next word.
_JVM_FLAGS = {
    "-server", "-client", "-ea", "-da", "-esa", "-dsa", "-enableassertions", "-disableassertions",
    "-enablesystemassertions", "-disablesystemassertions", "-version", "-showversion", "-verbose",
    "-Xint", "-Xbatch", "-Xcomp", "-Xrs", "-Xnoclassgc", "-Xmixed",
}  # fmt: skip
_JVM_VALUE_OPTIONS = {"-jar"}
# The JVM's single-dash options with an attached value: the value follows the prefix.
_JVM_PREFIXES = (
    "-XX:", "-Xlog:", "-Xshare:", "-Xss", "-Xms", "-Xmx", "-Xmn", "-javaagent:", "-agentpath:", "-agentlib:",
    "-verbose:", "-ea:", "-da:", "-D",
)  # fmt: skip
_JVM_TOGGLE = re.compile(r"[+-]\w++")  # -XX:+UseG1GC
_NUMBER = re.compile(r"\d++(?:\.\d++)?+(?:[kmgtpe]i?b?|b|[nuµm]?s|min|h|d|%)?+", re.IGNORECASE)
_HARMLESS_WORDS = {"true", "false", "yes", "no", "on", "off", "auto", "none", "localhost"}
_IPV4 = re.compile(r"\d{1,3}+(?:\.\d{1,3}+){3}")
_IPV6 = re.compile(r"[0-9a-f]*+:[0-9a-f:]*+(?:%\w++)?", re.IGNORECASE)
_LIST = re.compile(r"[:,]")
_URL = re.compile(
    r"(?P<scheme>[a-z][a-z0-9+.-]*+://)(?:(?P<userinfo>[^/?#\s]*)@)?(?P<place>[^?#\s]*+)"
    r"(?:\?(?P<query>[^#\s]*+))?(?:#(?P<fragment>\S*+))?",
    re.IGNORECASE,
)
_BARE_USERINFO = re.compile(r"[^\s/@:]++:[^\s/]*@(?P<host>[\w-]++(?:\.[\w-]++)*+(?::\d++)?+(?:/\S*+)?)")
# Name: value (a header), or a pair name:value; never scheme://.
_HEADER = re.compile(r"(?P<name>[A-Za-z][\w-]*+):(?!//)(?P<space>\s*+)(?P<rest>.*)", re.DOTALL)
_ASSIGNMENT = re.compile(r"(?P<name>[A-Za-z_][\w./-]*+)=(?P<rest>[^=].*)", re.DOTALL)
# What makes a word a script: a space, or what a shell takes for the end of a command.
_SCRIPT = re.compile(r"[\s;|&]")
# What ends a command in a script (its next word is a program, never an option's value).
_SEPARATOR = re.compile(r"&&|\|\||[;|&()<>]")
# A script's words: its separators and its words (quoted parts and all).
_SCRIPT_TOKEN = re.compile(
    rf"""{_SEPARATOR.pattern}|(?:'[^']*+'?|"(?:[^"\\]|\\.)*+"?|\\.|[^\s'"\\;|&()<>])++""",
    re.DOTALL,
)
_QUOTED_PART = re.compile(r"""'([^']*+)'?|"((?:[^"\\]|\\.)*+)"?|\\(.)""", re.DOTALL)


def _is_path(value: str) -> bool:
    """An existing path, or one in an existing directory other than / (an output not yet written)."""
    path = value.removeprefix("file://")
    if os.path.exists(path):
        return True
    parent = os.path.dirname(path)
    return parent not in ("", "/") and os.path.isdir(parent)


def _is_ip(value: str) -> bool:
    if _IPV4.fullmatch(value):
        return True
    if not _IPV6.fullmatch(value):
        return False
    import ipaddress  # only for a word shaped like one

    try:
        ipaddress.ip_address(value)
    except ValueError:
        return False
    return True


def _harmless_atom(value: str) -> bool:
    return bool(_NUMBER.fullmatch(value)) or value.lower() in _HARMLESS_WORDS or _is_ip(value) or _is_path(value)


def _harmless(value: str) -> bool:
    """Whether a value evidently holds no secret (the rule in the module's docstring)."""
    if not value or _harmless_atom(value):
        return True
    parts = _LIST.split(value)
    return len(parts) > 1 and all(part and _harmless_atom(part) for part in parts)


def _url(found: re.Match) -> str:
    shown = found["scheme"] + (f"{REDACTED}@" if found["userinfo"] is not None else "") + found["place"]
    if found["query"] is not None:
        parameters = []
        for parameter in found["query"].split("&"):
            name, assigned, value = parameter.partition("=")
            parameters.append(f"{name}={_leaf(value, name)}" if assigned else _leaf(name, ""))
        shown += "?" + "&".join(parameters)
    if found["fragment"]:
        shown += f"#{REDACTED}"
    return shown


def _leaf(value: str, name: str) -> str:
    """A value given to `name` (one an assignment, a header or a query names): shown when harmless."""
    if _SECRET_NAME.search(name):
        return REDACTED if value else value
    if _harmless(value):
        return value
    return _url(url) if (url := _URL.fullmatch(value)) else REDACTED


def _shaped(value: str) -> str | None:
    """A word of a shape that carries a credential (a URL, user:password@host, a header or pair,
    NAME=VALUE) with it redacted; None for a word of no such shape."""
    if url := _URL.fullmatch(value):
        return _url(url)
    if bare := _BARE_USERINFO.fullmatch(value):
        return f"{REDACTED}@{bare['host']}"
    if header := _HEADER.fullmatch(value):
        name, space, rest = header["name"], header["space"], header["rest"]
        if not _SECRET_HEADER.search(name) and _harmless(rest):
            return value
        if space or _SCRIPT.search(rest):
            return f"{name}:{space}{REDACTED}"
        return REDACTED  # user:password, TOKEN: either half may be the secret
    if assignment := _ASSIGNMENT.fullmatch(value):
        return f"{assignment['name']}={_leaf(assignment['rest'], assignment['name'])}"
    return None


def _secret_option(name: str) -> bool:
    """Whether an option's value is a secret, whatever it looks like (--password -x: -x too)."""
    return name in _PASSWORD_OPTIONS or bool(_SECRET_NAME.search(name))


def _option_value(name: str, value: str, depth: int) -> str:
    """What is shown of the value given to option `name` (separate, attached or after '=')."""
    if _secret_option(name):
        return REDACTED if value else value
    if name == "-c" and _SCRIPT.search(value):
        return _script(value, depth + 1)
    if _harmless(value):
        return value
    return _shaped(value) or REDACTED


def _argument(word: str, depth: int) -> str:
    """A plain argument: shown, but for the credentials of its shape; one with spaces is a script."""
    shaped = _shaped(word)
    if shaped is not None:
        return shaped
    return _script(word, depth + 1) if _SCRIPT.search(word) else word


def _single_dash(word: str, depth: int) -> tuple[str, str | None]:
    """A word -x...: what is shown of it, and the option the next word may be the value of."""
    if word in _JVM_FLAGS:
        return word, None
    if word in _JVM_VALUE_OPTIONS or _SECRET_WORD.fullmatch(word):
        return word, word
    for prefix in _JVM_PREFIXES:
        if word.startswith(prefix) and len(word) > len(prefix):
            value = word[len(prefix) :]
            if prefix == "-XX:" and _JVM_TOGGLE.fullmatch(value):
                return word, None
            if prefix in ("-XX:", "-D") and (assignment := _ASSIGNMENT.fullmatch(value)):
                name = assignment["name"]
                return f"{prefix}{name}={_option_value(name, assignment['rest'], depth)}", None
            return prefix + _option_value(prefix, value, depth), None
    name, value = word[:2], word[2:]
    if not value:
        return word, word
    if len(value) == 1 and name not in _PASSWORD_OPTIONS:
        return word, None  # -la, -rf: one character hides nothing
    return name + _option_value(name, value, depth), None


def _redact_words(words: Sequence[str], depth: int) -> list[str]:
    """Each word as shown (one for one): see the module's docstring."""
    shown: list[str] = []
    option: str | None = None  # the option whose value the next word may be
    for word in words:
        if option in _CLASSPATH_OPTIONS:
            shown.append(f"<classpath: {word.count(':') + 1 if word else 0} entries>")
            option = None
            continue
        if option is not None and (not word.startswith("-") or _secret_option(option)):
            shown.append(_option_value(option, word, depth))
            option = None
            continue
        option = None
        if _SEPARATOR.fullmatch(word):
            shown.append(word)
        elif word in _CLASSPATH_OPTIONS:
            shown.append(word)
            option = word
        elif word.startswith("--") and len(word) > 2:
            name, assigned, value = word.partition("=")
            shown.append(f"{name}={_option_value(name, value, depth)}" if assigned else word)
            option = None if assigned else word
        elif word.startswith("-") and len(word) > 1 and word != "--":
            text, option = _single_dash(word, depth)
            shown.append(text)
        else:
            shown.append(_argument(word, depth))
    return shown


def _unquoted(token: str) -> str:
    """A shell word as the command receives it: its quotes and backslashes removed."""
    return _QUOTED_PART.sub(lambda part: next(group for group in part.groups() if group is not None), token)


def _script(text: str, depth: int) -> str:
    """A script with each word redacted by the rules of a command line; what it does not change is
    shown as written (its quotes and spaces)."""
    if depth > SCRIPT_DEPTH:
        return REDACTED
    tokens = list(_SCRIPT_TOKEN.finditer(text))
    words = [_unquoted(token.group()) for token in tokens]
    shown: list[str] = []
    position = 0
    for token, word, redacted in zip(tokens, words, _redact_words(words, depth), strict=True):
        shown.append(text[position : token.start()])
        if redacted == word:
            shown.append(token.group())
        else:
            shown.append(f"'{redacted}'" if _SCRIPT.search(redacted) else redacted)
        position = token.end()
    shown.append(text[position:])
    return "".join(shown)


def _scanned(word: str) -> tuple[str, str]:
    """What of `word` is read: all of it, or its first SCANNED_CHARACTERS cut back to the start of the
    token they end in (a secret cut in two would show its first half); and what stands for the rest.
    An option's word is cut where the bound falls: its value is redacted unless harmless."""
    if len(word) <= SCANNED_CHARACTERS:
        return word, ""
    kept = word[:SCANNED_CHARACTERS]
    if not word.startswith("-"):
        kept = kept[: max(kept.rfind(space) for space in " \t\n") + 1]
    return kept, f"<{len(word) - len(kept):,} characters not shown>"


def redact_command(argv: Sequence[str]) -> str:
    """The command line, fit to store or print: every value that may be a secret redacted, a classpath
    counted, each argument read up to SCANNED_CHARACTERS (the rule: the module's docstring)."""
    scanned = [_scanned(word) for word in argv]
    if not scanned:
        return ""
    (program, _), *arguments = scanned
    texts = [_argument(program, 0), *_redact_words([word for word, _ in arguments], 0)]  # argv[0]: maybe a line
    return " ".join(text + rest for text, (_, rest) in zip(texts, scanned, strict=True))
