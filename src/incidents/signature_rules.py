"""What is volatile in a failure's message: the rules `incidents.signature` applies, as data.

Left-to-right passes of one regex (deterministic; a placeholder is never rewritten), again
until nothing changes (the second pass finds nothing in practice): at each position the
first rule of `RULES` that matches wins, in this order:

    keep          an existing placeholder, kept
    url           <url:host/path>  host and path kept, volatile segments {n} {id} {hex} ...,
                              port dropped, query and fragment ?{query}
    email         <email:domain>
    keyed_id      <id>        the value after a request/trace/correlation/span/session/host
                              id key, in any spelling: `Request ID: X`, `x-request-id: X`,
                              `"request_id": "X"`, `RequestId=X`, `x-amz-id-2: X`, `cf-ray: X`
    code          kept        an error or status code: `exit status 2`, `ERROR 1045 (28000)`,
                              `[Errno 13]`, `ORA-12154`, `SQLSTATE 23505`, `404 Not Found`
    klog          <ts>        a klog/glog/absl header: `E1011 12:15:03.532199 12345 f.go:1]`
                              (level, date, time, thread id; the file and line stay)
    ts            <ts>        ISO 8601, RFC 2822, syslog, 12/31/2024, 12:00:01
    uuid          <uuid>
    ip            <ip>        IPv4[:port], IPv6 (full, compressed, [bracketed]:port)
    hex_groups    <id>        3+ hex groups joined by one of `:` `-` `.` (GitHub's
                              `4C32:E66A2:27EF37:4E976C:683F3085`, MAC addresses)
    path          <path:a/b>  absolute (POSIX, ~/, Windows, UNC): its last two names below a
                              home or temp folder; relative (./x, a/b/c, a/b.py,
                              `name.ext:12`): kept, as a name; line and column dropped;
                              a temporary folder's random name in braces: `tmp{id}`,
                              `pytest-of-{id}/pytest-{n}/test_x{n}`, `venv-{id}`
    pod           <id>        a Kubernetes pod or ReplicaSet suffix: web-<id>
    hex           <hex>       0x..., or 7+ hex digits with a digit and a letter
    token         <id>        a random-looking run of 10+ letters and digits: mixed case
                              and a digit after a `prefix_` or `prefix-` (req_, cus_,
                              chatcmpl-), or letters and digits alternating 3+ times
    n             <n>         ints, floats, versions, with a unit (30s, 1.5GB, 80%), Go
                              durations (1m30s)

Stdlib only: patterns as strings, compiled by `incidents.signature` on first use.
"""

from __future__ import annotations

_MONTH = r"(?:Jan|Feb|Mar|Apr|May|Jun|Jul|Aug|Sep|Oct|Nov|Dec)[a-z]*"
_DAY = r"(?:Mon|Tue|Wed|Thu|Fri|Sat|Sun)[a-z]*"
_TIME = r"\d{1,2}:\d{2}(?::\d{2})?(?:[.,]\d+)?(?:[ ]?[AaPp][Mm])?"
_ZONE = r"(?:[ ]?(?:Z|UTC|GMT|[+-]\d{2}:?\d{2})(?![A-Za-z]))?"
_PATH_CHAR = r"[\w.+@%~={}-]"  # {} for the placeholders inside a kept path: a/{n}/b
# the extensions a bare `name.ext:12` is taken as a file for (anything else may be a host)
_SOURCE_EXT = (
    r"(?i:py|pyi|pyx|js|mjs|cjs|jsx|ts|tsx|go|rs|java|kt|kts|scala|groovy|gradle|c|h|cc|cpp"
    r"|cxx|hpp|hh|cs|fs|vb|rb|erb|php|pl|pm|lua|r|jl|swift|m|mm|dart|ex|exs|erl|hrl|elm|clj"
    r"|hs|ml|nim|zig|sh|bash|zsh|fish|ps1|psm1|psd1|bat|cmd|sql|tf|tfvars|hcl|yaml|yml|json"
    r"|jsonc|toml|ini|cfg|conf|xml|html|htm|css|scss|sass|less|vue|svelte|md|rst|txt|csv"
    r"|proto|graphql|mk|cmake|lock|env|ipynb|pxd|tpl|j2|jinja|twig)(?![\w.])"
)
_UNIT = (
    r"(?:ns|us|µs|ms|s|sec|secs|seconds?|m|min|mins|minutes?|h|hrs?|hours?|d|days?"
    r"|[kKMGTP]i?B|[kKMGTP]|B|bytes?|%|x)"
)
_H = "[0-9A-Fa-f]"
_K8S = "[bcdfghj-np-tv-z2-9]"  # the alphabet of Kubernetes' random name suffixes
_ALNUM = "[A-Za-z0-9]"
_ID_KEY = (
    r"(?:x-)?(?:amzn?-|github-|goog-|ms-)?(?:s3[ ]extended[ ]|extended[ ]|client[-_ ]?)?"
    r"(?:request|req|trace|correlation|span|invocation|transaction|session|host)[-_ ]?id"
    r"|x-amz-id-2|cf-ray"
)
_ID_VALUE = r"[^\s\"'<>,;)\]}]"

# An error or status code is the failure's identity, never <n>: the number after a word
# that names one (`exit status 2`, `Error 1045 (28000)`, `[Errno 13]`, `SQLSTATE 23505`,
# `status code 404`, `HTTP 502`, `signal 9`, `returned 1 exit status`, `HRESULT: 0x8007...`),
# an upper-case prefix's number (`ORA-12154`, `TNS-12541`), an HTTP status before its
# reason phrase (`404 Not Found`). Counts, durations, sizes, ports, pids, lines stay <n>.
_CODE_WORD = (
    r"(?<![A-Za-z])(?i:exit[ _-]?(?:status|code)|exited(?:[ ]with)?(?:[ ]code)?|exit"
    r"|return[ _-]?code|returncode|rc|errno|error[ _-]?code|err[ _-]?code|status[ _-]?code"
    r"|response[ _-]?code|status|code|signal|sqlcode|hresult"
    r"|http(?:/\d(?:\.\d)?)?(?:[ ](?:status|error|code))?"
    r"|returned(?:[ ]a)?(?:[ ]non-zero)?(?:[ ]exit)?(?:[ ](?:status|code))?)"
    r"|(?<![A-Za-z])[A-Za-z]*?(?:error|Error|ERROR)(?=[ ]\(?\d|:[ ]\d+[ ]?\([0-9A-Z]{5}\))"
)
_SQLSTATE = r"[ ]?\((?:[0-9A-Z]{5})\)"
_HTTP_REASON = (
    r"(?i:Bad[ ]Request|Unauthorized|Payment[ ]Required|Forbidden|Not[ ]Found|Method[ ]Not"
    r"|Not[ ]Acceptable|Proxy[ ]Auth|Request[ ]Time-?out|Conflict|Gone|Length[ ]Required"
    r"|Precondition|Payload[ ]Too|Request[ ]Entity|URI[ ]Too|Unsupported[ ]Media"
    r"|Unprocessable|Too[ ]Many|Internal[ ]Server|Not[ ]Implemented|Bad[ ]Gateway"
    r"|Service[ ]Unavailable|Gateway[ ]Time-?out|HTTP[ ]Version)"
)
_CODE = (
    rf"(?:(?:{_CODE_WORD})[\"']?[ ]?[:=]?[ ]?[\[(]?[ ]?(?:-?\d++|0[xX]{_H}++)"
    rf"(?![\w.]\d|[ ]?(?:of|/)[ ]?\d)(?:{_SQLSTATE})?"
    r"|(?<![\w-])[A-Z][A-Z0-9_]{1,30}[-_]\d+(?:-\d+)?"  # ORA-12154, ERR_PNPM_FETCH_404
    r"|curl:[ ]\(\d+\)"  # curl's exit code: curl: (28)
    r"|(?i:sqlstate)[ ]?[:=]?[ ]?\[?[0-9A-Z]{5}\]?(?:[ ]\[\d+\])?"
    rf"|(?<![\w.])[1-5]\d\d(?=[ ]{_HTTP_REASON})"
    r")(?![A-Za-z0-9])"
)

# (name, placeholder, pattern). Order is precedence at one position; see the docstring.
RULES: tuple[tuple[str, str, str], ...] = (
    ("keep", "", r"<(?:ts|uuid|hex|str|id|n|ip|(?:url|path|email)(?::[^<>\s]*)?)>"),
    (
        "url",
        "<url:host/path>",
        # (punctuation that ends a sentence is not the URL's: `see https://x.io/a.`)
        r"\b[A-Za-z][A-Za-z0-9+.-]*://(?:[^/\s@'\"<>]*@)?(?P<host>\[[0-9A-Fa-f:.]*(?:%\w+)?\]|[^/\s:?#'\"<>]*(?<![.,;!)]))"
        r"(?::\d*)?(?P<upath>/[^\s'\"<>?#]*(?<![.,;:!)\]}]))?"
        r"(?P<query>[?#][^\s'\"<>]*(?<![.,;:!)\]}]))?",
    ),
    (  # the domain is kept like a URL's host (git@github.com, git@gitlab.com); its last
        # label is letters: `eslint@6.1.0` is a package and its version, not an address
        "email",
        "<email:domain>",
        r"(?<![\w.+-])[\w.+-]+@(?P<domain>[A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)*\.[A-Za-z]{2,})"
        r"(?![\w-]|\.\w)",
    ),
    (
        "keyed_id",
        "<id>",
        rf"(?P<key>\b(?=[xXaAgGmMsSeEcCrRtTiIhH])(?ai:{_ID_KEY})\b[\"']?[ ]?[:=]?[ ]?[\"']?)"
        # the value: a digit or 12 characters; or <id> (a second pass sees the key again)
        rf"(?:<id>|(?=(?:{_ID_VALUE}*?\d|{_ID_VALUE}{{12}}))(?!<){_ID_VALUE}++(?!<))",
    ),
    ("code", "", _CODE),
    (  # a klog/glog/absl log line's header: level letter, MMDD, time, thread id, then
        # `file.go:123]`: all of it is when and where it ran (E1011 and E1012: one failure)
        "klog",
        "<ts>",
        r"(?<![\w.])[IWEFD](?:0[1-9]|1[0-2])(?:[0-2]\d|3[01])[ ]\d{2}:\d{2}:\d{2}(?:\.\d{1,9})?"
        r"(?:[ ]+\d+)?(?=[ ]+[\w.+-]+:\d+\])",
    ),
    (
        "ts",
        "<ts>",
        r"(?<![\w.])(?:"
        r"(?:\d{4}-\d{2}-\d{2}"  # ISO 8601
        rf"|(?:{_DAY},?[ ])?\d{{1,2}}[ ]{_MONTH}[ ]\d{{4}}"  # RFC 2822
        rf"|(?:{_DAY}[ ])?{_MONTH}[ ]+\d{{1,2}}(?:,?[ ]\d{{4}})?"  # syslog
        r"|\d{1,2}[/.]\d{1,2}[/.]\d{2,4}"  # 12/31/2024
        rf")(?:[T ]{_TIME})?{_ZONE}"  # ... each with a time, a zone
        r"|\d{8}T\d{6}Z?"  # compact ISO
        rf"|{_TIME}{_ZONE}"  # 12:00:01
        r")(?![\w]|[.,]\d)",  # not the start of a duration: 2:48.217s
    ),
    (  # after a letter that is no hex digit too: x75113e78-4911-... is x<uuid>
        "uuid",
        "<uuid>",
        rf"(?<![0-9A-Fa-f-]){_H}{{8}}-(?:{_H}{{4}}-){{3}}{_H}{{12}}(?![\w-])",
    ),
    (
        "ip",
        "<ip>",
        r"(?<![\w.])(?:"
        r"(?:\d{1,3}\.){3}\d{1,3}(?::\d{1,5})?"
        r"|\[(?=[0-9a-fA-F:.]*::|(?:[0-9a-fA-F]{1,4}:){7})[0-9a-fA-F:.]+\](?::\d{1,5})?"
        rf"|(?:{_H}{{1,4}}:){{7}}{_H}{{1,4}}"
        rf"|(?=[0-9a-fA-F:]*\d)(?:{_H}{{1,4}}:){{1,7}}:(?:{_H}{{1,4}}(?::{_H}{{1,4}})*)?"
        r"|::1"
        r")(?![\w.])",
    ),
    (
        "hex_groups",
        "<id>",
        rf"(?<![\w:.-])(?=[0-9A-Fa-f:.-]{{8}})(?=[0-9A-Fa-f:.-]*?\d)(?=[0-9A-Fa-f:.-]*?[A-Fa-f])"
        rf"{_H}+(?P<sep>[:.-]){_H}+(?:(?P=sep){_H}+)+(?!\w)(?!(?P=sep)\w)",
    ),
    (
        "path",
        "<path:name>",
        r"(?=[\w.+@%~=-]*[/\\:.])(?:"  # (a quick test first: most words are no path)
        r"(?<![\w\\])[A-Za-z]:\\(?:[^\\\s:*?\"'<>|]+\\)*[^\\\s:*?\"'<>|,;)\]]*"  # C:\dir\file
        r"|\\\\[^\\\s]+\\[^\s:*?\"'<>|,;)]+"  # \\server\share
        rf"|(?<![\w.:/~<>-])(?:~|\.{{1,2}}|[A-Za-z]:)?/{_PATH_CHAR}+(?:/{_PATH_CHAR}*)*"  # /a, ./r, ~/x
        rf"|(?<![\w.:/~<>-]){_PATH_CHAR}+(?:/{_PATH_CHAR}+){{2,}}/?"  # a/b/c
        rf"|(?<![\w.:/~<>-]){_PATH_CHAR}+(?:/{_PATH_CHAR}+)+\.[A-Za-z]\w{{0,7}}(?=:\d)"  # a/b.py:3
        # a bare file name only with a line number and a source file's extension: a host
        # and its port (`db.internal:5432`) is an address, whose host is kept like a URL's
        rf"|(?<![\w.:/~<>-]){_PATH_CHAR}+\.(?:{_SOURCE_EXT})(?=:\d)"
        rf"|(?<![\w.:/~<>-]){_PATH_CHAR}+(?:/{_PATH_CHAR}+)+\.[A-Za-z]\w{{0,7}}(?![\w/])"
        r")(?::\d+(?::\d+)?)?",
    ),
    (
        "pod",
        "<id>",
        rf"(?<=[a-z0-9]-)(?=[{_K8S[1:-1]}-]*?\d)(?=[{_K8S[1:-1]}-]*?[a-z])"
        rf"(?:{_K8S}{{6,10}}-)?{_K8S}{{5,10}}(?![A-Za-z0-9.-])",
    ),
    (
        "hex",
        "<hex>",
        rf"(?<![A-Za-z0-9])(?:0[xX]{_H}+|(?=[0-9]*[a-fA-F])(?=[a-fA-F]*\d){_H}{{7,}})"
        r"(?![A-Za-z0-9])",
    ),
    (
        "token",
        "<id>",
        rf"(?={_ALNUM}*?\d)(?:(?<=[A-Za-z0-9][_-])(?={_ALNUM}*?[a-z])(?={_ALNUM}*?[A-Z])"
        rf"|(?<![A-Za-z0-9.])(?={_ALNUM}*?(?:[A-Za-z]\d++[A-Za-z]++\d|\d[A-Za-z]++\d++[A-Za-z])))"
        rf"{_ALNUM}{{10,}}+",
    ),
    (
        "n",
        "<n>",
        r"(?<![A-Za-z0-9.])(?:"
        r"(?:\d+(?:\.\d+)?(?:h|ms|us|µs|ns|m|s)){2,}"  # Go durations: 1m30s, 2h0m0.5s
        rf"|[-+]?\d+(?:[.,]\d+)*(?:[eE][-+]?\d+)?(?:[ ]?{_UNIT})?"
        r")(?![A-Za-z0-9])",
    ),
)

PLACEHOLDERS: dict[str, str] = {name: placeholder for name, placeholder, _ in RULES if placeholder}
KEPT = ("keep", "code")  # rules that keep what they match (a placeholder, an error code)
# The volatile parts of one segment of a URL's or a path's name, in braces: a small pattern
# of its own (compiled only for a segment with a digit: capture compiles once per process)
SEGMENT = (
    rf"(?P<uuid>{_H}{{8}}-(?:{_H}{{4}}-){{3}}{_H}{{12}})"
    r"|(?P<ip>(?<![\d.])(?:\d{1,3}\.){3}\d{1,3}(?![\d.])|\[[0-9A-Fa-f:.]*::?[0-9A-Fa-f:.%\w]*\])"
    r"|(?P<ts>(?<!\d)\d{4}-\d{2}-\d{2}(?:[T_ ]?\d{2}[:_-]?\d{2}(?:[:_-]?\d{2}(?:[._]\d{1,9})?)?Z?)?"
    r"(?!\d))"
    rf"|(?P<hex>(?<![A-Za-z0-9])(?=[0-9]*[a-fA-F])(?=[a-fA-F]*\d){_H}{{7,}}(?![A-Za-z0-9]))"
    rf"|(?P<token>(?<![A-Za-z0-9])(?={_ALNUM}*?(?:[A-Za-z]\d++[A-Za-z]++\d|\d[A-Za-z]++\d++[A-Za-z]))"
    rf"{_ALNUM}{{10,}}+)"
    r"|(?P<n>(?<![A-Za-z0-9.])\d+(?:\.\d+)+(?![A-Za-z0-9]|\.\d))"  # a dotted version
)
MAX_NAME = 120  # the characters of a URL's or an absolute path's name kept in its placeholder

MAX_PASSES = 16  # a bound, never reached: see normalize_steps

# What a text must contain for a rule to match anywhere in it (rules not named: always
# tried). Only the rules a message can need are compiled and tried: the combined pattern
# costs ~4 ms to compile, in a process (capture) that normalises one message. Each test is
# on characters a pass never adds (a placeholder brings `<`, `>`, `:` and lowercase
# letters), so the rules picked for the message serve every later pass too.
DIGIT = r"\d"  # not a substring: any decimal digit (Unicode's, as `\d` in the rules)
DIGITS = (DIGIT,)
NEEDS: dict[str, tuple[str, ...]] = {  # in the lowercased text
    # a placeholder, or one a pass adds (a URL's, a path's, an e-mail's holds a `/`, a `.`)
    "keep": ("<", "/", "\\", ":", "@"),
    "url": ("://",),
    "email": ("@",),
    "keyed_id": (
        "req",
        "trace",
        "correlation",
        "span",
        "invocation",
        "transaction",
        "session",
        "host",
        "amz-id",
        "cf-ray",
    ),
    "code": (  # a word that names a code, a prefix's `-` or `_`, an HTTP reason's words
        *("exit", "code", "rc", "err", "status", "signal", "sqlcode", "hresult", "http"),
        *("returned", "sqlstate", "curl", "-", "_", "bad", "unauthorized", "payment"),
        *("forbidden", "not", "proxy", "request", "conflict", "gone", "length", "too"),
        *("precondition", "payload", "uri", "unsupported", "unprocessable", "internal"),
        *("service", "gateway"),
    ),
    "klog": DIGITS,
    "ts": DIGITS,
    "uuid": ("-",),
    "ip": (*DIGITS, ":"),
    "hex_groups": DIGITS,
    "path": ("/", "\\", ":"),
    "pod": DIGITS,
    "hex": DIGITS,
    "token": DIGITS,
    "n": DIGITS,
}
