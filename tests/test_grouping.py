"""Grouping (issue 16): each normalisation rule groups repeats of one failure whose volatile
parts differ, and keeps apart different failures of one step, quoted names included."""

from __future__ import annotations

import re
import time

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from incidents import signature, signature_rules
from incidents.signature import (
    MAX_MESSAGE,
    PLACEHOLDERS,
    make_signature,
    normalize_message,
    normalize_steps,
)
from tests.helpers import REPO


def rules_applied(message: str) -> list[str]:
    steps: list[tuple[str, str, str]] = []
    normalize_steps(message, steps)
    return [rule for rule, _, _ in steps]


def same_group(a: str, b: str) -> bool:
    return make_signature("env", "build", a) == make_signature("env", "build", b)


# One row per rule: (two captures of one failure that differ only in parts of the rule's
# shape: one group), (two different failures that the rule's shape must not join: two groups).
TABLE: dict[str, tuple[tuple[str, str], tuple[str, str]]] = {
    "url": (
        ("fetch https://api.example.com/v1/items/17?page=2 failed",
         "fetch https://api.example.com:8443/v1/items/942?page=5 failed"),
        ("fetch https://api.example.com/v1/items/17 failed",
         "fetch https://api.example.com/v1/orders/17 failed"),
    ),
    "email": (
        ("bounce for alice@example.com", "bounce for bob.smith+ci@example.com"),
        ("git@github.com: Permission denied (publickey)",
         "git@gitlab.com: Permission denied (publickey)"),
    ),
    "keyed_id": (
        ("AccessDenied (Request ID: 4442587FB7D0A2F9; Proxy: null)",
         "AccessDenied (Request ID: QW3RT7Y9ZX2K4M6N; Proxy: null)"),
        ("AccessDenied (Request ID: 4442587FB7D0A2F9; Proxy: null)",
         "NoSuchBucket (Request ID: 4442587FB7D0A2F9; Proxy: null)"),
    ),
    "code": (
        ("ERROR 1045 (28000) after 3 retries in 12s", "ERROR 1045 (28000) after 5 retries in 40s"),
        ("ERROR 1045 (28000) after 3 retries in 12s", "ERROR 1049 (42000) after 3 retries in 12s"),
    ),
    "klog": (
        ("E1011 12:15:03.532199   12345 reflector.go:123] failed to list pods: Unauthorized",
         "W1012 08:01:59.000001 7 reflector.go:140] failed to list pods: Unauthorized"),
        ("E1011 12:15:03.532199   12345 reflector.go:123] failed to list pods: Unauthorized",
         "E1011 12:15:03.532199   12345 reflector.go:123] failed to watch pods: Unauthorized"),
    ),
    "ts": (
        ("lock held since 2024-05-01T12:00:00Z", "lock held since Mon, 02 Dec 2025 08:30:00 GMT"),
        ("lock held since 2024-05-01T12:00:00Z", "lock freed at 2024-05-01T12:00:00Z"),
    ),
    "uuid": (
        ("job 7f3c2a1b-1234-4abc-9def-0123456789ab failed",
         "job 00000000-0000-4000-8000-000000000000 failed"),
        ("job 7f3c2a1b-1234-4abc-9def-0123456789ab failed",
         "task 7f3c2a1b-1234-4abc-9def-0123456789ab failed"),
    ),
    "ip": (
        ("dial tcp 10.0.0.12:5432: i/o timeout", "dial tcp [fe80::1]:6543: i/o timeout"),
        ("dial tcp 10.0.0.12:5432: i/o timeout", "dial udp 10.0.0.12:5432: i/o timeout"),
    ),
    "hex_groups": (
        ("GitHub request 4C32:E66A2:27EF37:4E976C:683F3085 failed",
         "GitHub request 8F01:1B2C3:9A8B7C:6D5E4F:6A3F9B2C failed"),
        ("GitHub request 4C32:E66A2:27EF37 rate limited",
         "GitHub request 4C32:E66A2:27EF37 not found"),
    ),
    "path": (
        ("cannot open /home/alice/proj/app/config.yaml:3",
         "cannot open /home/runner/work/proj/proj/app/config.yaml:40"),
        ("cannot open /home/alice/proj/app/config.yaml",
         "cannot open /home/alice/proj/app/secrets.yaml"),
    ),
    "pod": (
        ("Back-off restarting failed container in pod web-7d4b9c8f5-x2z9q",
         "Back-off restarting failed container in pod web-5c6b7d8f9-k4l2m"),
        ("pod web-7d4b9c8f5-x2z9q OOMKilled", "pod api-7d4b9c8f5-x2z9q OOMKilled"),
    ),
    "hex": (
        ("image sha256:3f2a9c1e8b7d6a5f not found", "image sha256:9e8d7c6b5a40 not found"),
        ("image sha256:3f2a9c1e8b7d6a5f not found", "image sha512:3f2a9c1e8b7d6a5f not found"),
    ),
    "token": (
        ("Request req_Ab1cD2eF3gH4iJ: Your card was declined.",
         "Request req_Zx9yW8vU7tS6rQ: Your card was declined."),
        ("Request req_Ab1cD2eF3gH4iJ: card declined", "Request cus_Ab1cD2eF3gH4iJ: card declined"),
    ),
    "n": (
        ("retry 3 of 5 after 1.5s", "retry 12 of 20 after 1m30s"),
        ("python3.11: not found", "python3.12: not found"),
    ),
}  # fmt: skip


def test_every_rule_has_a_row() -> None:
    assert list(TABLE) == [name for name, _, _ in signature_rules.RULES if name != "keep"]


@pytest.mark.parametrize("rule", list(TABLE))
def test_each_rule_groups_repeats_with_different_volatile_parts(rule: str) -> None:
    a, b = TABLE[rule][0]
    if rule not in signature_rules.KEPT:
        assert rule in rules_applied(a) and rule in rules_applied(b)
    assert same_group(a, b), (normalize_message(a), normalize_message(b))


@pytest.mark.parametrize("rule", list(TABLE))
def test_each_rule_keeps_different_failures_apart(rule: str) -> None:
    a, b = TABLE[rule][1]
    assert not same_group(a, b), normalize_message(a)


# Different failures in one step: each pair must stay in two groups.
APART = [
    # issue 16: every quoted value was <str>, so these were one group
    ("Error: Cannot find module 'express'", "Error: Cannot find module 'express-session'"),
    ("ModuleNotFoundError: No module named 'requests'", "No module named 'yaml'"),
    ("npm ERR! 404 Not Found - GET 'left-pad'", "npm ERR! 404 Not Found - GET 'right-pad'"),
    ("/bin/sh: 1: 'gcc': not found", "/bin/sh: 1: 'make': not found"),
    ('relation "users" does not exist', 'relation "orders" does not exist'),
    ("FileNotFoundError: 'config.yaml'", "FileNotFoundError: 'settings.toml'"),
    ("KeyError: 'user_id'", "KeyError: 'order_id'"),
    # a volatile part never swallows the word next to it
    ("GitHub request 4C32:E66A2:27EF37 rate limited", "GitHub request 4C32:E66A2:27EF37 not found"),
    ("pod web-7d4b9c8f5-x2z9q OOMKilled", "pod api-7d4b9c8f5-x2z9q OOMKilled"),
    ("Request req_Ab1cD2eF3gH4iJ: card declined", "Request cus_Ab1cD2eF3gH4iJ: card declined"),
    ("python3.11: not found", "python3.12: not found"),
    ("Utf8StringDecoder failed", "Latin1StringDecoder failed"),
]


@pytest.mark.parametrize(("a", "b"), APART)
def test_different_failures_in_one_step_stay_apart(a: str, b: str) -> None:
    assert not same_group(a, b), normalize_message(a)


def test_a_quoted_value_is_normalised_by_its_shape_only() -> None:
    assert normalize_message("Cannot find module 'express'") == "Cannot find module 'express'"
    assert (
        normalize_message("Cannot find module '/app/node_modules/x/index.js'")
        == "Cannot find module '<path:x/index.js>'"
    )
    assert normalize_message("lock 'f47ac10b-58cc-4372-a567-0e02b2c3d479'") == "lock '<uuid>'"


@pytest.mark.parametrize(
    "request_id",
    [
        "4C32:E66A2:27EF37:4E976C:683F3085",  # GitHub, colon-separated hex groups
        "4c32-e66a2-27ef37-4e976c-683f3085",  # dash-separated
        "4C32.E66A2.27EF37.4E976C.683F3085",  # dot-separated
        "00:1a:2b:3c:4d:5e",  # a MAC address
    ],
)
def test_a_request_id_in_any_punctuation_is_one_placeholder(request_id: str) -> None:
    assert normalize_message(f"request {request_id} failed") == "request <id> failed"
    assert normalize_message(f"request {request_id}.") == "request <id>."


@pytest.mark.parametrize(
    ("message", "expected"),
    [
        ("x-github-request-id: 4C32:E66A2:27EF37", "x-github-request-id: <id>"),
        ("x-request-id: abc123", "x-request-id: <id>"),
        ("X-Amzn-RequestId: 5b1f2c3d", "X-Amzn-RequestId: <id>"),
        ("RequestId=Q7PMFKF3B4RZ5T3V,", "RequestId=<id>,"),
        ('"request_id": "req_6a3f9b2c1d8e"', '"request_id": "<id>"'),
        ("trace_id=4bf92f3577b34da6 span id: 00f067aa0ba902b7", "trace_id=<id> span id: <id>"),
        ("S3 Extended Request ID: xZ4n/8Yt+Qk3ZpLmN0v7Rr=;", "S3 Extended Request ID: <id>;"),
        ("cf-ray: 8a1b2c3d4e5f6a7b-SJC", "cf-ray: <id>"),
        ("x-amz-id-2: Yt+Qk3ZpLmN0v7Rr", "x-amz-id-2: <id>"),
        ("session id expired", "session id expired"),  # a key without a value
    ],
)
def test_the_value_of_a_request_id_key(message: str, expected: str) -> None:
    assert normalize_message(message) == expected


@pytest.mark.parametrize(
    ("message", "expected"),
    [
        ("pod web-7d4b9c8f5-x2z9q_default(3)", "pod web-<id>_default(<n>)"),
        ("job build-x2z9q failed", "job build-<id> failed"),
        ("msg_01XFDUDYJgAACzvnptvVoYEL", "msg_<id>"),
        ("chatcmpl-8abcDEFghi123JKLmno456", "chatcmpl-<id>"),
        ("S3 said Q7PMFKF3B4RZ5T3V", "S3 said <id>"),
        ("container 8f3a2c1b9d0e", "container <hex>"),
        ("build 3f2a9c1-dirty", "build <hex>-dirty"),
        ("took 1m30.5s", "took <n>"),
        ("fe80::1ff:fe23:4567:890a down", "<ip> down"),
        # words stay: no digit, or glued digits, or one letter/digit boundary only
        ("std::vector Foo::bar", "std::vector Foo::bar"),
        ("test_parse2numbers x86 sha256 TS2322", "test_parse2numbers x86 sha256 TS2322"),
        ("HttpClientErrorException", "HttpClientErrorException"),
        ("face-bead-cafe", "face-bead-cafe"),
    ],
)
def test_shapes(message: str, expected: str) -> None:
    assert normalize_message(message) == expected


def test_steps_name_each_rule_in_order_and_rebuild_the_result() -> None:
    message = "GET https://h.example.com/x  took 30s  (request id 4C32:E66A2:27EF37)"
    steps: list[tuple[str, str, str]] = []
    result = normalize_steps(message, steps)
    assert steps == [
        ("space", "runs of whitespace, at the ends", "one space, none"),
        ("url", "https://h.example.com/x", "<url:h.example.com/x>"),
        ("n", "30s", "<n>"),
        ("keyed_id", "request id 4C32:E66A2:27EF37", "request id <id>"),
    ]
    assert result == normalize_message(message)
    rebuilt = " ".join(message.split())
    for _, before, after in steps[1:]:
        rebuilt = rebuilt.replace(before, after, 1)
    assert rebuilt == result


def test_a_long_message_records_its_cut() -> None:
    steps: list[tuple[str, str, str]] = []
    out = normalize_steps("word " * 100, steps)
    assert steps[-1][0] == "cut" and len(out) <= MAX_MESSAGE


def test_the_readme_table_is_the_rules_in_order() -> None:
    readme = (REPO / "README.md").read_text()
    section = readme.split("#### Signatures: what is volatile", 1)[1].split("\n#", 1)[0]
    rows = re.findall(r"^\| `(\w+)` \| ([^|]+) \|", section, re.M)
    assert [rule for rule, _ in rows] == [name for name, _, _ in signature_rules.RULES[1:]]
    shown = {rule: becomes.strip().strip("`") for rule, becomes in rows}
    assert {rule: shown[rule] for rule in PLACEHOLDERS} == PLACEHOLDERS
    assert shown["code"] == "kept"


# --- properties ---------------------------------------------------------------------------

SHAPES = [
    *"aAbfFgxzZ019_-.:/ '\"<>@\\T\n\t",
    *PLACEHOLDERS.values(),
    "<url:h>", "0x", "req_", "Request ID: ", "2024-01-02", "12:00", "https://", "web-",
    "::", "x2z9q", "7d4b9c8f5", "E66A2:", "Ab1cD2eF3gH4", "1.5GB", "~/", "C:\\", "@ex.co",
    "./", "{n}", "exit status ", "ERROR ", "ORA-", " (28000)", "404 Not Found", "errno=", "?",
    "v1.2.3", "SQLSTATE[", "HTTP/1.1 ", "0x8007", "/tmp/", "tmp", "pytest-of-x/", "pytest-3/",
    "venv-a1b2c3", "E1011 12:15:03.532199 12345 f.go:1]", "/T/",
]  # fmt: skip
MESSAGES = st.lists(st.sampled_from(SHAPES), max_size=80).map("".join) | st.text(max_size=400)


@settings(max_examples=1500, deadline=None, suppress_health_check=list(HealthCheck))
@given(MESSAGES)
def test_normalising_is_idempotent_and_never_empties_a_message(message: str) -> None:
    once = normalize_message(message)
    assert normalize_message(once) == once
    assert len(once) <= MAX_MESSAGE
    if message.strip():
        assert once


@settings(max_examples=1500, deadline=None, suppress_health_check=list(HealthCheck))
@given(MESSAGES)
def test_only_rules_that_cannot_match_are_left_out(message: str) -> None:
    """Normalisation compiles only the rules a message can need (capture compiles once per
    process): any rule that matches somewhere in the text is among them."""
    text = " ".join(message.split())
    chosen = signature._rules_for(text)
    for name, _, pattern in signature_rules.RULES:
        if re.search(pattern, text):
            assert name in chosen, name


def test_a_long_adversarial_message_is_normalised_quickly() -> None:
    nasty = [
        "a1" * 1000,  # one 2,000-character run of letters and digits
        "4C32:" * 400,  # hex groups that never end
        "x-request-id: " * 150,  # keys without values
        "/a" * 1000,
        "9" * 2000,
    ]
    for message in nasty:
        started = time.perf_counter()
        normalize_message(message)
        assert time.perf_counter() - started < 0.5, message[:20]


def test_a_host_and_its_port_keep_the_host_and_lose_the_port() -> None:
    """`db.internal:5432` is an address, not `name.ext:line`: the host says which service
    failed (kept, as a URL's host is), the port is a number (an adversarial run found two
    services' refusals in one group)."""
    norm = signature.normalize_message
    assert norm("connect ECONNREFUSED db.internal:5432") != norm(
        "connect ECONNREFUSED cache.internal:6379"
    )
    assert norm("connect ECONNREFUSED db.internal:5432") == norm(
        "connect ECONNREFUSED db.internal:5433"
    )
    assert norm("SyntaxError in main.py:12") == norm("SyntaxError in main.py:40")
    assert norm("bad key in config.yaml:3") == "bad key in config.yaml"


# --- review of issue 16: names that identify a failure survive ----------------------------

# Each pair was one group under normalization rules 3.
NAMES_APART = [
    # 1. the URL's path is a name: the package npm could not find
    (
        "npm ERR! 404 Not Found - GET https://registry.npmjs.org/left-pad",
        "npm ERR! 404 Not Found - GET https://registry.npmjs.org/right-pad",
    ),
    (
        "GET https://api.github.com/repos/acme/app failed",
        "GET https://api.github.com/repos/acme/web failed",
    ),
    # 2. a relative module path is a name
    ("Error: Cannot find module './routes/users'", "Error: Cannot find module './routes/orders'"),
    ("ImportError in src/app/models.py:12", "ImportError in src/app/views.py:12"),
    (
        "FileNotFoundError: '/srv/app/conf/users.yaml'",
        "FileNotFoundError: '/srv/app/conf/orders.yaml'",
    ),
    # 3. an error or status code is the failure's identity
    (
        "ORA-12154: TNS:could not resolve the connect identifier",
        "ORA-12541: TNS:could not resolve the connect identifier",
    ),
    ("ERROR 1045 (28000): Access denied for user", "ERROR 1049 (42000): Access denied for user"),
    ("mysql said Error 1045", "mysql said Error 1049"),
    ("PermissionError: [Errno 13] cannot open", "PermissionError: [Errno 2] cannot open"),
    ("errno 13 while writing", "errno 2 while writing"),
    ("insert failed (SQLSTATE 23505)", "insert failed (SQLSTATE 23503)"),
    ("SQLSTATE[HY000] [2002] Connection refused", "SQLSTATE[HY000] [1045] Connection refused"),
    ("go: exit status 2", "go: exit status 1"),
    ("Process completed with exit code 1.", "Process completed with exit code 137."),
    ("make: *** [Makefile:12: all] Error 2", "make: *** [Makefile:12: all] Error 127"),
    ("collect2: error: ld returned 1 exit status", "collect2: error: ld returned 2 exit status"),
    ("request failed with status code 404", "request failed with status code 503"),
    ("upstream answered HTTP 502", "upstream answered HTTP 504"),
    ('{"status": 403, "error": "denied"}', '{"status": 401, "error": "denied"}'),
    ("Exception from HRESULT: 0x80070005", "Exception from HRESULT: 0x80004005"),
    ("worker killed by signal 9", "worker killed by signal 11"),
    ("subprocess exited with code 2", "subprocess exited with code 3"),
    # found in the corpus (tests/fixtures/corpus): each pair was one group under rules 3
    ("npm ERR! Found: eslint@6.1.0", "npm ERR! Found: postcss-load-config@3.0.0"),
    ("GET x.tgz error (ERR_PNPM_FETCH_404).", "GET x.tgz error (ERR_PNPM_FETCH_403)."),
    ("AWS secret found in src/code/file_1.py", "AWS secret found in src/code/file_2.py"),
    ("curl: (28) failed", "curl: (6) failed"),
    ("API Error (529 overloaded)", "API Error (500 overloaded)"),
]


@pytest.mark.parametrize(("a", "b"), NAMES_APART)
def test_a_name_or_code_that_identifies_the_failure_survives(a: str, b: str) -> None:
    assert not same_group(a, b), normalize_message(a)


# ... while their volatile parts still go
NAMES_SAME = [
    (
        "GET https://registry.npmjs.org/left-pad/-/left-pad-1.3.0.tgz?cache=3 failed",
        "GET https://registry.npmjs.org/left-pad/-/left-pad-1.2.9.tgz?cache=9 failed",
    ),
    (
        "GET https://api.github.com/repos/acme/app/issues/123/comments failed",
        "GET https://api.github.com/repos/acme/app/issues/98765/comments failed",
    ),
    (
        "fetch https://blobs.example.com/u/7f3c2a1b-1234-4abc-9def-0123456789ab/a.png: 500",
        "fetch https://blobs.example.com/u/00000000-0000-4000-8000-000000000000/a.png: 500",
    ),
    ("GET http://10.0.0.12:9200/_bulk failed", "GET http://10.0.0.99:9201/_bulk failed"),
    ("ImportError in src/app/models.py:12:5", "ImportError in src/app/models.py:240:1"),
    (
        "Cannot find module './dist/main.3f2a9c1e.js'",
        "Cannot find module './dist/main.9e8d7c6b.js'",
    ),
    (
        'File "/home/alice/proj/app/models.py", line 12',
        'File "/home/runner/work/proj/proj/app/models.py", line 40',
    ),
    ("cannot write /tmp/tmpk3j2h1x9/out.json", "cannot write /tmp/tmpz8q7w6e5/out.json"),
    (
        r"at C:\Users\bob\src\app\main.ps1:14 char:5",
        r"at C:\Users\alice\work\app\main.ps1:20 char:9",
    ),
    (
        "ERROR 1045 (28000): Access denied for user 'bob'@'10.0.0.1'",
        "ERROR 1045 (28000): Access denied for user 'bob'@'10.0.0.2'",
    ),
    ("exit status 2 after 31s (pid 4242)", "exit status 2 after 12s (pid 17)"),
    (
        "listen tcp :8080: bind: address already in use, errno 98",
        "listen tcp :9090: bind: address already in use, errno 98",
    ),
    ("3 errors, exit code 1", "12 errors, exit code 1"),
    # found in the corpus: a time, a tag, a rate were taken for an address or a path
    ("[22:50:52][scan_engine] database is locked", "[09:01:13][scan_engine] database is locked"),
    (
        "<RequestId>689b4496-ca92-11e5-9a31-4932678efe5c</RequestId>",
        "<RequestId>ec3dfa7f-6b83-11e4-adb9-63c309e27d3f</RequestId>",
    ),
    ("Less than 10 bytes/sec transferred", "Less than 1 bytes/sec transferred"),
]


@pytest.mark.parametrize(("a", "b"), NAMES_SAME)
def test_volatile_parts_beside_names_and_codes_still_go(a: str, b: str) -> None:
    assert same_group(a, b), (normalize_message(a), normalize_message(b))


@pytest.mark.parametrize(
    ("message", "expected"),
    [
        (
            "<RequestId>689b4496-ca92-11e5-9a31-4932678efe5c</RequestId>",
            "<RequestId><uuid></RequestId>",
        ),
        ("[22:50:52][scan_engine] x", "[<ts>][scan_engine] x"),
        ("Less than 10 bytes/sec", "Less than <n>/sec"),
        (r"expected [C:\Users\lcp3n\app\app.csproj]", "expected [<path:app/app.csproj>]"),
    ],
)
def test_what_was_misread_reads_right(message: str, expected: str) -> None:
    assert normalize_message(message) == expected


def test_an_address_as_a_url_host_is_a_placeholder() -> None:
    assert (
        normalize_message("GET http://192.168.0.24/acme/app.git") == "GET <url:{ip}/acme/app.git>"
    )
    assert normalize_message("GET http://[::1]:8080/a failed") == "GET <url:{ip}/a> failed"


def test_steps_show_an_error_code_kept() -> None:
    steps: list[tuple[str, str, str]] = []
    normalize_steps("ERROR 1045 (28000) after 3 retries, ERROR 1045 (28000)", steps)
    assert steps == [("code", "ERROR 1045 (28000)", "ERROR 1045 (28000)"), ("n", "3", "<n>")]


# --- temporary folders: random names are the machine's, not the failure's -----------------

TEMP_NAME = st.text("abcdefghijklmnopqrstuvwxyz0123456789_", min_size=8, max_size=8)


@settings(max_examples=400, deadline=None)
@given(TEMP_NAME, TEMP_NAME)
def test_tempfile_names_all_normalise_alike(a: str, b: str) -> None:
    """`tempfile.mkdtemp()`'s and `mkstemp()`'s names (tmp + 8 of [a-z0-9_]) as the last
    part, with a suffix, or below it."""
    for shape in ("cannot open /tmp/tmp{}", "cannot open /tmp/tmp{}.json",
                  "cannot open /tmp/tmp{}/out.log", r"no file C:\Users\bob\AppData\Local\Temp\tmp{}"):  # fmt: skip
        assert same_group(shape.format(a), shape.format(b)), shape


TEMP_SAME = [
    ("cannot open /tmp/pytest-of-alice/pytest-12/test_upload0/out.txt",
     "cannot open /tmp/pytest-of-bob/pytest-3/test_upload1/out.txt"),
    ("cannot open /tmp/pytest-of-alice/pytest-12/test_upload0",
     "cannot open /tmp/pytest-of-bob/pytest-3/test_upload13"),
    ("cannot open /tmp/pytest-of-alice/pytest-12", "cannot open /tmp/pytest-of-bob/pytest-3"),
    ("cannot open /tmp/pytest-of-ci/pytest-current/test_upload0/out.txt",
     "cannot open /tmp/pytest-of-ci/pytest-7/test_upload2/out.txt"),
    ("no python in /tmp/venv-a1b2c3", "no python in /tmp/venv-z9y8x7"),
    ("no python in /tmp/venv-a1b2c3/bin/python", "no python in /tmp/venv-9zz8yq/bin/python"),
    ("no python in /srv/ci/venv-a1b2c3", "no python in /srv/ci/venv-z9y8x7"),
    ("cannot open /var/folders/x1/b3kq9_2d5f/T/tmpab12cd34",
     "cannot open /var/folders/zz/9fj2k_1x0q/T/tmp_9x8y7z6"),
]  # fmt: skip
TEMP_APART = [
    ("cannot open /tmp/pytest-of-alice/pytest-12/test_upload0",
     "cannot open /tmp/pytest-of-alice/pytest-12/test_download0"),
    ("no python in /tmp/venv-a1b2c3", "no python in /tmp/env-a1b2c3"),
    ("cannot open /tmp/tmpab12cd34/out.log", "cannot open /tmp/tmpab12cd34/err.log"),
    ("cannot open /srv/app/release-2024q1", "cannot open /srv/app/release-2025q1"),
    ("cannot open /opt/gcc-aarch64", "cannot open /opt/gcc-riscv64"),
]  # fmt: skip


@pytest.mark.parametrize(("same", "apart"), list(zip(TEMP_SAME, TEMP_APART * 2, strict=False)))
def test_temporary_folders_of_one_failure_group_and_names_stay_apart(
    same: tuple[str, str], apart: tuple[str, str]
) -> None:
    """pytest's base folders, a random suffix after a dash (letters and digits alternating,
    or any mix in a temporary folder), macOS's `/var/folders/../T`; the names beside them
    (`test_upload0`, `env-`, `out.log`, `release-2024q1`, `gcc-aarch64`) stay."""
    assert same_group(*same), (normalize_message(same[0]), normalize_message(same[1]))
    assert not same_group(*apart), normalize_message(apart[0])
