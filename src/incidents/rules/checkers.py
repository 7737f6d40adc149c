"""Rules for checkers of infrastructure code: tflint, ansible-lint, cfn-lint, helm test. Their
findings are verdicts on files of the repository (LINT_FAILURE / TEST_FAILURE, code).
Row format: `incidents.rules`."""

from __future__ import annotations

from incidents.rules import LINT, TEST, VERDICT, C, Row

# ansible-lint's rule ids (docs: "Rules"), as it prints them before a finding
_ANSIBLE_LINT_IDS = (
    "args avoid-implicit command-instead-of-module command-instead-of-shell complexity"
    " deprecated-bare-vars deprecated-local-action deprecated-module empty-string-compare fqcn"
    " galaxy ignore-errors inline-env-var jinja key-order latest literal-compare load-failure"
    " loop-var-prefix meta-incorrect meta-no-info meta-no-tags meta-runtime meta-video-links name"
    " no-changed-when no-free-form no-handler no-jinja-when no-log-password no-prompting"
    " no-relative-paths no-same-owner no-tabs only-builtins package-latest parser-error"
    " partial-become playbook-extension risky-file-permissions risky-octal risky-shell-pipe"
    " role-name run-once sanity schema syntax-check var-naming yaml"
)
_ANSIBLE_ID = (
    "(?:" + "|".join(i.replace("-", r"\-") for i in _ANSIBLE_LINT_IDS.split()) + r")(?:\[[\w-]+\])?"
)
_ANSIBLE_WORDS = " ".join(sorted({i.split("-")[0] for i in _ANSIBLE_LINT_IDS.split()}))
# the sections of a CloudFormation template, where cfn-lint (v0) locates a finding
_CFN_SECTIONS = "Resources Parameters Outputs Mappings Conditions Metadata Rules Transform"

RULES: dict[str, tuple[Row, ...]] = {
    "tflint": (
        (
            # tflint's summary before its findings (`1 issue(s) found:`)
            "tflint issues",
            VERDICT,
            LINT,
            C,
            "issue",
            r"(?m)^\d+ issue\(s\) found:",
            "2 issue(s) found:",
        ),
    ),
    "ansible-lint": (
        (
            "ansible-lint finding",
            VERDICT,
            LINT,
            C,
            "yml yaml " + _ANSIBLE_WORDS,
            rf"(?m)\.ya?ml:\d+(?::\d+)?: (?:\[[EW]\d{{3}}\]|{_ANSIBLE_ID}(?::|\s|$))"
            rf"|^{_ANSIBLE_ID}: [A-Z]",
            "site.yml:3: risky-file-permissions",
        ),
        (
            "ansible-lint summary",
            VERDICT,
            LINT,
            C,
            "failed rule",
            r"\bFailed: [1-9]\d* failure\(s\), \d+ warning\(s\)|^\s*Rule Violation Summary\s*$",
            "Failed: 473 failure(s), 60 warning(s) on 77 files.",
        ),
    ),
    "cfn-lint": (
        (
            "cfn-lint finding",
            VERDICT,
            LINT,
            C,
            "cfn " + _CFN_SECTIONS.lower(),
            r"(?m)\[cfn-lint\] [EW]\d{4}\b|^[EW]\d{4}:? [A-Z][^\n]* at "
            rf"(?:{_CFN_SECTIONS.replace(' ', '|')})(?:/|$)",
            "E3012 Property should be of type Json at Resources/Assoc/Properties/Parameters",
        ),
        (
            "cfn-lint template invalid",
            VERDICT,
            LINT,
            C,
            "template",
            r"(?m)^(?:\S+ )?Template invalid!",
            "Template invalid!",
        ),
    ),
    "helm": (
        (
            "helm test failed",
            VERDICT,
            TEST,
            C,
            "pod phase",
            r"(?m)\bpod [\w.-]*-test\b[\w.-]* failed\b|^Phase:\s+Failed\s*$",
            "Error: pod web-test-connection failed",
        ),
    ),
}
