"""Rules that read an exception by what its own name and message say, for the libraries no
other table names: a third-party exception ends a Python traceback as `module.Name:
message` (kafka.errors.NoBrokersAvailable, smtplib.SMTPAuthenticationError), a JVM one as
`Caused by: pkg.Name: message`, and its name is usually a sentence in CamelCase
(`...Connection...`, `...Timeout...`, `...Authentication...`). Row format:
`incidents.rules`.

The prefilter sees whole words only, so `AMQPConnectionError` is one word, not
"connection": a name is read where a word marks it as an exception's, a qualifying
module (`errors.`, `exceptions.`, `exc.`, `smtplib.`, ...), `Caused by:` or `Exception in
thread`. A name no such word qualifies (a bare JS `XError:`, Ruby `Foo::XError`) is read
by its message, the credential rows below.

Credentials: README's table makes a *missing* credential env (set-up: nothing was sent)
and a *refused* one never_retry (someone must issue a new one). A refusal inside a failure
to connect or an exception's message is REFINED, so it beats the connection words and the
exception's name around it (`failed to connect ... ORA-01017: invalid username/password`);
a missing credential is REFINED too, so `Stripe::AuthenticationError - No API key
provided` is env, not the refusal its name suggests.
"""

from __future__ import annotations

from incidents.rules import (
    GENERIC,
    NAMED,
    RATE_LIMIT,
    REFINED,
    TIMEOUT,
    UNKNOWN,
    E,
    N,
    Row,
    T,
)

# module names that mark what follows as an exception class (not `error` or `err`: as
# words they are on most lines of most logs, and every row they gate is compiled and tried) (Python prints a third-party
# exception with its module: `kafka.errors.X`, `pika.exceptions.X`, `sqlalchemy.exc.X`,
# `aiohttp.client_exceptions.X`, `paramiko.ssh_exception.X`, and the
# stdlib's network clients `smtplib.X`, `ftplib.X`, `imaplib.X`, `poplib.X`)
_QUALIFIERS = (
    "errors exceptions exception exc _exceptions client_exceptions ssh_exception errorfactory"
    " smtplib ftplib imaplib poplib"
)
_NAME_WORDS = _QUALIFIERS + " caused"

# the qualified name up to its last part: `x.errors.`, `Caused by: a.b.`, `Exception in
# thread "main" a.b.`
_QUALIFIED = (
    r"(?:\b(?i:" + "|".join(_QUALIFIERS.split()) + r")(?:\.|::)(?:\w+(?:\.|::))*"
    r"|\bCaused by: (?:[\w$]+\.)*|\bException in thread \"[^\"\n]*\" (?:[\w$]+\.)*)"
)


def _named(stems: str, unless: str = "") -> str:
    """A qualified exception whose last name part contains one of `stems` (a regex
    alternation, case-insensitive), unless it contains one of `unless`."""
    guard = rf"(?!\w*(?i:{unless}))" if unless else ""
    return rf"{_QUALIFIED}{guard}[\w$]*?(?i:{stems})\w*(?!\.\w|::|\w)"


_MISSING_NAME = (
    r"NoCredential|MissingCredential|Credentials?NotFound|CredentialUnavailable|NoApiKey"
    r"|MissingApiKey|ApiKeyMissing|NoAuthToken|MissingToken|TokenNotFound"
    r"|DefaultCredentials"
)

# a credential the other side refused, in words
_REFUSED_WORDS = (
    r"(?i:\b(?:invalid|incorrect|wrong|bad) (?:user(?: ?name)?|login|password|passphrase"
    r"|credentials?)(?:\s*(?:/|or|and)\s*(?:password|user ?name|login))?\b"
    r"|\b(?:login|logon|log-in|sign[- ]?in|bind|authentication|auth)(?: attempt)? (?:was "
    r"|has been )?(?:denied|refused|rejected|incorrect|unsuccessful|not successful)\b"
    r"|\b(?:user ?name|password|credentials?)(?: (?:and|or) (?:password|user ?name))? (?:was "
    r"|were |are |is )?(?:not accepted|rejected|refused)\b)"
)
# (gated by the verdict's word, not the noun's: `log`, `user`, `auth` are on many lines)
_REFUSED_WORDS_GATE = (
    "invalid incorrect wrong bad denied refused rejected unsuccessful successful accepted"
)
# ... and by a protocol's or a product's code for it: Oracle ORA-01017, LDAP
# invalidCredentials (49), Slack invalid_auth/not_authed, IMAP AUTHENTICATIONFAILED, SMTP
# 535 5.7.x, FTP 530
_REFUSED_CODES = (
    r"\bORA-0?1017\b|\b(?i:invalid_?credentials)\b|\binvalid_auth\b|\bnot_authed\b"
    r"|\bAUTHENTICATIONFAILED\b|\b535[ ,-]\s*b?['\"]?5\.7\.\d+|\b530[ -](?i:login|user"
    r"|not logged in)\b"
)
_REFUSED_CODES_GATE = (
    "01017 invalidcredentials invalid_credentials invalid_auth not_authed"
    " authenticationfailed 535 530"
)

# a credential that was never there (env: set it)
_MISSING = (
    r"(?i:\bno (?:api[ _-]?key|credentials?|(?:auth(?:entication|orization)? |access |bearer"
    r" |api )?token|password|secret)s? (?:was |were |is |are |has been |have been )?"
    r"(?:provided|given|supplied|found|set|configured|specified|available|present)\b"
    r"|\b(?:api[ _-]?key|credentials?|(?:auth |access |api )?token|password|secret)s? (?:is "
    r"|are |was |were |has |have )?(?:not (?:been )?(?:set|provided|given|supplied|configured"
    r"|found|specified|present)|missing)\b"
    r"|\bmissing (?:required )?(?:api[ _-]?key|credentials?|(?:auth(?:entication|orization)? "
    r"|access |bearer |api )?token|password|secret)s?\b)"
)

RULES: dict[str, tuple[Row, ...]] = {
    "exception names": (
        (
            "exception named a connection failure",
            NAMED,
            UNKNOWN,
            T,
            _NAME_WORDS,
            _named(
                r"Connect|No(?:Hosts?|Nodes?|Servers?|Brokers?)Available|Unavailable"
                r"|Unreachable|HostDown|NetworkError|Disconnected|BrokenPipe",
                unless="Certificate",
            ),
            "kafka.errors.NoBrokersAvailable: NoBrokersAvailable",
        ),
        (
            "exception named a timeout",
            NAMED,
            TIMEOUT,
            T,
            _NAME_WORDS,
            _named(r"Timeout|Timed_?Out|DeadlineExceeded"),
            "pymongo.errors.ServerSelectionTimeoutError: localhost:27017: [Errno 111]",
        ),
        (
            "exception named a rate limit",
            NAMED,
            RATE_LIMIT,
            T,
            _NAME_WORDS,
            _named(r"TooManyRequests|too_many_requests|RateLimit|rate_limit|Throttl"),
            "cohere.errors.too_many_requests_error.TooManyRequestsError: status_code: 429",
        ),
        (
            "exception named a refused credential",
            NAMED,
            UNKNOWN,
            N,
            _NAME_WORDS,
            _named(
                r"Auth(?:entic|ori[sz]|Error|Failure|Failed|Exception)|OAuth|Credential|Login"
                r"|Logon|Unauthori[sz]ed|Unauthenticated|Forbidden|AccessDenied"
                r"|PermissionDenied|NotAuthorized|InvalidPassword|BadPassword|WrongPassword",
                unless=_MISSING_NAME,
            ),
            "discord.errors.LoginFailure: Improper token has been passed.",
        ),
        (
            "exception named a missing credential",
            NAMED,
            UNKNOWN,
            E,
            _NAME_WORDS,
            _named(_MISSING_NAME),
            "huggingface_hub.errors.LocalTokenNotFoundError: Token is required (`token=True`)",
        ),
    ),
    "credentials in words": (
        (
            "credential refused",
            GENERIC,
            UNKNOWN,
            N,
            _REFUSED_WORDS_GATE,
            _REFUSED_WORDS,
            "invalid username/password; logon denied",
        ),
        (
            "named credential refusal",
            NAMED,
            UNKNOWN,
            N,
            _REFUSED_CODES_GATE,
            _REFUSED_CODES,
            "slacker.Error: invalid_auth",
        ),
        (
            # the server answered a connection or a call with a refusal: that decides, not
            # the connection words or the exception's name around it (not a test's
            # AssertionError, whose message is what the test expected)
            "credential refused in a connection or exception",
            REFINED,
            UNKNOWN,
            N,
            _REFUSED_WORDS_GATE + " " + _REFUSED_CODES_GATE,
            r"(?:(?i:\b(?:failed|unable|could not|couldn't|cannot|can't) (?:to )?connect\b"
            r"|\bconnect(?:ion)? (?:to \S+ )?failed\b)|\b(?!Assertion)\w+(?:Error|Exception|Failure|Bad)\b)"
            rf"[^\n]{{0,300}}?(?:{_REFUSED_WORDS}|{_REFUSED_CODES})",
            "Thread 1 terminated abnormally: failed to connect to 'DBI:Oracle:host=db':\\n"
            "ORA-01017: invalid username/password; logon denied",
        ),
        (
            "credential missing",
            REFINED,
            UNKNOWN,
            E,
            "api api_key apikey key credentials credential token password secret",
            _MISSING,
            "Stripe::AuthenticationError - No API key provided.  (HINT: set your API key using"
            ' "Stripe.api_key = <API-KEY>".)',
        ),
    ),
}
