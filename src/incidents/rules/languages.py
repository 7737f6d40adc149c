"""Rules for Python, Node/npm/yarn/pnpm and TypeScript. Row format:
`incidents.rules`."""

from __future__ import annotations

from incidents.rules import (
    BARE,
    GENERIC,
    LINT,
    NAMED,
    REFINED,
    SYNTAX,
    TEST,
    UNKNOWN,
    VERDICT,
    C,
    E,
    N,
    Row,
    any_of,
    words_of,
)

_PY_RUNTIME = (
    "TypeError NameError AttributeError KeyError IndexError ValueError ZeroDivisionError"
    " UnboundLocalError RecursionError NotImplementedError UnicodeDecodeError"
    " UnicodeEncodeError OverflowError LookupError ReferenceError RangeError"
)
# tsc's parse errors (TS1xxx that say the source does not parse)
_TS_SYNTAX = (
    "1002 1003 1005 1009 1010 1011 1012 1013 1014 1068 1109 1110 1121 1124 1125 1126 1127 1128"
    " 1131 1134 1135 1136 1138 1141 1144 1160 1161 1185 1381 1382 1434 1435"
)

# the type and name errors tsc reports most, for a diagnostic without its file position;
# and its errors in tsconfig.json or the options (TS5023 `Unknown compiler option`, TS18003
# `No inputs were found in config file`, TS6053 `File ... not found`): the repository's too
_TS_CODES = (
    "2304 2305 2306 2307 2322 2339 2345 2349 2353 2362 2367 2416 2448 2454 2531 2532 2551 2552"
    " 2554 2559 2564 2580 2584 2614 2688 2739 2740 2741 2769 2792 6133 6196 7006 7016 7053"
    " 18047 18048 5023 5024 5025 5053 5055 5056 5069 5070 5083 5095 5101 6046 6053 6059"
    " 17004 18002 18003"
)

RULES: dict[str, tuple[Row, ...]] = {
    "python": (
        (
            "SyntaxError",
            VERDICT,
            SYNTAX,
            C,
            "syntaxerror indentationerror taberror",
            r"\b(?:SyntaxError|IndentationError|TabError)\b(?![^\n]*\bJSON\b)",
            "SyntaxError: invalid syntax",
        ),
        (
            "invalid syntax",
            VERDICT,
            SYNTAX,
            C,
            "syntax",
            r"(?i)\binvalid[ -]syntax\b",
            "E999 invalid syntax at line 3",
        ),
        (
            "pytest N failed",
            VERDICT,
            TEST,
            C,
            "failed",
            r"\b[1-9]\d* failed(?:,| in \d)",
            "3 failed, 10 passed in 2.10s",
        ),
        (
            "FAILED tests/...",
            VERDICT,
            TEST,
            C,
            "failed error",
            r"(?m)^FAILED \S|^ERROR \S+::\S",
            "FAILED tests/test_a.py::test_b - assert 1 == 2",
        ),
        (
            "tests failed",
            VERDICT,
            TEST,
            C,
            "test tests failures failure failing",
            r"(?i)(?<!ERR! )(?<!error )\btests? (?:failed|failing)\b|\btest failures?\b|\bthere (?:are|were) (?:test "
            r"failures|failing tests)\b",
            "post_done_hook failed: 2 tests failed",
        ),
        (
            "lint rule code",
            VERDICT,
            LINT,
            C,
            "py pyi",
            r"(?m)^\S+\.pyi?:\d+:\d+: [A-Z]{1,4}\d{3,4}\b|^\s*--> \S+\.pyi?:\d+:\d+$",
            "app.py:1:8: F401 [*] `os` imported but unused",
        ),
        (
            "mypy error:",
            VERDICT,
            LINT,
            C,
            "py pyi",
            r"(?m)^\S+\.pyi?:\d+(?::\d+)?: error: ",
            "app.py:2: error: Incompatible return value type",
        ),
        (
            "would reformat",
            VERDICT,
            LINT,
            C,
            "reformat reformatted",
            r"(?i)\bwould reformat\b|\bwould be reformatted\b",
            "would reformat app.py",
        ),
        (
            "Found N errors",
            VERDICT,
            LINT,
            C,
            "found",
            r"\bFound [1-9]\d* errors?\b",
            "Found 3 errors.",
        ),
        (
            "lint errors",
            VERDICT,
            LINT,
            C,
            "lint linting",
            r"(?i)\blint(?:ing)? (?:errors?|failed|failures?)\b",
            "post_done_hook failed with lint errors in src/app.py",
        ),
        (
            "pytest assertion",
            VERDICT,
            TEST,
            C,
            "assert assertionerror",
            r"(?m)^E\s+(?:assert|AssertionError)\b",
            "E       assert [1, 2, 3, 4] == [0, 1, 2, 3]",
        ),
        (
            "AssertionError",
            NAMED,
            TEST,
            C,
            "assertionerror",
            r"\bAssertionError\b",
            "AssertionError: expected 3",
        ),
        (
            "Python runtime error",
            NAMED,
            UNKNOWN,
            C,
            words_of(_PY_RUNTIME),
            any_of(_PY_RUNTIME) + ":",
            "TypeError: unsupported operand",
        ),
        (
            "Python RuntimeError",
            BARE,
            UNKNOWN,
            C,
            "runtimeerror",
            r"\bRuntimeError: ",
            "RuntimeError: Event loop is closed",
        ),
        (
            "Python traceback",
            BARE,
            UNKNOWN,
            C,
            "traceback",
            r"(?m)^Traceback \(most recent call last\):",
            "Traceback (most recent call last):",
        ),
        (
            "cannot import name",
            REFINED,
            UNKNOWN,
            C,
            "import",
            r"\bImportError: cannot import name\b|\bcannot import name '[^']+' from partially "
            r"initialized module",
            "ImportError: cannot import name 'x' from 'y'",
        ),
        (
            "missing module",
            NAMED,
            UNKNOWN,
            E,
            "modulenotfounderror module importerror",
            r"\bModuleNotFoundError\b|\bNo module named\b|\bImportError\b",
            "ModuleNotFoundError: No module named 'boto3'",
        ),
        (
            "KeyError of a variable",
            REFINED,
            UNKNOWN,
            E,
            "keyerror",
            r"\bKeyError: '[A-Z][A-Z0-9_]{2,}'",
            "KeyError: 'OPENAI_API_KEY'",
        ),
        (
            "pip resolution",
            NAMED,
            UNKNOWN,
            E,
            "resolutionimpossible distribution satisfies conflicting solution solving"
            " solverproblemerror different",
            r"\bResolutionImpossible\b|No matching distribution found for|Could not find a version "
            r"that satisfies the requirement|\bconflicting dependencies\b|No solution found when "
            r"resolving|\bversion solving failed\b|\bSolverProblemError\b|requires a different "
            r"Python\b",
            "ERROR: No matching distribution found for torch==9.9",
        ),
        (
            "pip externally managed",
            NAMED,
            UNKNOWN,
            E,
            "externally",
            r"\bexternally-managed-environment\b|\bThis environment is externally managed\b",
            "error: externally-managed-environment",
        ),
        (
            "Python build tools missing",
            GENERIC,
            UNKNOWN,
            E,
            "microsoft command python unable",
            r"Microsoft Visual C\+\+ [\d.]+ or greater is required|error: command '[^']+' failed: "
            r"No such file or directory|\bPython\.h: No such file or directory|unable to execute "
            r"'[^']+': No such file or directory",
            "error: Microsoft Visual C++ 14.0 or greater is required.",
        ),
        (
            "JSON parse error",
            NAMED,
            UNKNOWN,
            C,
            "json jsondecodeerror expecting",
            r"is not valid JSON|Unexpected token .{1,4} in JSON|JSON\.parse: unexpected"
            r"|\bJSONDecodeError\b|Expecting value: line \d+ column \d+",
            "json.decoder.JSONDecodeError: Expecting value: line 1 column 1 (char 0)",
        ),
    ),
    "node": (
        (
            "Cannot find module",
            NAMED,
            UNKNOWN,
            E,
            "module module_not_found err_module_not_found package resolve",
            r"\bCannot find module '(?!\.{1,2}/)[^']+'|\bMODULE_NOT_FOUND\b"
            r"|\bERR_MODULE_NOT_FOUND\b|Cannot find package '(?!\.{1,2}/)[^']+'"
            r"|Module not found: Error: Can't resolve '(?!\.{1,2}/)[^']+'"
            r"|Could not resolve \"(?!\.{1,2}/)[^\"]+\"",
            "Error: Cannot find module 'express'",
        ),
        (
            "Cannot find module (relative)",
            REFINED,
            UNKNOWN,
            C,
            "module resolve package",
            r"\bCannot find module '\.{1,2}/|Can't resolve '\.{1,2}/|Cannot find package "
            r"'\.{1,2}/|Could not resolve \"\.{1,2}/",
            "Error: Cannot find module './routes/users'",
        ),
        (
            "npm dependency resolution",
            NAMED,
            UNKNOWN,
            E,
            "eresolve etarget matching e404 notarget versions err_pnpm_no_matching_version"
            " err_pnpm_peer_dep_issues err_pnpm_fetch_404 resolve",
            r"\bERESOLVE\b|\bETARGET\b|\bNo matching version found for\b|\bE404\b|\bnotarget\b"
            r"|Couldn't find any versions for|\bERR_PNPM_(?:NO_MATCHING_VERSION|PEER_DEP_ISSUES"
            r"|FETCH_404)\b|unable to resolve dependency tree",
            "npm ERR! code ERESOLVE",
        ),
        (
            "npm auth",
            NAMED,
            UNKNOWN,
            N,
            "e401 e403 eneedauth eotp auth logged",
            r"\bE401\b|\bE403\b|\bENEEDAUTH\b|\bEOTP\b|\bneed auth\b|\bYou must be logged in to\b",
            "npm ERR! code E401",
        ),
        (
            "lockfile out of sync",
            NAMED,
            UNKNOWN,
            C,
            "sync lockfile frozen err_pnpm_outdated_lockfile modified",
            r"are in sync\b|\blockfile needs to be updated\b|--frozen-lockfile\b"
            r"|\bERR_PNPM_OUTDATED_LOCKFILE\b|The lockfile would have been modified",
            "npm ERR! `npm ci` can only install packages when your package.json and"
            " package-lock.json or npm-shrinkwrap.json are in sync.",
        ),
        (
            "node engine",
            NAMED,
            UNKNOWN,
            E,
            "ebadengine engine err_ossl_evp_unsupported unsupported",
            r"\bEBADENGINE\b|\bUnsupported engine\b|The engine \"node\" is incompatible"
            r"|\bERR_OSSL_EVP_UNSUPPORTED\b|digital envelope routines::unsupported",
            "npm WARN EBADENGINE Unsupported engine {",
        ),
        (
            "node-gyp toolchain",
            GENERIC,
            UNKNOWN,
            E,
            "gyp visual",
            r"gyp ERR! find (?:Python|VS)|gyp ERR! stack Error: not found: make|Could not find any "
            r"Visual Studio installation",
            "gyp ERR! find Python",
        ),
        (
            "JavaScript heap",
            NAMED,
            UNKNOWN,
            E,
            "heap err_worker_out_of_memory",
            r"JavaScript heap out of memory|\bReached heap limit\b|\bERR_WORKER_OUT_OF_MEMORY\b",
            "FATAL ERROR: Reached heap limit Allocation failed - JavaScript heap out of memory",
        ),
        (
            "JS test runner failed",
            VERDICT,
            TEST,
            C,
            "failed failing fail ok",
            r"(?m)^Tests?:\s+[1-9]\d* failed\b|^Test Suites:\s+[1-9]\d* failed\b|\b[1-9]\d* "
            r"failing\b|^\s*FAIL\s+\S+\.(?:[cm]?[jt]sx?)\b|^\s*Test Files\s+[1-9]\d* failed\b"
            r"|^\s*Tests\s+[1-9]\d* failed\b|^# fail\s+[1-9]|^not ok \d+ ",
            "  2 failing",
        ),
        (
            # jest-matcher-utils' hint, the head of every failed expectation (a reporter
            # may print it without jest's own `●` and summary lines)
            "jest failed expectation",
            VERDICT,
            TEST,
            C,
            "expect",
            r"\bexpect\((?:received|jest\.fn\(\)|value|function|mock)\)\.(?:not\.|resolves\."
            r"|rejects\.)?to[A-Z]\w*\(",
            "Error: expect(received).toBe(expected) // Object.is equality",
        ),
        (
            "npm test script failed",
            BARE,
            TEST,
            C,
            "test",
            r"\bnpm (?:ERR!|error) Test failed\.",
            "npm ERR! Test failed.  See above for more details.",
        ),
        (
            "eslint stylish finding",
            VERDICT,
            LINT,
            C,
            "error",
            r"(?m)^\s+\d+:\d+\s+error\s+\S[^\n]*\s{2}(?:@?[\w-]+/)?[\w-]+$",
            "  71:42  error  'ev' is defined but never used  no-unused-vars",
        ),
        (
            "JS parser error",
            VERDICT,
            SYNTAX,
            C,
            "unexpected",
            r": Unexpected token(?:,? [^\n()]{1,60})? \(\d+:\d+\)",
            "/app/App.test.js: Unexpected token (7:35)",
        ),
        (
            "eslint problems",
            VERDICT,
            LINT,
            C,
            "problem problems",
            r"\b[1-9]\d* problems? \([1-9]\d* errors?",
            "✖ 3 problems (3 errors, 0 warnings)",
        ),
        (
            "prettier",
            VERDICT,
            LINT,
            C,
            "style prettier",
            r"Code style issues (?:found|were found)|Forgot to run Prettier\?",
            "[warn] Code style issues found in 2 files. Run Prettier with --write to fix.",
        ),
        (
            "JS runtime error",
            NAMED,
            UNKNOWN,
            C,
            "function properties",
            r"\bis not a function\b|Cannot read propert(?:y|ies) of (?:undefined|null)",
            "TypeError [ERR_X]: handler is not a function",
        ),
        (
            "unhandled rejection",
            BARE,
            UNKNOWN,
            C,
            "unhandledpromiserejection unhandled triggeruncaughtexception",
            r"\bUnhandledPromiseRejection\w*|\bUnhandled promise rejection\b"
            r"|\btriggerUncaughtException\b",
            "node:internal/process/promises:288 triggerUncaughtException",
        ),
        (
            # npm's usage errors (`npm ERR! code EUSAGE`), `npm ci` without a lock file above all
            # (`The \`npm ci\` command can only install with an existing package-lock.json`):
            # the repository's files or its CI command, not the machine
            "npm usage error",
            NAMED,
            UNKNOWN,
            C,
            "eusage install",
            r"\bcode EUSAGE\b|\bcan only install with an existing package-lock\.json\b",
            "npm ERR! code EUSAGE",
        ),
        (
            # node's ERR_REQUIRE_ESM (`require() of ES Module %s not supported.`, older `Must use
            # import to load ES Module`): the calling code must use import(), a code change
            "require of ES module",
            NAMED,
            UNKNOWN,
            C,
            "err_require_esm require import",
            r"\bERR_REQUIRE_ESM\b|\brequire\(\) of ES Module\b|\bMust use import to load ES Module\b",
            "Error [ERR_REQUIRE_ESM]: require() of ES Module /app/node_modules/chalk/index.js not"
            " supported.",
        ),
        (
            "address in use",
            NAMED,
            UNKNOWN,
            E,
            "eaddrinuse address allocated usage",
            r"\bEADDRINUSE\b|\baddress already in use\b|\bport is already allocated\b|\bOnly one "
            r"usage of each socket address\b",
            "Error: listen EADDRINUSE: address already in use :::3000",
        ),
    ),
    "typescript": (
        (
            "TypeScript syntax",
            VERDICT,
            SYNTAX,
            C,
            words_of(_TS_SYNTAX, "ts"),
            any_of(_TS_SYNTAX, "TS"),
            "src/app.ts(3,15): error TS1005: ';' expected.",
        ),
        (
            "TypeScript error",
            VERDICT,
            LINT,
            C,
            words_of(_TS_CODES, "ts") + " ts tsx mts cts js jsx vue",
            r"\.(?:[cm]?tsx?|jsx?|vue)(?:\(\d+,\d+\)|:\d+:\d+)(?::| -) error TS\d{4,5}\b|"
            + any_of(_TS_CODES, "error TS")
            # the loaders (ts-loader `[tsl] ERROR`, awesome-typescript-loader `[at-loader]`,
            # fork-ts-checker) print the code without tsc's `error ` before it
            + "|" + any_of(_TS_CODES, "TS") + ": ",
            "src/app.ts(8,7): error TS2322: Type 'string' is not assignable to type 'number'.",
        ),
    ),
}
