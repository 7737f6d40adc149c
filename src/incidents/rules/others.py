"""Rules for ecosystems beyond the issue's first list, from their own message templates:
Ruby (bundler, rspec, rubocop), PHP (the engine, composer), conda, Swift, Elixir, AMQP
brokers, CI job time limits (Azure Pipelines), ROCm/HIP, and test runners whose summary is
a bare "N failed" line (Playwright, vitest). Row format: `incidents.rules`."""

from __future__ import annotations

from incidents.rules import (
    LINT,
    NAMED,
    SYNTAX,
    TEST,
    TIMEOUT,
    UNKNOWN,
    VERDICT,
    C,
    E,
    N,
    Row,
    T,
)

RULES: dict[str, tuple[Row, ...]] = {
    "ruby": (
        (
            "ruby LoadError",
            NAMED,
            UNKNOWN,
            E,
            "loaderror",
            r"\bcannot load such file -- \S+ \(LoadError\)|\(LoadError\)",
            "extconf.rb:1:in `require': cannot load such file -- mkmf (LoadError)",
        ),
        (
            "bundler gem not found",
            NAMED,
            UNKNOWN,
            E,
            "gemnotfound gem",
            r"\bBundler::GemNotFound\b|\bCould not find gem '[^'\n]+'",
            "Could not find gem 'font-awesome-sass' in any of the gem sources (Bundler::GemNotFound)",
        ),
        (
            "rspec failures",
            VERDICT,
            TEST,
            C,
            "examples example",
            r"\b\d+ examples?, [1-9]\d* failures?\b",
            "18 examples, 1 failure",
        ),
        (
            "rubocop offenses",
            VERDICT,
            LINT,
            C,
            "offense offenses",
            r"\b\d+ files? inspected, [1-9]\d* offenses? detected\b",
            "1 file inspected, 1 offense detected",
        ),
    ),
    "php": (
        (
            "php memory exhausted",
            NAMED,
            UNKNOWN,
            E,
            "allowed",
            r"\bAllowed memory size of \d+ bytes exhausted\b",
            "PHP Fatal error:  Allowed memory size of 67108864 bytes exhausted (tried to allocate 20480 bytes)",
        ),
        (
            "composer unresolvable",
            NAMED,
            UNKNOWN,
            E,
            "requirements",
            r"\bYour requirements could not be resolved to an installable set of packages\b",
            "Your requirements could not be resolved to an installable set of packages.",
        ),
    ),
    "conda": (
        (
            "conda packages not found",
            NAMED,
            UNKNOWN,
            E,
            "packagesnotfounderror unsatisfiableerror resolvepackagenotfound",
            r"\b(?:PackagesNotFoundError|UnsatisfiableError|ResolvePackageNotFound)\b",
            "PackagesNotFoundError: The following packages are not available from current channels:",
        ),
    ),
    "swift": (
        (
            "swift not in scope",
            VERDICT,
            LINT,
            C,
            "scope",
            r"\berror: cannot find (?:type )?'[^'\n]+' in scope\b",
            "main.swift:4:9: error: cannot find 'ConsoleIO' in scope",
        ),
    ),
    "elixir": (
        (
            "elixir syntax error",
            VERDICT,
            SYNTAX,
            C,
            "syntaxerror tokenmissingerror mismatcheddelimitererror",
            r"\*\* \((?:SyntaxError|TokenMissingError|MismatchedDelimiterError)\)",
            "** (TokenMissingError) lib/app.ex:10:1: missing terminator: end",
        ),
        (
            "elixir compile error",
            VERDICT,
            LINT,
            C,
            "compileerror",
            r"\*\* \((?:CompileError|UndefinedFunctionError)\)",
            "** (CompileError) lib/veil/secure.ex:8: undefined function html?/0",
        ),
    ),
    "amqp": (
        (
            "amqp access refused",
            NAMED,
            UNKNOWN,
            N,
            "access_refused",
            r"\bACCESS_REFUSED\b",
            "ACCESS_REFUSED - Login was refused using authentication mechanism PLAIN.",
        ),
    ),
    "ci-time-limit": (
        (
            "ci job time limit",
            NAMED,
            TIMEOUT,
            T,
            "longer exceeded",
            r"\bran longer than the maximum time of \d+ minutes\b"
            r"|\bexceeded the maximum allowed time of [\d:]+",
            "##[error]The job running on agent Hosted Agent ran longer than the maximum time of"
            " 60 minutes.",
        ),
    ),
    "rocm": (
        (
            "hip out of memory",
            NAMED,
            UNKNOWN,
            E,
            "hip_error_outofmemory hiperroroutofmemory",
            r"\bHIP_ERROR_OutOfMemory\b|\bhipErrorOutOfMemory\b",
            "failed to allocate 3.00G (3221225472 bytes) from device: HIP_ERROR_OutOfMemory",
        ),
    ),
    "test-summary": (
        (
            "bare N failed summary",
            VERDICT,
            TEST,
            C,
            "failed",
            r"(?m)^\s*[1-9]\d* failed\s*$|^\s*Tests\s+[1-9]\d* failed\b",
            "  1 failed",
        ),
    ),
}
