"""Rules for make/gcc/clang/CMake, the JVM (javac, Kotlin, Maven, Gradle), Go and Rust/cargo.
Row format: `incidents.rules`."""

from __future__ import annotations

from incidents.rules import (
    BARE,
    GENERIC,
    LINT,
    NAMED,
    REFINED,
    SYNTAX,
    TEST,
    TIMEOUT,
    UNKNOWN,
    VERDICT,
    C,
    E,
    Row,
    T,
    any_of,
    words_of,
)

_JAVA_RUNTIME = (
    "NullPointerException ClassCastException ArrayIndexOutOfBoundsException"
    " IndexOutOfBoundsException StringIndexOutOfBoundsException IllegalArgumentException"
    " IllegalStateException NumberFormatException UnsupportedOperationException"
    " ConcurrentModificationException ArithmeticException NoSuchElementException"
    " NoSuchMethodError NoSuchFieldError AbstractMethodError StackOverflowError"
    " UninitializedPropertyAccessException KotlinNullPointerException"
)

RULES: dict[str, tuple[Row, ...]] = {
    "make, gcc, cmake": (
        (
            "missing header or library",
            VERDICT,
            UNKNOWN,
            E,
            "directory found find",
            r"\bfatal error: [^\n:]+\.(?:h|hpp|hh|hxx): No such file or directory|\bfatal error: "
            r"'[^']+\.(?:h|hpp|hh|hxx)' file not found\b|\bcannot find -l[\w.+-]+",
            "src/tls.c:1:10: fatal error: openssl/ssl.h: No such file or directory",
        ),
        (
            "C/C++ syntax",
            VERDICT,
            SYNTAX,
            C,
            "expected stray missing",
            r"\berror: expected [^\n]*(?:before|after|at end of input|at end of declaration)"
            r"|\berror: expected (?:';'|'\)'|'\}'|'\]'|'\{'|identifier|expression|declaration"
            r"|unqualified-id|primary-expression)|\berror: stray '\\\d+' in program|\berror: "
            r"missing terminating .{1,3} character",
            "main.c:5:3: error: expected ';' before 'return'",
        ),
        (
            "C/C++ name or type error",
            VERDICT,
            LINT,
            C,
            "undeclared declared member name implicit incompatible conversion matching conflicting"
            " arguments",
            r"\berror: (?:['‘][^'’]+['’] (?:undeclared|was not declared in this scope|has no member named"
            r"|does not name a type)|unknown type name|use of undeclared identifier|implicit "
            r"declaration of function|incompatible types? |invalid conversion|no matching function"
            r" for call to|conflicting types for|too (?:few|many) arguments to function|no member "
            r"named)",
            "error: 'count' undeclared (first use in this function)",
        ),
        (
            "undefined reference",
            VERDICT,
            LINT,
            C,
            "undefined unresolved symbol symbols",
            r"\bundefined reference to [`']|\bundefined symbols? for architecture|\bunresolved "
            r"external symbol\b|\bld: symbol\(s\) not found",
            "main.c:(.text+0x1e): undefined reference to `compute'",
        ),
        (
            "warnings as errors",
            VERDICT,
            LINT,
            C,
            "warnings werror",
            r"all warnings being treated as errors|\[-Werror(?:=[\w-]+)?\]",
            "cc1: all warnings being treated as errors",
        ),
        (
            "make missing separator",
            VERDICT,
            SYNTAX,
            C,
            "separator",
            r"\*\*\* missing separator\b",
            "Makefile:3: *** missing separator.  Stop.",
        ),
        (
            "make no rule",
            NAMED,
            UNKNOWN,
            C,
            "rule",
            r"\bNo rule to make target\b",
            "make: *** No rule to make target 'src/main.o', needed by 'app'.  Stop.",
        ),
        (
            "cmake missing package",
            NAMED,
            UNKNOWN,
            E,
            "could configuration providing compile",
            r"\bCould NOT find \w+|\bCould not find a package configuration file\b|\bBy not "
            r"providing \"Find\w+\.cmake\"|\bNo CMAKE_\w+_COMPILER could be found\b|\bis not able "
            r"to compile a simple test program\b",
            "Could NOT find OpenSSL, try to set the path to OpenSSL root folder",
        ),
        (
            "CMake error",
            BARE,
            UNKNOWN,
            C,
            "cmake",
            r"\bCMake Error\b",
            "CMake Error at CMakeLists.txt:10 (add_executable):",
        ),
    ),
    "jvm": (
        (
            "javac syntax",
            VERDICT,
            SYNTAX,
            C,
            "expected illegal parsing unclosed statement",
            r"(?:\berror: |\.java:\[\d+,\d+\] )(?:';' expected|'\)' expected|class, interface, "
            r"(?:enum, or record|or enum) expected|illegal start of (?:expression|type)|reached end "
            r"of file while parsing|<identifier> expected|unclosed string literal|not a statement)",
            "App.java:12: error: ';' expected",
        ),
        (
            "javac/kotlinc error",
            VERDICT,
            LINT,
            C,
            "symbol incompatible applied override unreported exist static initialized unresolved"
            " mismatch kt kts",
            r"(?:\berror: |\.(?:java|kt|scala):\[?\d+[,:]\d+\]? )(?:cannot find symbol|incompatible "
            r"types|cannot be applied to|method does not override|is not abstract and does not "
            r"override|unreported exception|package [\w.]+ does not exist|non-static (?:variable"
            r"|method)|might not have been initialized|Unresolved reference|Type mismatch)"
            r"|(?m:^e: \S+\.kts?)",
            "[ERROR] /src/main/java/App.java:[10,5] cannot find symbol",
        ),
        (
            "JVM compilation failed",
            GENERIC,
            LINT,
            C,
            "compilation execution task",
            r"\bCOMPILATION ERROR\b|Compilation failed; see the compiler error output|Execution "
            r"failed for task '[^']*:compile\w*'|> Task :[\w:-]*compile\w* FAILED",
            "> Task :app:compileJava FAILED",
        ),
        (
            "JVM tests failed",
            VERDICT,
            TEST,
            C,
            "failures errors completed task execution",
            r"Tests run: \d+, Failures: (?:[1-9]|\d+, Errors: [1-9])|\d+ tests completed, [1-9]\d* "
            r"failed|> Task :[\w:-]*test FAILED|Execution failed for task '[^']*:test\w*'",
            "Tests run: 12, Failures: 2, Errors: 0, Skipped: 0",
        ),
        (
            "JVM style check",
            VERDICT,
            LINT,
            C,
            "spotless violations violation checkstyle ktlint pmd spotbugs",
            r"\bSpotless\b[^\n]*violations|\bformat violations\b|\bcheckstyle\b[^\n]*violations?"
            r"|\bCheckstyle violations\b|\bktlint\b[^\n]*(?:error|violation)|\bPMD Failure\b"
            r"|\bSpotBugs\b[^\n]*bugs? found",
            "The following files had format violations:",
        ),
        (
            "JVM out of memory",
            NAMED,
            UNKNOWN,
            E,
            "overhead heap native daemon insufficient",
            r"GC overhead limit exceeded|Java heap space|unable to create (?:new )?native thread"
            r"|Gradle build daemon disappeared unexpectedly|There is insufficient memory for the "
            r"Java Runtime Environment",
            "Gradle build daemon disappeared unexpectedly (it may have been killed or may have"
            " crashed)",
        ),
        (
            "JVM missing class",
            NAMED,
            UNKNOWN,
            E,
            "classnotfoundexception noclassdeffounderror main unsupportedclassversionerror recent"
            " major",
            r"\bClassNotFoundException\b|\bNoClassDefFoundError\b|Could not find or load main class"
            r"|\bUnsupportedClassVersionError\b|compiled by a more recent version of the Java "
            r"Runtime|Unsupported class file major version",
            "Error: Could not find or load main class com.example.App",
        ),
        (
            "JDK missing",
            GENERIC,
            UNKNOWN,
            E,
            "java_home java runtime jvm toolchains release",
            r"JAVA_HOME is (?:not set|set to an invalid directory)|No Java runtime present|Unable "
            r"to locate a Java Runtime|Gradle requires JVM \d+|No matching toolchains found"
            r"|invalid (?:target|source) release: \d+",
            "No Java runtime present, requesting install.",
        ),
        (
            "artifact not found",
            GENERIC,
            UNKNOWN,
            E,
            "artifact find cached resolvable",
            r"\bCould not find artifact\b|\bCould not find [\w.-]+:[\w.-]+:[\w.-]+|\bFailure to "
            r"find [\w.-]+:|was cached in the local repository, resolution will not be reattempted"
            r"|\bNon-resolvable parent POM\b",
            "Could not find artifact com.acme:core:jar:2.1 in central",
        ),
        (
            "dependencies not resolved",
            BARE,
            UNKNOWN,
            E,
            "resolve",
            r"\bCould not resolve (?:all (?:files|dependencies|artifacts)|dependencies for project)"
            r"|\bCould not resolve [\w.-]+:[\w.-]+:[\w.-]+",
            "Could not resolve all files for configuration ':app:runtimeClasspath'.",
        ),
        (
            "Java runtime exception",
            NAMED,
            UNKNOWN,
            C,
            words_of(_JAVA_RUNTIME),
            any_of(_JAVA_RUNTIME),
            'Exception in thread "main" java.lang.NullPointerException',
        ),
        (
            "JVM uncaught exception",
            BARE,
            UNKNOWN,
            C,
            "exception",
            r"Exception in thread \"[^\"]+\"",
            'Exception in thread "main" com.acme.AppException',
        ),
    ),
    "go": (
        (
            "go test failed",
            VERDICT,
            TEST,
            C,
            "fail panic oops",
            r"(?m)^--- FAIL: |^FAIL\s+\S+\s+[\d.]+s$|^FAIL$|^(?:FAIL|PANIC): \S+\.go:\d+: \S"
            r"|^OOPS: \d+ passed, [1-9]\d* (?:FAILED|PANICKED)",
            "--- FAIL: TestParse (0.00s)",
        ),
        (
            "go syntax error",
            VERDICT,
            SYNTAX,
            C,
            "syntax expected go",
            r"\.go:\d+:\d+: syntax error:|\bsyntax error: unexpected\b|\.go:\d+:\d+: expected "
            r"'[^']+', found|(?m:^go: errors parsing go\.mod)",
            "./main.go:7:2: syntax error: unexpected }, expected expression",
        ),
        (
            "go compile error",
            VERDICT,
            LINT,
            C,
            "go",
            # a column, or a directory (old compilers): `file.go:84: msg` alone is a log
            # line of Go's `log` package (Lshortfile), as helm --debug prints
            r"(?m)^(?:\S+\.go:\d+:\d+|\S*/\S+\.go:\d+): \S",
            "./main.go:5:2: undefined: helper",
        ),
        (
            "go build failed",
            VERDICT,
            LINT,
            C,
            "build",
            r"\[build failed\]",
            "FAIL\tgithub.com/acme/app [build failed]",
        ),
        (
            "go panic",
            NAMED,
            UNKNOWN,
            C,
            "panic runtime nil goroutine",
            r"(?m)^panic: |\bruntime error: (?:index out of range|invalid memory address|slice "
            r"bounds out of range|integer divide by zero)|\bnil pointer dereference\b|\bgoroutine \d+"
            r" \[running\]",
            "panic: runtime error: invalid memory address or nil pointer dereference",
        ),
        (
            # the testing package's alarm (`panic(fmt.Sprintf("test timed out after %v", d))`):
            # a time limit reached, not a panic of the code
            "go test timed out",
            REFINED,
            TIMEOUT,
            T,
            "timed",
            r"(?m)^panic: test timed out after \d",
            "panic: test timed out after 10m0s",
        ),
        (
            "go fatal deadlock",
            REFINED,
            UNKNOWN,
            C,
            "goroutines concurrent",
            r"all goroutines are asleep - deadlock|fatal error: concurrent map (?:writes|read and "
            r"map write)",
            "fatal error: all goroutines are asleep - deadlock!",
        ),
        (
            "go module missing",
            VERDICT,
            UNKNOWN,
            E,
            "module package sum requires revision goroot",
            r"\bno required module provides package\b|\bcannot find package \"[^\"]+\" in any of"
            r"|\bmissing go\.sum entry\b|\bgo\.mod requires go >= |\bunknown revision\b|\bpackage "
            r"[\w./-]+ is not in (?:GOROOT|std)\b|\bgo: module [^\n]+: not found\b",
            "main.go:4:2: no required module provides package github.com/x/y; to add it:",
        ),
    ),
    "rust": (
        (
            "rustc error code",
            VERDICT,
            LINT,
            C,
            "error",
            r"\berror\[E\d{4}\]",
            "error[E0308]: mismatched types",
        ),
        (
            "rust crate missing",
            VERDICT,
            UNKNOWN,
            E,
            "e0463 e0514",
            r"\berror\[E0463\]: can't find crate for\b|\berror\[E0514\]",
            "error[E0463]: can't find crate for `std`",
        ),
        (
            "rust syntax",
            VERDICT,
            SYNTAX,
            C,
            "expected unclosed delimiter unterminated mismatched",
            r"\berror: (?:expected (?:one of |`|item|expression|identifier|pattern|type)|this file "
            r"contains an unclosed delimiter|unexpected closing delimiter|unterminated (?:double "
            r"quote string|block comment|raw string)|mismatched closing delimiter)",
            "error: expected one of `.`, `;`, `?`, `}`, or an operator, found `let`",
        ),
        (
            "cargo test failed",
            VERDICT,
            TEST,
            C,
            "failed stdout",
            r"\btest result: FAILED\b|\berror: test failed, to rerun pass\b|(?m:^---- \S+ stdout "
            r"----$)",
            "test result: FAILED. 3 passed; 1 failed; 0 ignored",
        ),
        (
            "rust compile failed",
            VERDICT,
            LINT,
            C,
            "clippy compile",
            r"#\[deny\(clippy::|\bcould not compile `[^`]+`[^\n]* due to \d+ previous errors?",
            'error: could not compile `app` (bin "app") due to 2 previous errors',
        ),
        (
            # clippy's lints denied into errors: its notes `` `-D clippy::x` implied by `-D
            # warnings` `` and its links to the lint list (rust-clippy/master/index.html#x)
            "clippy finding",
            VERDICT,
            LINT,
            C,
            "clippy",
            r"`-D clippy::[\w-]+`|\brust-clippy/master/index\.html#\w+|\#\[deny\(clippy::",
            "  = note: `-D clippy::needless-return` implied by `-D warnings`",
        ),
        (
            "rustfmt diff",
            VERDICT,
            LINT,
            C,
            "diff",
            r"(?m)^Diff in \S+ at line \d+:",
            "Diff in /src/main.rs at line 3:",
        ),
        (
            "Rust assertion failed",
            REFINED,
            TEST,
            C,
            "assertion",
            r"(?<!thread 'main' panicked at ')\bassertion failed\b"
            r"|(?<!thread 'main' panicked at ')\bassertion `left [=!]= right` failed",
            "thread 'tests::parse' panicked at 'assertion failed: `(left == right)`",
        ),
        (
            "rust panic",
            NAMED,
            UNKNOWN,
            C,
            "panicked",
            r"\bthread '[^']+' panicked at\b",
            "thread 'main' panicked at src/main.rs:4:5:",
        ),
        (
            "cargo dependency",
            NAMED,
            UNKNOWN,
            E,
            "matching select find rustc toolchain linker library openssl",
            r"\bno matching package named\b|\bfailed to select a version for\b|\bcould not find `"
            r"[^`]+` in registry\b|\brequires rustc [\d.]+ or newer\b|\btoolchain '[^']+' is not "
            r"installed\b|\blinker `[^`]+` not found\b|\bcould not exec the linker\b"
            r"|\bcould not find system library\b|\bCould "
            r"not find directory of OpenSSL installation\b",
            "error: linker `cc` not found",
        ),
        (
            "cargo build script failed",
            BARE,
            UNKNOWN,
            E,
            "custom",
            r"\bfailed to run custom build command for\b",
            "error: failed to run custom build command for `openssl-sys v0.9.90`",
        ),
    ),
}
