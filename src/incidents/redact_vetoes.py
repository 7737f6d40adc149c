"""What is not a secret: the vetoes of `incidents.redact`'s rules.

A rule of `redact` finds what may be a secret by its shape; a veto here looks at the match
and its neighbourhood and keeps what is not one: a 40- or 88-character base64 token with no
"secret" or "key" word near it, a digest, a path, a placeholder, a pytest id, prose after a
key word. Imported by `redact` on the capture path: stdlib `re` only, patterns compiled on
first use.
"""

from __future__ import annotations

import re

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Iterator

# The label of a PEM private key block: `RSA PRIVATE KEY`, `PGP PRIVATE KEY BLOCK`...
PEM_LABEL = r"(?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?"
# Values of a secret-named key that are not secrets (code or config placeholders).
KEEP_VALUES = frozenset({"none", "null", "nil", "true", "false", "undefined"})
AWS_KEY_ID = r"(?:AKIA|ASIA|AGPA|AIDA|AROA|ANPA|ANVA|AIPA)[A-Z0-9]{16}"

# How far (characters) a bare cloud key may be from an AWS key id or, on its line, from the
# word "key"; the word "secret" counts anywhere on the key's line up to `_LINE` characters
# before it. A value in a JSON/YAML block (`"value": "..."`) also looks at the `_BLOCK`
# entries above it (`"keyName": "key1"` two lines up in `az storage account keys list`).
_NEAR = 80
_LINE = 400
_BLOCK = 3
_aws_key_id_re: re.Pattern[str] | None = None
_pem_begin_re: re.Pattern[str] | None = None


def _looks_random(value: str, distinct: int) -> bool:
    """Upper and lower case, a digit, and many distinct characters: random key material,
    not a hex digest or repetitive data."""
    return (
        len(set(value)) >= distinct
        and any(c.isupper() for c in value)
        and any(c.islower() for c in value)
        and any(c.isdigit() for c in value)
    )


def _line_before(text: str, start: int, limit: int = _NEAR) -> str:
    """Up to `limit` characters before `start`, on its line."""
    before = text[max(0, start - limit) : start]
    return before[before.rfind("\n") + 1 :]


_entry_re: re.Pattern[str] | None = None
_digest_re: re.Pattern[str] | None = None


def _block_above(text: str, start: int) -> Iterator[str]:
    """The entries of a JSON/YAML block above the value at `start`, nearest first: only
    when the value's own line is an entry (`"value": "`, `value: `), and only as long as
    the lines above are entries too (a `}` or a line of prose ends the block)."""
    global _entry_re
    if _entry_re is None:
        _entry_re = re.compile(r"[ \t]*(?:- )?[\"']?[\w.-]+[\"']?[ \t]*[:=][ \t]*[\"']?")
    line_start = text.rfind("\n", 0, start) + 1
    if _entry_re.fullmatch(text, line_start, start) is None:
        return
    end = line_start - 1
    for _ in range(_BLOCK):
        if end <= 0:
            return
        begin = text.rfind("\n", 0, end) + 1
        line = text[max(begin, end - 200) : end]
        if _entry_re.match(line) is None:
            return
        yield line
        end = begin - 1


def _after_a_digest_name(text: str, start: int) -> bool:
    """Whether the word just before `start` names a digest (`sha512 `, `SHA-256: `,
    `etag=`, `checksum `): base64 of a hash, not a key, whatever words come before."""
    global _digest_re
    if _digest_re is None:
        _digest_re = re.compile(
            r"(?:sha-?(?:1|224|256|384|512)|md5|blake2[bs]?|digest|checksum|hash|etag"
            r"|integrity|fingerprint)[\"']?[ \t]*[:=]?[ \t]*[\"']?",
            re.IGNORECASE,
        )
    before = _line_before(text, start, 24)
    return any(
        _digest_re.fullmatch(before, i) is not None and (i == 0 or not before[i - 1].isalnum())
        for i in range(len(before))
    )


_word_res: dict[str, re.Pattern[str]] = {}


def _says(before: str, word: str) -> bool:
    """Whether `before` has `word` as a word of its own, in any of the ways names are
    written: `key`, `storage_key`, `AccountKey`, `KEY`; not inside another word
    (`monkey`, `secrets.yaml`): a digest after `monkey patched` is no storage key; nor in a
    path or resource name (`secret/app-config`, `kv/secret/db`)."""
    pattern = _word_res.get(word)
    if pattern is None:
        low, cap, up = word, word.capitalize(), word.upper()
        pattern = _word_res[word] = re.compile(
            rf"(?<![A-Za-z/])(?:{low}|{cap}|{up})(?![a-z/])|(?<=[a-z]){cap}(?![a-z/])"
            rf"|(?<![A-Za-z/]){up}(?![A-Za-z/])"
        )
    return pattern.search(before) is not None


def not_an_aws_secret(m: re.Match[str], text: str) -> bool:
    """Veto for a bare 40-character token: it is an AWS secret access key only when it looks
    random (upper and lower case and a digit, so no git SHA or other hex digest) and an AWS
    key id is near it or the word "secret" is on its line before it."""
    global _aws_key_id_re
    value = m.group("val")
    if not _looks_random(value, 15) or value.count("/") >= 4:
        return True  # a path (`/home/User1/app/conf/Value42`); 4 "/" in a key: 1 in 250
    start, end = m.span("val")
    if _after_a_digest_name(text, start):
        return True
    if _says(_line_before(text, start, _LINE), "secret"):
        return False
    if _aws_key_id_re is None:
        _aws_key_id_re = re.compile(rf"(?<![A-Z0-9]){AWS_KEY_ID}(?![A-Z0-9])")
    near = text[max(0, start - _NEAR) : end + _NEAR]
    return _aws_key_id_re.search(near) is None


def not_an_azure_key(m: re.Match[str], text: str) -> bool:
    """Veto for a bare 88-character base64 value: an Azure storage key only after the word
    "key" on its line or in the block entries above it. A SHA-512 in base64 has the same
    shape: `sha512-...` integrity strings and a value right after a digest name are kept."""
    start = m.start("val")
    if not _looks_random(m.group("val"), 24) or _after_a_digest_name(text, start):
        return True
    if _says(_line_before(text, start), "key"):
        return False
    return not any(_says(line, "key") for line in _block_above(text, start))


def after_space(m: re.Match[str], text: str) -> bool:
    """Veto for options: `-u`/`--password` must start a word."""
    start = m.start()
    return start > 0 and not text[start - 1].isspace()


def not_user_password(m: re.Match[str], text: str) -> bool:
    """Veto for `-u USER:PASS`: the option must start a word, and two shapes that are not a
    credential are kept: `date -u +%Y-%m-%dT%H:%M:%SZ` (a format) and `docker run -u
    1000:1000` (a uid and gid)."""
    if after_space(m, text):
        return True
    user = m.group(0).split(None, 1)[1].split(":", 1)[0]
    value = m.group("val")
    return user.startswith("+") or (user.isdigit() and value.isdigit())


def no_begin_was_cut(m: re.Match[str], _text: str) -> bool:
    """Veto for the first PEM END line: it ends a cut-off block only when nothing before it
    is a BEGIN line (that block was redacted whole) and something before it is not blank."""
    global _pem_begin_re
    value = m.group("val")
    if not value.strip():
        return True
    if _pem_begin_re is None:
        _pem_begin_re = re.compile(rf"-----BEGIN {PEM_LABEL}-----")
    return _pem_begin_re.search(value) is not None


def not_a_secret(m: re.Match[str], text: str) -> bool:
    """Veto for key/value pairs: placeholders, references, prose, paths and `PWD=/dir`."""
    value = m.group(m.lastindex or 0).lower()
    if value in KEEP_VALUES or states_a_value(value):
        return True
    word = m.group("word")
    key_start = m.start("word")
    while key_start > 0 and (text[key_start - 1].isalnum() or text[key_start - 1] in "_-."):
        key_start -= 1
    if key_start > 0 and text[key_start - 1] in "/\\":  # a file name: `/etc/passwd: missing`
        return True
    if key_start > 0 and text[key_start - 1] == ":" and text[m.end("word")] == ":":
        return True  # a segment of an ARN or URN: `...:secret:MySecret-Ab3dEf`
    if _in_a_test_id(text, key_start):
        return True
    if m.lastindex == m.re.groupindex["val"] and _is_prose_or_path(m, text, word, key_start):
        return True
    if value.endswith(word):  # `api_key=api_key`, `token = self.token`, `TOKEN=$TOKEN`
        return True
    if word == "pwd" and value.startswith(("/", "~")):  # the shell's PWD/OLDPWD: a directory
        start = m.start("word")
        key_start = start
        while key_start > 0 and (text[key_start - 1].isalnum() or text[key_start - 1] == "_"):
            key_start -= 1
        return text[key_start:start].lower() in ("", "old")
    return False


# Words that say what state a value is in rather than being it: `DB_PASSWORD: missing`,
# `token: <unset>`, `"password": "required"`. No credential is spelled as one of these.
_STATE_WORDS = frozenset(
    {
        "missing",
        "unset",
        "empty",
        "blank",
        "required",
        "undefined",
        "absent",
        "unknown",
        "invalid",
        "expired",
        "redacted",
        "hidden",
        "masked",
        "omitted",
        "none",
        "null",
        "nil",
        "n/a",
        "na",
        "not set",
        "not found",
        "not provided",
        "not defined",
        "not configured",
        "must be set",
        "is required",
        "is missing",
        "is empty",
        "is not set",
    }
)


def states_a_value(value: str) -> bool:
    """Whether a secret's value is a word of prose saying what state it is in (`missing`,
    `not set`, `<unset>`, `(empty)`, `[not provided]`), in any case, bracketed or not."""
    if len(value) > 24:
        return False
    inner = value.strip().rstrip(".,;:!").strip("<>()[]{}*_").strip().lower()
    return inner in _STATE_WORDS


def _a_clause_follows(text: str, end: int) -> bool:
    """Whether a sentence goes on after the value at `end`: `, export it first`, `; aborting`,
    `. Set it in CI`: punctuation, a space, and a word."""
    after = text[end : end + 3]
    return len(after) == 3 and after[0] in ",;." and after[1] == " " and after[2].isalpha()


_test_id_re: re.Pattern[str] | None = None
_path_re: re.Pattern[str] | None = None
# Key words whose values may be written as a path to a file holding the secret.
_FILE_WORDS = frozenset({"secret", "token", "key", "credential", "credentials"})


def _in_a_test_id(text: str, key_start: int) -> bool:
    """Whether the key sits in the parameters of a test id: `test_login[token=None-x0]`."""
    global _test_id_re
    if _test_id_re is None:
        _test_id_re = re.compile(r"test\w*\[[^\]\s]*")
    line = _line_before(text, key_start)
    bracket = line.rfind("[")
    if bracket < 0:
        return False
    head = line.rfind("test", 0, bracket)
    return head >= 0 and _test_id_re.fullmatch(line, head) is not None


def _is_prose_or_path(m: re.Match[str], text: str, word: str, key_start: int) -> bool:
    """A bare value that is a word of a sentence (`password: must be at least 8 characters`,
    `Unexpected token: punc (})`), a count of tokens (`prompt_token: 1523`) or a path to a
    key file (`private_key: /home/ci/.ssh/id_ed25519 not found`) is no secret."""
    global _path_re
    value = m.group("val")
    rest = text[m.end("val") : m.end("val") + 2]
    colon = ":" in text[m.end("word") : m.start("val")]  # `key=word word` is a command line
    a_word = value.isalpha() and value.isascii() and len(value) >= 3 and value[1:].islower()
    # A word followed by another word, a parenthesis or a clause (`missing, export it`):
    # a message, not a value.
    if colon and a_word and rest[:1] in (" ", "\t") and (rest[1:].isalpha() or rest[1:] == "("):
        return True
    if colon and a_word and _a_clause_follows(text, m.end("val")):
        return True
    if word == "token" and value.isdigit() and len(value) <= 9 and key_start < m.start("word"):
        return True  # `prompt_token: 1523`: a prefixed token word counts tokens
    if _path_re is None:
        _path_re = re.compile(r"(?:~|\.{1,2})?(?:/[\w.@+-]+){2,}/?")
    tail = word.rsplit("_", 1)[-1].rsplit("-", 1)[-1].rsplit(".", 1)[-1]
    return (word in _FILE_WORDS or tail in _FILE_WORDS) and _path_re.fullmatch(value) is not None


def not_a_user_password_pair(m: re.Match[str], _text: str) -> bool:
    """Veto for a registry `auth` value: it is a credential only when it is base64 of
    `user:password` (what docker, podman and buildah store); `"auth": "basic"`, a word, a
    digest or other base64 is kept."""
    import binascii

    value = m.group(m.lastindex or 0)
    try:
        decoded = binascii.a2b_base64(value + "=" * (-len(value) % 4)).decode("utf-8")
    except (binascii.Error, UnicodeDecodeError):
        return True
    user, colon, password = decoded.partition(":")
    return not (colon and user and password and decoded.isprintable())


def not_a_pgpass_line(m: re.Match[str], _text: str) -> bool:
    """Veto for `host:port:database:user:password`: a host of digits (a time, a MAC
    address) or a database of digits (`file.py:12:4:E501:message`, a line and a column)
    is no `.pgpass` line."""
    return m.group("host").isdigit() or m.group("db").isdigit()
