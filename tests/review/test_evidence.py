"""incidents.evidence: the headline is the failure itself and the decision fits its kind,
from the documents a bundle holds (the cards in Chromium: tests/serve/test_evidence_browser.py)."""

from __future__ import annotations

import pytest

from incidents.evidence import derive, log_tests, missing_names

ID = "incident_20260101_000000_deploy_abc"


def env_incident(message: str = "deploy.sh: exited with 1") -> dict[str, object]:
    return {"failure_class": "env", "message": message, "occurrences": 4}


@pytest.mark.parametrize(
    ("log", "name"),
    [
        ("error: environment variable DEPLOY_TOKEN is not set", "DEPLOY_TOKEN"),
        ("./deploy.sh: line 3: DB_HOST: unbound variable", "DB_HOST"),
        ("./deploy.sh: line 3: API_KEY: parameter null or not set", "API_KEY"),
        ("DB_PASSWORD: missing, export it first", "DB_PASSWORD"),
        ("KeyError: 'STRIPE_SECRET'", "STRIPE_SECRET"),
        ("Missing required environment variable: SENTRY_DSN", "SENTRY_DSN"),
        (
            "pass the key to the client or by setting the OPENAI_API_KEY environment variable",
            "OPENAI_API_KEY",
        ),
    ],
)
def test_a_missing_variable_is_the_headline(log: str, name: str) -> None:
    ev = derive(ID, bucket="escalated", incident=env_incident(), log_tail=f"starting\n{log}\n")
    assert ev.headline == f"missing environment variable {name}"
    assert ev.missing == [name]
    assert ev.suggestion.kind == "set_env" and name in ev.suggestion.text
    assert ev.suggestion.argv[-1] == "--requeue" and name in ev.suggestion.argv[3]
    assert ev.occurrences == 4


def test_env_without_a_name_says_what_the_log_says() -> None:
    program = derive(
        ID,
        bucket="escalated",
        incident=env_incident(),
        log_tail="deploy.sh: line 2: kubectl: command not found\n",
    )
    assert program.headline == "missing program kubectl"
    assert program.suggestion.kind == "install"
    said = derive(
        ID,
        bucket="escalated",
        incident=env_incident(),
        log_tail="connecting\nStripe::AuthenticationError - No API key provided\n",
    )
    assert said.headline == "missing: Stripe::AuthenticationError - No API key provided"
    assert said.suggestion.kind == "set_env"


@pytest.mark.parametrize(
    ("log", "program"),
    [
        ("zsh: command not found: kubectl", "kubectl"),  # the shell's prefix is no program
        ("fish: Unknown command: helm", "helm"),
        ("'docker' is not recognized as an internal or external command,", "docker"),
        ("az : The term 'az' is not recognized as the name of a cmdlet, function", "az"),
        ("Error: Missing required env var: SENTRY_DSN", ""),
    ],
)
def test_each_shell_names_its_missing_program(log: str, program: str) -> None:
    ev = derive(ID, bucket="escalated", incident=env_incident(), log_tail=f"starting\n{log}\n")
    if program:
        assert ev.headline == f"missing program {program}" and ev.suggestion.kind == "install"
    else:  # `env var` names a variable, not a program
        assert ev.headline == "missing environment variable SENTRY_DSN"


@pytest.mark.parametrize(
    "line",
    [
        # the classifier's own env rules, in a tool's wording with no plain cue
        "fatal: could not read Username for 'https://github.com': terminal prompts disabled",
        'psql: error: FATAL: role "deploy" does not exist',
        # another language: the variable's name reads the same in every one
        "Fehler: Umgebungsvariable DATABASE_URL ist nicht gesetzt",
        "エラー: 環境変数 SLACK_TOKEN が設定されていません",
    ],
)
def test_env_without_a_name_leads_with_the_log_line_that_says_it(line: str) -> None:
    log = f"Cloning into 'shop'...\n{line}\n+ exit 1\n"
    ev = derive(ID, bucket="escalated", incident=env_incident(), log_tail=log)
    assert ev.headline == f"missing: {line}"
    # the control: with nothing in the log, the message is what there is
    bare = derive(ID, bucket="escalated", incident=env_incident(), log_tail="+ exit 1\n")
    assert bare.headline == "missing: deploy.sh: exited with 1"


def test_the_missing_thing_named_last_is_the_failure() -> None:
    warned = "warning: PYTHONPATH is not set, using the default\n"
    program = derive(
        ID,
        bucket="escalated",
        incident=env_incident(),
        log_tail=f"{warned}./run.sh: line 5: terraform: command not found\n",
    )
    assert program.headline == "missing program terraform" and program.missing == ["terraform"]
    assert program.suggestion.kind == "install"
    # the control: a missing variable named last is the failure, a program before it not
    variable = derive(
        ID,
        bucket="escalated",
        incident=env_incident(),
        log_tail=f"sh: 1: helm: not found\n{warned}error: DEPLOY_TOKEN is not set\n",
    )
    assert variable.missing == ["PYTHONPATH", "DEPLOY_TOKEN"]
    assert variable.suggestion.kind == "set_env"


@pytest.mark.parametrize(
    ("log", "path"),
    [
        ("FileNotFoundError: [Errno 2] No such file or directory: '.env'", ".env"),
        ("Error: ENOENT: no such file or directory, open '/srv/app/.env'", "/srv/app/.env"),
        ("error: open /home/ci/.kube/config: no such file or directory", "/home/ci/.kube/config"),
        (
            'Load key "/home/ci/.ssh/id_deploy": No such file or directory',
            "/home/ci/.ssh/id_deploy",
        ),
        (
            "DefaultCredentialsError: File /home/ci/adc.json was not found.",
            "/home/ci/adc.json",
        ),
    ],
)
def test_a_missing_file_is_named_with_its_path(log: str, path: str) -> None:
    ev = derive(ID, bucket="escalated", incident=env_incident(), log_tail=f"starting\n{log}\n")
    assert ev.headline == f"missing file {path}" and ev.missing == [path]
    assert ev.suggestion.kind == "provide_file" and path in ev.suggestion.text
    # the control: a code failure's missing file is its log line, not an env decision
    code = derive(ID, bucket="escalated", incident={"failure_class": "code"}, log_tail=log)
    assert code.missing == [] and code.suggestion.kind == "requeue"


def test_capitals_that_are_log_levels_are_no_variable() -> None:
    assert missing_names("ERROR: required file is missing\nWARNING not set up") == ([], [])
    assert missing_names("Error: not found\nsh: 1: helm: not found") == ([], ["helm"])
    # a code failure naming a variable is not an env failure: its tests or log lead
    code = derive(
        ID,
        bucket="escalated",
        incident={"failure_class": "code"},
        log_tail="ValueError: LIMIT is not set to a number\n",
    )
    assert code.kind == "log" and code.suggestion.kind == "requeue" and code.missing == []


REPORT = {
    "issues": [
        {
            "tool": "ruff",
            "path": "shop/cart.py",
            "line": 3,
            "code": "F401",
            "category": "lint",
            "message": "`os` imported but unused",
            "hard": False,
        },
        {
            "tool": "pytest",
            "path": "tests/test_cart.py",
            "line": 12,
            "code": "test-failure",
            "category": "test",
            "message": "tests.test_cart::test_total: assert 41 == 42",
            "hard": True,
        },
    ]
}


def test_a_test_failure_names_its_tests_and_their_messages() -> None:
    ev = derive(ID, bucket="escalated", incident={"failure_class": "code"}, report=REPORT)
    assert ev.headline == "1 failing test(s): tests.test_cart::test_total: assert 41 == 42"
    [test] = ev.tests
    assert (test.name, test.where, test.message) == (
        "tests.test_cart::test_total",
        "tests/test_cart.py:12",
        "assert 41 == 42",
    )
    [finding] = ev.findings
    assert (finding.where, finding.code, finding.tool) == ("shop/cart.py:3", "F401", "ruff")
    assert ev.suggestion.kind == "requeue" and "--requeue" in ev.suggestion.argv


def test_findings_alone_lead_with_the_first_hard_one() -> None:
    report = {
        "issues": [
            REPORT["issues"][0],
            {
                **REPORT["issues"][0],
                "line": 9,
                "hard": True,
                "code": "F821",
                "message": "undefined name `x`",
            },
        ]
    }
    ev = derive(ID, bucket="escalated", incident={"failure_class": "code"}, report=report)
    assert ev.headline == "shop/cart.py:9 F821: undefined name `x` (+1 more)"


def test_tests_from_the_log_when_no_check_ran_them() -> None:
    log = (
        "FAILED tests/test_a.py::test_one - AssertionError: totals differ\n"
        "FAILED tests/test_a.py::test_two\n"
        "FAIL: test_sum (shop.tests.SumTest)\n"
        "Traceback (most recent call last):\n"
        "AssertionError: 3 != 4\n"
        "--- FAIL: TestParse (0.00s)\n"
    )
    found = [(t.name, t.message) for t in log_tests(log)]
    assert found == [
        ("tests/test_a.py::test_one", "AssertionError: totals differ"),
        ("tests/test_a.py::test_two", ""),
        ("shop.tests.SumTest.test_sum", "AssertionError: 3 != 4"),
        ("TestParse", ""),
    ]
    ev = derive(ID, bucket="escalated", incident={"failure_class": "code"}, log_tail=log)
    assert ev.headline.startswith("4 failing test(s): tests/test_a.py::test_one: AssertionError")


def test_the_decision_fits_the_kind() -> None:
    reviewed = derive(
        ID,
        bucket="escalated",
        incident={"failure_class": "code"},
        metadata={"escalation_kind": "review_fix"},
        report=REPORT,
    )
    assert reviewed.suggestion.kind == "accept_fix" and reviewed.kind == "review"
    assert reviewed.headline.startswith("a fix waits for review: ")
    assert reviewed.suggestion.argv == ["resolve-escalation", ID, "--accept-fix"]
    closed = derive(
        ID, bucket="resolved", incident=env_incident(), log_tail="DEPLOY_TOKEN is not set"
    )
    assert closed.suggestion.kind == "none" and closed.suggestion.argv == []
    regressed = derive(
        ID,
        bucket="escalated",
        incident={"message": "boom", "regression_of": "x", "regression_count": 2},
    )
    assert regressed.recurrences == 2 and regressed.headline == "boom"


def test_bad_documents_never_raise() -> None:
    ev = derive(
        ID,
        bucket="escalated",
        incident=[1],
        state="x",
        metadata=None,
        report={"issues": "nope"},
        log_tail="",
    )
    assert ev.headline == "(nothing recorded)" and ev.suggestion.kind == "requeue"
    long_line = "A" * 100_000 + " is not set"  # bounded: searched up to MAX_LINE characters
    assert missing_names(long_line) == ([], [])
