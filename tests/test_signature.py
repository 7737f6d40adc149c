"""Error signatures: volatile parts normalised, same failure same signature, stable keys."""

from __future__ import annotations

import re
import subprocess
import sys

import pytest

from incidents.signature import MAX_MESSAGE, make_signature, normalize_message, signature_key
from incidents.vocab import FailureClass


@pytest.mark.parametrize(
    ("message", "expected"),
    [
        ("Network timeout during receipt download", "Network timeout during receipt download"),
        ("at 2024-05-01T12:00:00.123Z done", "at <ts> done"),
        ("at 2024-05-01 12:00:00+02:00 done", "at <ts> done"),
        ("on 2024-05-01 done", "on <ts> done"),
        ("Date: Mon, 01 Jan 2024 12:00:00 GMT", "Date: <ts>"),
        ("Jan  3 04:05:06 host cron", "<ts> host cron"),
        ("since 12/31/2024", "since <ts>"),
        ("at 04:05:06.789", "at <ts>"),
        ("id 7f3c2a1b-1234-4abc-9def-0123456789ab", "id <uuid>"),
        ("id 7F3C2A1B-1234-4ABC-9DEF-0123456789AB", "id <uuid>"),
        ("commit 3f2a9c1e8b7d6a5f4e3d2c1b0a9f8e7d6c5b4a39", "commit <hex>"),
        ("short sha ab12cd3", "short sha <hex>"),
        ("at 0x7ffde4a1", "at <hex>"),
        ("word deadbeef and facade stay", "word deadbeef and facade stay"),
        ("file /work/app/download.py missing", "file <path:app/download.py> missing"),
        ("file ./rel/x.txt missing", "file ./rel/x.txt missing"),
        ("file ~/x/y missing", "file <path:x/y> missing"),
        ("src/incidents/cli.py:12:5: F401 unused", "src/incidents/cli.py: F401 unused"),
        ("main.py:12: error", "main.py: error"),
        ("FAILED tests/test_x.py::test_y", "FAILED tests/test_x.py::test_y"),
        (r"at C:\Users\bob\app\main.ps1:14 char", "at <path:app/main.ps1> char"),
        (r"share \\server\share\dir\f.txt gone", "share <path:dir/f.txt> gone"),
        ("KeyError: 'user_id'", "KeyError: 'user_id'"),
        ('File "/x/y.py", line 3', 'File "<path:x/y.py>", line <n>'),
        ("id '7f3c2a1b-1234-4abc-9def-0123456789ab'", "id '<uuid>'"),
        ("can't reach host's box", "can't reach host's box"),
        ("took 30s", "took <n>"),
        ("took 12.5 seconds", "took <n>"),
        ("wrote 1.5GB of 2 GiB (75%)", "wrote <n> of <n> (<n>)"),
        ("retry 3 of 5", "retry <n> of <n>"),
        ("worker-3 run_20260217_120000", "worker-<n> run_<n>_<n>"),
        ("python3.11 py311 s3 utf8 F401 E501", "python3.11 py311 s3 utf8 F401 E501"),
        ("connect 127.0.0.1:8080 failed", "connect <ip> failed"),
        ("connect 10.0.0.12 failed", "connect <ip> failed"),
        ("connect [::1]:5432 failed", "connect <ip> failed"),
        (
            "GET https://api.example.com/v1/x?id=3 -> 503",
            "GET <url:api.example.com/v1/x?{query}> -> <n>",
        ),
        ("GET https://bob:pw@API.example.com:8443/x", "GET <url:api.example.com/x>"),
        ("mail bob.smith+ci@example.co.uk failed", "mail <email:example.co.uk> failed"),
        ("a   b\t\tc\n\nd", "a b c d"),
        ("  padded  ", "padded"),
        ("<module> and <lambda> stay", "<module> and <lambda> stay"),
        ("HTTP/1.1 and/or read/write N/A", "HTTP/<n> and/or read/write N/A"),
    ],
)
def test_normalize_message(message: str, expected: str) -> None:
    assert normalize_message(message) == expected


SAME = [
    (
        "Timeout after 30s fetching https://api.example.com/r/123",
        "Timeout after 45s fetching https://api.example.com/r/9876",
    ),
    (
        "2024-05-01T12:00:00Z request 7f3c2a1b-1234-4abc-9def-0123456789ab failed",
        "2025-12-31T23:59:59Z request 00000000-0000-4000-8000-000000000000 failed",
    ),
    ('File "/home/a/proj/app.py", line 12', 'File "/srv/b/proj/app.py", line 912'),
    ("connect to 10.0.0.1:5432 refused", "connect to 10.0.0.2:6543 refused"),
    ("segfault at 0x7ffde4a1 pid 4242", "segfault at 0x55aa01 pid 17"),
    ("commit 3f2a9c1 broke tests/test_a.py:12", "commit 9e8d7c6b5 broke tests/test_a.py:40"),
    ("disk 91% full", "disk 97.5% full"),
    ("wrote 1.2 MB", "wrote 980 kB"),
    ("error   in\nstep", "error in step"),
    # npm's debug log, named by the time of the run with `_` for `:` and `.`
    (
        "npm ERR!     /home/ubuntu/.npm/_logs/2020-08-06T09_50_56_130Z-debug.log",
        "npm ERR!     /home/ci/.npm/_logs/2021-01-02T11_22_33_444Z-debug.log",
    ),
    # the blind set (tests/fixtures/corpus_blind3): a container's id, a klog header and a
    # pod's suffix, a Go duration, request and trace ids
    (
        'docker: Error response from daemon: Conflict. The container name "/web" is already in'
        ' use by container "4a5ad6bf857fab88373f2e4c6f2d3d8ca95d77dd9a35d4792bc2340dd163114f".',
        'docker: Error response from daemon: Conflict. The container name "/web" is already in'
        ' use by container "92b3b26333cc105bfee4d6f6b4eddc0a433e774360c1bcbfe797093c6fa531e9".',
    ),
    (
        'I1103 14:17:19.868380       1 factory.go:445] "Unable to schedule pod; no fit; waiting"'
        ' pod="testproj/httpd-example-1-6hdqv"',
        'I1104 09:02:11.100200       1 factory.go:445] "Unable to schedule pod; no fit; waiting"'
        ' pod="testproj/httpd-example-1-x8k2p"',
    ),
    ("panic: test timed out after 8m0s", "panic: test timed out after 10m0s"),
    (
        'API Error: 529 {"type":"overloaded_error","request_id":"req_011CZAau32QzxDkriovTaFCB"}',
        'API Error: 529 {"type":"overloaded_error","request_id":"req_011CZTGFbArQvnRwr6evz8ca"}',
    ),
]

DIFFERENT = [
    ("Network timeout during receipt download", "Login page changed: selector not found"),
    ("connection refused", "connection reset"),
    ("No module named 'x'", "cannot import name 'x'"),
    ("https://api.example.com/x failed", "https://auth.example.com/x failed"),
    ("F401 unused import", "F811 redefinition"),
    ("KeyError: 'user_id'", "KeyError: 'order_id'"),
    ("commit 3f2a9c1 broke tests/test_a.py:12", "commit 3f2a9c1 broke tests/test_b.py:12"),
    (
        "sqlite3.OperationalError: no such table: chat_chat",
        "sqlite3.OperationalError: no such table: admins",
    ),
    (
        "ssh: connect to host github.com port 22: Connection timed out",
        "ssh: connect to host github.com port 22: Network is unreachable",
    ),
]


@pytest.mark.parametrize(("a", "b"), SAME)
def test_repeats_of_one_failure_share_a_signature(a: str, b: str) -> None:
    assert make_signature("transient", "download", a) == make_signature("transient", "download", b)
    key_a = signature_key(make_signature("transient", "download", a))
    assert key_a == signature_key(make_signature("transient", "download", b))


@pytest.mark.parametrize(("a", "b"), DIFFERENT)
def test_different_wording_gives_different_signatures(a: str, b: str) -> None:
    assert make_signature("code", "s", a) != make_signature("code", "s", b)
    assert signature_key(make_signature("code", "s", a)) != signature_key(
        make_signature("code", "s", b)
    )


def test_step_and_class_are_part_of_the_signature() -> None:
    message = "Network timeout during receipt download"
    base = make_signature("transient", "amazon_download", message)
    assert base != make_signature("transient", "ebay_download", message)
    assert base != make_signature("env", "amazon_download", message)
    assert (
        len({signature_key(base), signature_key(make_signature("env", "amazon_download", message))})
        == 2
    )


def test_seed_004_signature_is_kept_verbatim() -> None:
    assert (
        make_signature(
            FailureClass.TRANSIENT, "amazon_download", "Network timeout during receipt download"
        )
        == "transient | amazon_download | Network timeout during receipt download"
    )


@pytest.mark.parametrize("message", [a for pair in SAME + DIFFERENT for a in pair])
def test_normalising_is_idempotent(message: str) -> None:
    once = normalize_message(message)
    assert normalize_message(once) == once


def test_idempotent_on_a_long_traceback_cut_to_length() -> None:
    message = " ".join(
        f'File "/srv/app/mod{i}.py", line {i * 7}, in f{i} at 2024-01-0{i % 9 + 1}'
        for i in range(40)
    )
    once = normalize_message(message)
    assert len(once) <= MAX_MESSAGE
    assert normalize_message(once) == once
    assert not once.endswith(" ")


def test_long_message_is_cut_at_a_word_boundary() -> None:
    message = "word " * 100
    out = normalize_message(message)
    assert len(out) <= MAX_MESSAGE and out.endswith("word")
    unbroken = "x" * 500
    assert normalize_message(unbroken) == "x" * MAX_MESSAGE


def test_normalising_is_deterministic_across_processes() -> None:
    message = "2024-05-01T12:00:00Z GET https://h.example.com/a?b=1 from 10.1.2.3 took 3s"
    code = (
        "import sys; from incidents.signature import make_signature, signature_key; "
        "s = make_signature('transient', 'x', sys.argv[1]); print(s); print(signature_key(s))"
    )
    outs = {
        subprocess.run(
            [sys.executable, "-c", code, message], capture_output=True, text=True, check=True
        ).stdout
        for _ in range(2)
    }
    assert len(outs) == 1
    signature, key = outs.pop().splitlines()
    assert signature == make_signature("transient", "x", message)
    assert key == signature_key(signature)


def test_signature_key_is_96_bits_of_hex_and_filesystem_safe() -> None:
    key = signature_key("transient | amazon_download | Network timeout during receipt download")
    assert re.fullmatch(r"[0-9a-f]{24}", key)
    assert signature_key("a") != signature_key("b")
    assert signature_key("ünïcode | ✓ | x") != signature_key("unicode | x | x")


def test_signature_key_matches_hashlib_blake2b() -> None:
    import hashlib

    text = "code | lint | <path>: F401 unused"
    assert signature_key(text) == hashlib.blake2b(text.encode(), digest_size=12).hexdigest()


def test_signature_key_accepts_lone_surrogates() -> None:
    # Messages decoded with errors="surrogateescape" can carry them.
    assert re.fullmatch(r"[0-9a-f]{24}", signature_key("bad byte \udcff"))


def test_import_is_light() -> None:
    code = (
        "import sys, incidents.signature as s; s.signature_key('x'); s.normalize_message('x'); "
        "print(' '.join(sorted(sys.modules)))"
    )
    mods = set(
        subprocess.run(
            [sys.executable, "-c", code], capture_output=True, text=True, check=True
        ).stdout.split()
    )
    assert "incidents.signature" in mods
    assert not mods & {"typing", "json", "hashlib", "_hashlib", "dataclasses", "pathlib"}
