"""Redact secrets from text and JSON-like values before they reach any sink.

Runs on the capture path, so it imports only `re` and compiles its patterns on first
use. Every rule names the literal triggers it needs; a rule whose triggers are absent
from the text is skipped, so clean log text costs a few substring scans.

What is redacted (replaced by `[REDACTED]`, keeping the key or scheme name visible):

- PEM private key blocks (RSA, EC, DSA, OPENSSH, PGP, ENCRYPTED, PKCS#8), whole block,
  also when the END line was cut off (to the end of the text) and when the BEGIN line was
  (a log tail cut inside a key: an END line with no BEGIN before it means everything from
  the start of the text up to it is key material);
- credentials in URLs (`scheme://user:[REDACTED]@host`) and `curl -u user:pass`;
- bare cloud secret keys, by shape and neighbourhood: an AWS secret access key (40
  characters of [A-Za-z0-9/+], mixed case with a digit, not hex) within a line or two of an
  AWS key id or after the word "secret" on its line; an Azure storage account key (86
  base64 characters and `==`) after the word "key" on its line or in the JSON/YAML entries
  just above it; a GCP service-account private key is a PEM block (below) or the value of
  `"private_key"`;
- passwords on command lines (`mysql -pPW`, `docker login -p PW`, `sshpass -p PW`,
  `redis-cli -a PW`/`--pass PW`, redis's `AUTH PW`), in netrc entries, `.pgpass` lines
  (`host:port:db:user:PW`), a registry's `"auth"` (base64 of `user:PW`, docker's
  `config.json`), and cookie values (`Cookie:`, `Set-Cookie:`);
- the same in a command line rendered as a Python list or tuple (`str(CalledProcessError)`:
  `['curl', '-u', 'bob:PW']`, `['sshpass', '-p', 'PW']`, `['tool', '--token', 'PW']`);
- vendor tokens: AWS access key ids, Google API keys, GitHub, GitLab, Slack (tokens and
  webhook paths), Stripe, OpenAI/Anthropic `sk-...`, npm, PyPI, Hugging Face, SendGrid,
  JWTs;
- `Authorization:` header values (Bearer, Basic, Token, ...) and bare `Bearer <token>`;
- `key=value` / `key: value` / `"key": "value"` / `--key value` pairs whose key *ends*
  with a secret word (password, passwd, pwd, passphrase, secret, token, api_key,
  access_key, secret_key, private_key, client_secret, account_key, credentials,
  shared access key/signature); query-string `sig=` (Azure SAS).

What is deliberately kept: hex digests, git SHAs, UUIDs, ordinary base64, paths,
version strings, prose ("the token was invalid"), plural or prefixed words that are
not keys (`max_tokens=4096`, `token_type=bearer`), a key with no value (`password:`),
values that are code rather than data (`token = get_token()`, `os.environ["X"]`),
`PWD=/some/dir` (the shell's working directory), literal None/null/true/false, pytest ids
(`test_x[token=None-0]`), prose after a key word (`secret: not found`), a path as the value
of a key, token or secret, and base64 right after a digest name (`sha512 ...`).
"""

from __future__ import annotations

import re

from incidents.redact_argv import ArgvLists
from incidents.redact_vetoes import (
    AWS_KEY_ID,
    KEEP_VALUES,
    PEM_LABEL,
    after_space,
    no_begin_was_cut,
    not_a_pgpass_line,
    not_a_secret,
    not_a_user_password_pair,
    not_an_aws_secret,
    not_an_azure_key,
    not_user_password,
    states_a_value,
)

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable, Iterator
    from typing import Any

    # (literal triggers, match on lowercased text?, pattern, veto: keep this match?).
    # The last capturing group of a pattern's match is the secret that is replaced.
    _Veto = Callable[[re.Match[str], str], bool]
    _Rule = tuple[tuple[str, ...], bool, "_Lazy | _CookieValues | ArgvLists", _Veto | None]

__all__ = ["REDACTED", "is_secret_key", "redact", "redact_json"]

REDACTED = "[REDACTED]"

# Words a key must end with to name a secret (`[_.-]` between parts is optional).
_SECRET_WORDS = (
    r"password|passwd|pwd|passphrase|secret|token|api[_.-]?key|access[_.-]?key"
    r"|secret[_.-]?key|private[_.-]?key|client[_.-]?secret|account[_.-]?key"
    r"|credentials?|shared[_.-]?access[_.-]?(?:key|signature)"
)

# Vendor token formats: (literal triggers, pattern). Matched as whole tokens.
_VENDOR_TOKENS = (
    (
        ("AKIA", "ASIA", "AGPA", "AIDA", "AROA", "ANPA", "ANVA", "AIPA"),
        AWS_KEY_ID,  # AWS access key id
    ),
    (("AIza",), r"AIza[0-9A-Za-z_-]{35}"),  # Google API key
    (
        ("ghp_", "gho_", "ghu_", "ghs_", "ghr_", "github_pat_"),
        r"gh[pousr]_[A-Za-z0-9]{30,255}|github_pat_[A-Za-z0-9_]{22,255}",  # GitHub
    ),
    (("glpat-",), r"glpat-[A-Za-z0-9_-]{20,}"),  # GitLab
    (("xox", "xapp-"), r"xox[abposr]-[A-Za-z0-9-]{10,}|xapp-[0-9]-[A-Za-z0-9-]{10,}"),  # Slack
    (("k_live_", "k_test_"), r"[sr]k_(?:live|test)_[A-Za-z0-9]{16,}"),  # Stripe
    (("sk-",), r"sk-[A-Za-z0-9_-]{20,}"),  # OpenAI, Anthropic (sk-ant-...), sk-proj-...
    (("npm_",), r"npm_[A-Za-z0-9]{36}"),  # npm
    (("pypi-",), r"pypi-AgE[A-Za-z0-9_-]{50,}"),  # PyPI
    (("hf_",), r"hf_[A-Za-z0-9]{30,}"),  # Hugging Face
    (("SG.",), r"SG\.[A-Za-z0-9_-]{16,32}\.[A-Za-z0-9_-]{30,64}"),  # SendGrid
    (("eyJ",), r"eyJ[A-Za-z0-9_-]{5,}\.eyJ[A-Za-z0-9_-]{5,}\.[A-Za-z0-9_-]*"),  # JWT
)

_rules: list[_Rule] | None = None
_any_trigger_re: re.Pattern[str] | None = None
_secret_keys: dict[str, bool] = {}
_secret_key_re: re.Pattern[str] | None = None


class _Lazy:
    """A pattern compiled on first use: most texts trigger only a few rules, and compiling
    all of them would cost more than scanning 64 KiB."""

    __slots__ = ("_flags", "_pattern", "_source")

    def __init__(self, source: str, flags: int = 0) -> None:
        self._source = source
        self._flags = flags
        self._pattern: re.Pattern[str] | None = None

    def finditer(self, text: str) -> Iterator[re.Match[str]]:
        if self._pattern is None:
            self._pattern = re.compile(self._source, self._flags)
        return self._pattern.finditer(text)


def _build_rules() -> list[_Rule]:
    # Order matters: whole PEM blocks first, then one whose BEGIN was cut off, URLs, vendor
    # tokens, headers, and the generic key/value pairs last. Rules on lowercased text are
    # written in lowercase.
    vendor = "|".join(pattern for _, pattern in _VENDOR_TOKENS)
    return [
        (
            ("-----BEGIN",),
            False,
            _Lazy(
                rf"-----BEGIN (?P<label>{PEM_LABEL})-----"
                r"(?P<val>.*?(?=-----END (?P=label)-----)|.*\Z)",
                re.DOTALL,
            ),
            None,
        ),
        (
            ("-----END",),
            False,
            _Lazy(rf"\A(?P<val>.*?)-----END {PEM_LABEL}-----", re.DOTALL),
            no_begin_was_cut,
        ),
        (
            (
                "secret",
                "Secret",
                "SECRET",
                "AKIA",
                "ASIA",
                "AGPA",
                "AIDA",
                "AROA",
                "ANPA",
                "ANVA",
                "AIPA",
            ),
            False,
            _Lazy(r"(?<![A-Za-z0-9/+=_.-])(?P<val>[A-Za-z0-9/+]{40})(?![A-Za-z0-9/+=_.-])"),
            not_an_aws_secret,
        ),
        (
            ("==",),
            False,
            _Lazy(r"(?<![A-Za-z0-9/+=_.-])(?P<val>[A-Za-z0-9/+]{86}==)(?![A-Za-z0-9/+=_.-])"),
            not_an_azure_key,
        ),
        (("://",), False, _Lazy(r"://[^:/@\s]*:(?P<val>[^@/\s]+)@"), None),
        (
            ("-u", "--user"),
            False,
            _Lazy(r"-(?:u|-user)[ \t]+[^\s:]+:(?P<val>[^\s'\"]+)"),
            not_user_password,
        ),
        (
            ("hooks.slack.com/services/",),
            False,
            _Lazy(r"hooks\.slack\.com/services/(?P<val>[A-Za-z0-9/_-]+)"),
            None,
        ),
        (
            tuple(t for triggers, _ in _VENDOR_TOKENS for t in triggers),
            False,
            _Lazy(rf"(?<![A-Za-z0-9_-])(?P<val>{vendor})(?![A-Za-z0-9_-])"),
            None,
        ),
        (
            ("authorization",),
            True,
            _Lazy(
                r"authorization[\"']?[ \t]*[:=][ \t]*(?:[rbfu]{0,2}[\"'])?"
                r"(?:(?:bearer|basic|token|digest|negotiate|ntlm|apikey)[ \t]+)?"
                r"(?P<val>[^\s\"'\[]+)"
            ),
            None,
        ),
        (
            ("bearer",),
            True,
            _Lazy(r"\bbearer[ \t]+(?P<val>[a-z0-9._~+/-]{16,}=*)"),
            None,
        ),
        (("sig=",), True, _Lazy(r"[?&]sig=(?P<val>[^&\s\"'#]+)"), None),
        (
            ("cookie",),
            True,
            _CookieValues(),
            None,
        ),
        (("',", '",'), False, ArgvLists(_SECRET_WORDS), None),
        (
            ("mysql", "mariadb", "login", "sshpass"),
            False,
            _Lazy(
                # mysql takes its password glued to -p (`-p pw` prompts, then names a
                # database); registry logins and sshpass take it as the next word.
                # The option is looked for within 400 characters of the program's name:
                # an unbounded look would scan the rest of the line from every name.
                r"(?:\b(?:mysql|mariadb)[\w-]{0,40}[ \t][^\n]{0,400}?(?<=[ \t])-p(?=\S)"
                r"|\b(?:docker|podman|buildah|skopeo|nerdctl|helm[ \t]+registry|oras)[ \t]+login\b"
                r"[^\n]{0,400}?[ \t]-p[ \t]+"
                r"|\bsshpass\b[^\n]{0,400}?[ \t]-p[ \t]*)"
                r"(?:'(?P<sq>[^'\n]+)'|\"(?P<dq>[^\"\n]+)\"|(?P<val>(?![-\[])[^\s'\"]+))"
            ),
            None,
        ),
        (
            # redis-cli's password option (`-a PW`, `--pass PW`), its variable and the
            # `AUTH [user] PW` command typed at its prompt (`127.0.0.1:6379> AUTH PW`).
            ("redis-cli", "REDISCLI_AUTH", "AUTH "),
            False,
            _Lazy(
                r"(?:\bredis-cli\b[^\n]{0,400}?[ \t](?:-a|--pass)[ \t]+"
                r"|\bREDISCLI_AUTH=|> ?AUTH[ \t]+(?:[^\s'\"]+[ \t]+(?=\S))?)"
                r"(?:'(?P<sq>[^'\n]+)'|\"(?P<dq>[^\"\n]+)\"|(?P<val>(?![-\[])[^\s'\"]+))"
            ),
            None,
        ),
        (
            # a docker/podman `config.json` entry: `"auth": "<base64 of user:password>"`
            ("auth", "Auth", "AUTH"),
            False,
            _Lazy(
                r"(?<![\w-])(?i:auth)[\"']?[ \t]*[:=][ \t]*"
                r"(?:\"(?P<dq>[A-Za-z0-9+/]{4,}=*)\"|(?P<val>[A-Za-z0-9+/]{4,}=*)(?![\w+/=]))"
            ),
            not_a_user_password_pair,
        ),
        (
            # a `.pgpass` line: `host:port:database:user:password`
            (":",),
            False,
            _Lazy(
                r"(?<![^\s\"'=>])(?P<host>[^:\s\"'=#]+):(?:\d{1,5}|\*):(?P<db>[^:\s\"']+)"
                r":[^:\s\"']+:(?P<val>(?:[^\\\s:\"']|\\.)+)(?![^\s\"'])"
            ),
            not_a_pgpass_line,
        ),
        (
            ("machine", "default"),
            False,
            _Lazy(
                # A netrc entry: `machine host login bob password pw`, on one line or many.
                r"\b(?:machine[ \t\n]+\S+|default)(?:[ \t\n]+(?:login|account|port)[ \t\n]+\S+)+"
                r"[ \t\n]+password[ \t\n]+(?P<val>(?!\[REDACTED\])\S+)"
            ),
            None,
        ),
        (
            ("pass", "pwd", "secret", "token", "key", "credential", "shared"),
            True,
            _Lazy(
                rf"(?P<word>{_SECRET_WORDS})"
                r"(?:\\?[\"'][ \t]*(?:[:=]|=>)|[ \t]*(?:[:=]|=>))[ \t]*"
                r"(?:"
                r"\"(?P<dq>(?:[^\"\\\n]|\\.)+)\""  # "double quoted"
                r"|'(?P<sq>[^'\n]+)'"  # 'single quoted'
                r"|\\\"(?P<esc>[^\"\\\n]+)\\\""  # \"escaped quotes\" (JSON in a string)
                # bare, up to the next query parameter, unless it is a call or a subscript
                r"|(?P<val>(?:[^\s&\"'\\,;()\[\]{}<>]|&(?![\w.-]+=))++)(?![(\[])"
                r")"
            ),
            not_a_secret,
        ),
        (
            ("--",),
            True,
            _Lazy(
                # an option starts a word: in a run of dashes or letters only its first
                # character may start a match (each would scan the whole run again)
                rf"(?<![\w-])--?[a-z0-9_-]*?(?P<word>{_SECRET_WORDS})[ \t]+"
                r"(?P<val>(?!-)[^\s\"']+)"
            ),
            lambda m, text: after_space(m, text) or not_a_secret(m, text),
        ),
    ]


class _CookieValues:
    """The values of `Cookie:` headers (each `name=value` of the line, names kept) and of
    `Set-Cookie:` headers (the first pair: the attributes after it are no secret)."""

    __slots__ = ("_header", "_pair")

    def __init__(self) -> None:
        self._header: re.Pattern[str] | None = None
        self._pair: re.Pattern[str] | None = None

    def finditer(self, text: str) -> Iterator[re.Match[str]]:
        if self._header is None or self._pair is None:
            self._header = re.compile(
                r"(?<![a-z0-9_-])(?P<set>set-)?cookie[\"']?[ \t]*:[ \t]*(?P<val>[^\r\n\"']+)"
            )
            # name=value: a header of words after "cookie:" is prose, not a cookie
            self._pair = re.compile(
                r"(?<![^=;\s\"'])[^=;\s\"']+=(?P<val>(?!\[REDACTED\])[^;\s\"']+)"
            )
        for header in self._header.finditer(text):
            start, end = header.span("val")
            for pair in self._pair.finditer(text, start, end):
                if pair.group("val").lower() not in KEEP_VALUES:
                    yield pair
                if header.group("set"):
                    break


def _apply(rule: _Rule, text: str, haystack: str) -> str:
    _, _, pattern, veto = rule
    parts: list[str] = []
    pos = 0
    for m in pattern.finditer(haystack):
        if veto is not None and veto(m, text):
            continue
        start, end = m.span(m.lastindex or 0)
        parts.append(text[pos:start])
        parts.append(REDACTED)
        pos = end
    if not parts:
        return text
    parts.append(text[pos:])
    return "".join(parts)


def _lower(text: str) -> str:
    """Lowercase without moving any character (rules map match spans back onto `text`)."""
    lowered = text.lower()
    if len(lowered) != len(text):  # a few non-ASCII letters lowercase to two characters
        lowered = "".join(c.lower() if len(c.lower()) == 1 else c for c in text)
    return lowered


# Up to this length, `redact` looks for its triggers one by one rather than compiling
# them into one pattern (~1 ms, more than the tests cost on a message of a capture).
_SCAN_BY_WORD = 4096
_every: tuple[str, ...] = ()


def _triggers(rules: list[_Rule]) -> tuple[str, ...]:
    """Every rule's triggers, lowercased, the longest first."""
    global _every
    if not _every:
        _every = tuple(
            sorted({t.lower() for rule in rules for t in rule[0]}, key=len, reverse=True)
        )
    return _every


def redact(text: str) -> str:
    """Return `text` with every recognised secret replaced by `[REDACTED]`."""
    global _rules, _any_trigger_re
    if _rules is None:
        _rules = _build_rules()
    first = _lower(text)
    if len(first) <= _SCAN_BY_WORD:  # a message, a key: a few substring tests, no compile
        if not any(t in first for t in _triggers(_rules)):
            return text
    else:  # one scan: most texts of a document hold no trigger
        if _any_trigger_re is None:
            _any_trigger_re = re.compile("|".join(map(re.escape, _triggers(_rules))))
        if _any_trigger_re.search(first) is None:
            return text
    lowered: str | None = first
    for rule in _rules:
        triggers, on_lower = rule[0], rule[1]
        if on_lower:
            if lowered is None:
                lowered = _lower(text)
            haystack = lowered
        else:
            haystack = text
        if any(t in haystack for t in triggers):
            new = _apply(rule, text, haystack)
            if new is not text:
                text = new
                lowered = None
    return text


# What every secret key name holds (ASCII, lowercased): each alternative of the
# `is_secret_key` pattern ends with one of these words.
_KEY_WORDS = ("pass", "pwd", "secret", "token", "key", "credential", "signature", "auth",
              "cookie")  # fmt: skip


def is_secret_key(key: str) -> bool:
    """True when a mapping key names a secret (`password`, `api_token`, `X-Api-Key`...)."""
    global _secret_key_re
    known = _secret_keys.get(key)
    if known is not None:
        return known
    if key.isascii() and not any(w in key.lower() for w in _KEY_WORDS):
        return False  # `cwd`, `host`, `pid`: no pattern to compile for them
    if _secret_key_re is None:
        _secret_key_re = re.compile(
            rf".*(?:{_SECRET_WORDS})|_?auth|(?:proxy[_-]?)?authorization|(?:set[_-]?)?cookie",
            re.IGNORECASE,
        )
    answer = _secret_key_re.fullmatch(key) is not None
    if len(_secret_keys) < 4096:  # a document's keys repeat: field names
        _secret_keys[key] = answer
    return answer


def _holds_nothing(value: Any) -> bool:
    """None, a boolean, "" or a word saying the value's state (`"missing"`, `"<unset>"`)."""
    return (
        value is None
        or isinstance(value, bool)
        or value == ""
        or (isinstance(value, str) and states_a_value(value))
    )


def redact_json(obj: Any) -> Any:
    """Redact a JSON-like value recursively, returning a new value.

    Strings are passed through `redact`. The value under a key that names a secret is
    replaced wholesale (whatever its type), except None, booleans, empty strings and a word
    saying the value's state (`"missing"`), which hold nothing secret. Keys are redacted
    like any other string.
    """
    if isinstance(obj, str):
        return redact(obj)
    if isinstance(obj, dict):
        out: dict[Any, Any] = {}
        for key, value in obj.items():
            if isinstance(key, str):
                if is_secret_key(key) and not _holds_nothing(value):
                    out[redact(key)] = REDACTED
                    continue
                key = redact(key)
            out[key] = redact_json(value)
        return out
    if isinstance(obj, list):
        return [redact_json(item) for item in obj]
    if isinstance(obj, tuple):
        return tuple(redact_json(item) for item in obj)
    return obj
