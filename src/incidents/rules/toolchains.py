"""Rules for toolchains a blind run found missing (tests/fixtures/corpus_blind/README.md),
each from the tool's own message templates rather than from one output: Haskell (GHC,
cabal, stack), Scala (scalac, sbt), Dart and Flutter (the analyzer, the front end), Julia,
Perl, esbuild (and vite, wrangler, bun that print its diagnostics), Dockerfile and shell
linters (hadolint, ShellCheck), and the package resolvers of C/C++ (conan, meson), the
JavaScript bundlers (Rollup, vite) and Python test environments (tox, pip-tools/pipenv).
Row format: `incidents.rules`."""

from __future__ import annotations

from incidents.rules import LINT, NAMED, REFINED, SYNTAX, UNKNOWN, VERDICT, C, E, Row

# hadolint's rule ids (README, "Rules"): DL1001, DL3000-DL3062, DL4000-DL4006
_HADOLINT_IDS = ["dl1001"] + [f"dl{n}" for n in range(3000, 3063)]
_HADOLINT_IDS += [f"dl{n}" for n in range(4000, 4007)]

RULES: dict[str, tuple[Row, ...]] = {
    "haskell": (
        (
            # GHC.Tc.Errors.Ppr: the type checker's reports, with or without the
            # `path.hs:L:C: error:` header (GHC < 8 printed none)
            "ghc type error",
            VERDICT,
            LINT,
            C,
            "match scope instance deduce ambiguous",
            r"\bCouldn't match (?:expected type|type|kind)\b|\bVariable not in scope:"
            r"|\bNot in scope: (?:type constructor|data constructor|type variable)?"
            r"|\bNo instance for [(‘`']|\bCould not deduce [(‘`']|\bAmbiguous type variable\b",
            "src/Main.hs:57:3: error: * Couldn't match expected type `Int' with actual type `Bool'",
        ),
        (
            "ghc parse error",
            VERDICT,
            SYNTAX,
            C,
            "parse",
            r"\.l?hs:\d+:\d+(?:-\d+)?: error:?(?: \[GHC-\d+\])?\s*parse error\b"
            r"|\bparse error (?:on input|\(possibly incorrect indentation)",
            "Main.hs:3:1: error: parse error on input `where'",
        ),
    ),
    "scala": (
        (
            # scalac's typer messages (scala.tools.nsc.typechecker), as `file:L: error: ...`
            # or sbt's `[error] file:L:C: ...`
            "scalac type error",
            VERDICT,
            LINT,
            C,
            "scala sbt",
            r"\.(?:scala|sbt):\d+(?::\d+)?: (?:error: )?(?:not found: (?:value|type|object)\b"
            r"|type mismatch;|value \S+ is not a member of\b|could not find implicit value\b"
            r"|recursive (?:value|method) \S+ needs (?:result )?type\b|missing argument list\b"
            r"|too many arguments\b|ambiguous reference to overloaded definition\b)",
            "[error] /src/main/scala/App.scala:6: recursive value x needs type",
        ),
    ),
    "dart": (
        (
            "dart front end error",
            VERDICT,
            LINT,
            C,
            "dart",
            r"\.dart:\d+:\d+: Error: ",
            "lib/main.dart:56:5: Error: The method 'setState' isn't defined for the class"
            " '_MyHomePageState'.",
        ),
        (
            "dart front end syntax error",
            VERDICT,
            SYNTAX,
            C,
            "dart",
            r"\.dart:\d+:\d+: Error: (?:Expected |Unexpected token|Can't find '[)\]}]')",
            "lib/main.dart:12:3: Error: Expected ';' after this.",
        ),
        (
            # `dart analyze` / `flutter analyze`: `error • msg at file:L:C • (code)` (old)
            # and `error - file:L:C - msg - code` (new)
            "dart analyzer error",
            VERDICT,
            LINT,
            C,
            "error",
            r"(?m)^\s*error [•-] [^\n]+ [•-] \(?[a-z][a-z0-9_]+\)?\s*$",
            "  error • Undefined name 'Navigator' at lib/a.dart:174:17 • (undefined_identifier)",
        ),
    ),
    "julia and perl": (
        (
            # base/loading.jl: `ArgumentError: Package X not found in current path`
            # (`Module X not found in current path` before Julia 0.7)
            "julia package not found",
            NAMED,
            UNKNOWN,
            E,
            "package module",
            r"\b(?:Package|Module) [\w.]+ not found in current path\b"
            r"|\bPackage [\w.]+ \[[0-9a-f-]+\] is required but does not seem to be installed\b",
            "ERROR: ArgumentError: Package BenchmarkTools not found in current path.",
        ),
        (
            "perl module not in @INC",
            NAMED,
            UNKNOWN,
            E,
            "locate",
            r"\bCan't locate [\w/:.-]+\.pm in @INC\b",
            "Can't locate File/Which.pm in @INC (you may need to install the File::Which module)",
        ),
    ),
    "esbuild": (
        (
            # esbuild's lexer and parser (`Expected %s but found %s`, `Unterminated ...`), as
            # `✘ [ERROR] ...` or `file:L:C: ERROR: ...`; vite, wrangler and bun print them
            "esbuild parse error",
            VERDICT,
            SYNTAX,
            C,
            "expected unexpected unterminated",
            r"(?:\[ERROR\]|\bERROR:) (?:Expected [^\n]{1,40} but found\b|Unexpected \"[^\"\n]*\""
            r"|Unexpected end of file\b|Unterminated (?:string literal|regular expression"
            r"|template literal|string)\b)",
            'X [ERROR] Expected ";" but found ":"',
        ),
    ),
    "bundlers": (
        (
            # vite/Rollup: `[vite]: Rollup failed to resolve import "x" from "file"`; a package
            # that is not installed (a path in the repository is the code's: next rule)
            "rollup unresolved import",
            NAMED,
            UNKNOWN,
            E,
            "resolve",
            r"\bRollup failed to resolve import \"(?!\.{0,2}/)[^\"\n]+\"",
            '[vite]: Rollup failed to resolve import "lowlight" from "src/lib/Editor.svelte".',
        ),
        (
            "rollup unresolved import (relative)",
            REFINED,
            UNKNOWN,
            C,
            "resolve",
            r"\bRollup failed to resolve import \"\.{0,2}/",
            '[vite]: Rollup failed to resolve import "./store" from "src/main.ts".',
        ),
    ),
    "dockerfile and shell linters": (
        (
            "hadolint finding",
            VERDICT,
            LINT,
            C,
            " ".join(_HADOLINT_IDS),
            r"(?m)^\S+:\d+ DL\d{4} ",
            "Dockerfile:12 DL3008 warning: Pin versions in apt get install.",
        ),
        (
            # ShellCheck's tty format (`In x.sh line 17:` then `^-- SC2086 (info): ...`), its
            # wiki links and its gcc format (`x.sh:17:10: note: ... [SC2086]`)
            "shellcheck finding",
            VERDICT,
            LINT,
            C,
            "line shellcheck note warning error",
            # (a script's header, not Symfony's `In File.php line 210:`)
            r"(?m)^In (?:\S+\.(?:sh|bash|ksh|zsh|bats)|(?:\S*/)?[^\s./]+) line \d+:\s*$"
            r"|\bshellcheck\.net/wiki/SC\d{4}\b"
            r"|:\d+:\d+: (?:note|warning|error): [^\n]*\[SC\d{4}\]",
            "In ./deploy.sh line 17:",
        ),
    ),
    "package resolvers": (
        (
            # conan 1 `Missing prebuilt package for 'x'`, conan 2 `Missing binary: x:id`
            "conan missing binary",
            NAMED,
            UNKNOWN,
            E,
            "missing",
            r"\bMissing prebuilt package for '|\bERROR: Missing binary: \S",
            "ERROR: Missing prebuilt package for 'zlib/1.2.11@conan/stable'",
        ),
        (
            # mesonbuild/dependencies: `Dependency "x" not found` (and `Native dependency x
            # not found`, `Dependency x not found, tried pkgconfig and cmake`)
            "meson dependency not found",
            NAMED,
            UNKNOWN,
            E,
            "dependency",
            r"\b(?:Native )?[Dd]ependency [\"']?[\w.+-]+[\"']? not found\b",
            'meson.build:9:0: ERROR: Dependency "gtk-vnc-2.0" not found, tried pkgconfig',
        ),
        (
            # tox 3 `InterpreterNotFound: python3.8`; tox 4 `could not find python interpreter
            # with spec(s): py38`
            "tox interpreter not found",
            NAMED,
            UNKNOWN,
            E,
            "interpreternotfound interpreter",
            r"\bInterpreterNotFound\b|\bcould not find python interpreter with spec",
            "ERROR: InterpreterNotFound: python3.8",
        ),
        (
            # pip-tools (and pipenv's resolver built on it)
            "pip-tools no matching version",
            NAMED,
            UNKNOWN,
            E,
            "matches",
            r"\bCould not find a version that matches\b",
            "ERROR: Could not find a version that matches django-dotenv",
        ),
    ),
}
