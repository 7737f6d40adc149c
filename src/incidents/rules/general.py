"""Rules any tool's output may trip: credentials and permissions, billing, disk, memory,
locks, missing programs and variables, shells, hooks and the TASK_FAILED marker. Row
format: `incidents.rules`."""

from __future__ import annotations

from incidents.rules import (
    BARE,
    GENERIC,
    HOOK,
    LINT,
    NAMED,
    REFINED,
    SYNTAX,
    TASK,
    UNKNOWN,
    VERDICT,
    C,
    E,
    N,
    Row,
    T,
)

RULES: dict[str, tuple[Row, ...]] = {
    "credentials and permissions": (
        (
            "authentication failed",
            GENERIC,
            UNKNOWN,
            N,
            "authentication invalid expired revoked credentials unauthorized unauthorised"
            " authorized authorised denied password login logged unauthenticated",
            r"(?i)\bauthentication (?:failed|failure|required|error)\b|\binvalid (?:credentials"
            r"|api[ _-]?key|(?:access |auth |bearer |refresh )?token|client secret|password)\b"
            r"|\b(?:token|credentials?|session|password|key) (?:has |have )?(?:expired|been revoked)"
            r"|\b(?:token|credentials|password|key|secret) (?:is|are) (?:invalid|not valid"
            r"|expired|revoked)\b"
            r"|\bexpired (?:token|credentials)\b|\bbad credentials\b|\bnot authori[sz]ed\b"
            r"|\bunauthori[sz]ed\b|\baccess denied\b|\b(?:invalid|incorrect) (?:username or "
            r"(?:password|token)|password)\b|\blogin failed\b|\bmust be logged in\b"
            # not terraform's `- Installed hashicorp/oci v6.13.0 (unauthenticated)`: a package
            # installed without a signature check, a success line (`Installed %s v%s (%s%s)`)
            r"|(?<!\()\bunauthenticated\b|\bunauthenticated\b(?!\))",
            "fatal: Authentication failed for 'https://github.com/o/r.git/'",
        ),
        (
            "permission denied",
            GENERIC,
            UNKNOWN,
            N,
            "permission permitted denied insufficient permissions privileges scopes owner",
            r"(?i)\bpermission denied\b|\boperation not permitted\b|\baccess is denied\b"
            r"|\binsufficient (?:permissions|privileges|scopes?)\b|\b(?:do|does) not have (?:the )?"
            r"(?:required )?(?:permissions?|access|authorization)\b|\bmust be owner of\b"
            r"|\baccess to the path .{1,200} is denied\b",
            "open(/etc/x): Permission denied",
        ),
        (
            "named permission error",
            NAMED,
            UNKNOWN,
            N,
            "permissionerror eacces eperm accessdenied accessdeniedexception"
            " unauthorizedaccessexception permission_denied permissiondenied",
            r"\b(?:PermissionError|EACCES|EPERM|AccessDenied|AccessDeniedException"
            r"|UnauthorizedAccessException|PERMISSION_DENIED|PermissionDenied)\b",
            "npm ERR! code EACCES",
        ),
        (
            "license",
            GENERIC,
            UNKNOWN,
            N,
            "license licence",
            r"(?i)\blicen[cs]e\b[^\n]{0,30}\b(?:expired|invalid|required|not found|missing)\b"
            r"|\b(?:invalid|expired|no valid) licen[cs]e\b",
            "no valid license found",
        ),
    ),
    "disk and memory": (
        (
            "disk full",
            GENERIC,
            UNKNOWN,
            E,
            "space enospc quota full diskpressure errno",
            r"(?i)\bno space left on device\b|\bENOSPC\b|\bdisk quota exceeded\b|\bnot enough "
            r"space on the disk\b|\binsufficient disk space\b|\b(?:database or )?disk is full\b"
            r"|\bout of disk space\b|\bDiskPressure\b|\bThe table '[^']+' is full\b|\[Errno 28\]",
            "OSError: [Errno 28] No space left on device",
        ),
        (
            "read-only file system",
            GENERIC,
            UNKNOWN,
            E,
            "only readonly erofs",
            r"(?i)\bread-?only file ?system\b|\bEROFS\b|\battempt to write a readonly database\b",
            "touch: cannot touch '/usr/lib/x': Read-only file system",
        ),
        (
            "out of memory",
            GENERIC,
            UNKNOWN,
            E,
            "memory exhausted allocation allocate killed 137 bad_alloc oom signal kill oomd"
            " oom_kill oom_killer oomkiller",
            r"(?i:\bout of memory\b(?!\?)|\bcannot allocate memory\b|\bmemory (?:exhausted|quota exceeded)\b"
            r"|\bfailed to "
            r"allocate memory\b|\bmemory allocation (?:of \d+ bytes )?failed\b|\bnot enough memory\b"
            r"|\bexceed(?:s|ed|ing)? (?:the )?memory limit|\bKilled signal terminated program\b"
            r"|\bexit(?:ed)? (?:with )?(?:code|status):? 137\b|returned a non-zero code: 137"
            r"|\binsufficient memory\b|\bKilled process \d+|\bError 137\b|\bunable to allocate [\d.]+ ?[KMGT]i?B\b)"
            r"|\bstd::bad_alloc\b|(?m:^(?!.*(?:internal compiler error|Segmentation fault|Abort))"
            r".*\bsignal terminated program\b)"
            r"|\bOOM\b|(?m:^Killed$)|\b\d+ Killed\s"
            # SIGKILL as systemd reports it, and the kernel's or systemd-oomd's killer
            r"|\bstatus=9/KILL\b|\b(?i:oom[-_ ]?kill(?:er|ed)?|systemd-oomd|oomd)\b",
            "c++: fatal error: Killed signal terminated program cc1plus",
        ),
        (
            "named out of memory",
            NAMED,
            UNKNOWN,
            E,
            "memoryerror enomem oomkilled outofmemoryerror outofmemoryexception"
            " err_worker_out_of_memory",
            r"\b(?:MemoryError|ENOMEM|OOMKilled|OutOfMemoryError|OutOfMemoryException"
            r"|ERR_WORKER_OUT_OF_MEMORY)\b",
            "MemoryError",
        ),
        (
            # an exception whose own words say memory ran out (vllm `ValueError: No available
            # memory for the cache blocks`, `RuntimeError: ... not enough memory`): at the
            # level of the class name, env wins the tie with "Python runtime error" (code)
            "exception naming memory exhaustion",
            NAMED,
            UNKNOWN,
            E,
            "memory",
            r"\b[A-Z]\w*(?:Error|Exception): [^\n]{0,120}\b(?i:no (?:available|free)"
            r" (?:\w+ )?memory|not enough (?:\w+ )?memory|insufficient (?:\w+ )?memory"
            r"|cannot allocate memory|memory (?:is )?exhausted)\b",
            "ValueError: No available memory for the cache blocks. Try increasing"
            " `gpu_memory_utilization` when initializing the engine.",
        ),
    ),
    "locks and busy services": (
        (
            "lock or deadlock",
            GENERIC,
            UNKNOWN,
            T,
            "deadlock locked lock serialize serialization restarting busy another",
            r"(?i)\bdeadlock (?:detected|found)\b|\bdatabase (?:table )?is locked\b|\bcould not "
            r"(?:obtain|acquire|get) (?:a |the )?lock\b|\b(?:unable|failed) to (?:obtain|acquire) "
            r"(?:a |the )?lock\b|\bwaiting for (?:cache |the )?lock\b|\bcould not serialize access"
            r"\b|\bserialization failure\b|\btry restarting transaction\b|\bresource busy\b"
            r"|\btext file busy\b|\bcannot lock ref '[^']+'"  # git: a ref another fetch is moving
            r"|\banother (?:[\w-]+ )?(?:process|operation|instance) (?:is|seems "
            r"to be) (?:running|in progress|holding)|\bis (?:already )?in use by another\b",
            "sqlite3.OperationalError: database is locked",
        ),
        (
            "named lock error",
            NAMED,
            UNKNOWN,
            T,
            "deadlockdetected serializationfailure 40p01 er_lock_deadlock sqlite_busy"
            " locknotavailable 55p03 40001 etxtbsy ebusy",
            r"\b(?:DeadlockDetected|SerializationFailure|40P01|ER_LOCK_DEADLOCK|SQLITE_BUSY"
            r"|LockNotAvailable|55P03|ETXTBSY|EBUSY)\b|SQLSTATE\[40001\]|\bSQLSTATE 40001\b"
            r"|\(40001\)",
            "psycopg2.errors.DeadlockDetected: deadlock detected",
        ),
        (
            "temporarily unavailable",
            GENERIC,
            UNKNOWN,
            T,
            "temporarily again eagain unavailable ready busy",
            r"(?i)\btemporarily unavailable\b|\bEAGAIN\b|\btry again(?: later| in a (?:few|moment)"
            r"| shortly)?\b|\bis (?:currently )?unavailable\b|\bnot ready yet\b|\bserver is busy\b",
            "Resource temporarily unavailable",
        ),
    ),
    "missing programs and settings": (
        (
            "command not found",
            GENERIC,
            UNKNOWN,
            E,
            "command recognized executable path program binary compiler interpreter",
            r"(?i)\bcommand not found\b|is not recognized as (?:an internal or external command"
            r"|the name of a cmdlet)|executable file not found in \$?PATH|\bnot found (?:on|in) "
            r"(?:the )?\$?PATH\b|\bcould not find (?:an? )?(?:executable|program)\b|\bcommand '[^']+'"
            r" not found\b|\b(?:program|executable|binary|compiler|interpreter) (?:not found|is not "
            r"installed)",
            "bash: aws: command not found",
        ),
        (
            "program not found",
            GENERIC,
            UNKNOWN,
            E,
            "directory found enoent program winerror",
            r"(?m)^(?:\S*/)?(?:ba|z|da|k)?sh: (?:line \d+: |\d+: )?\S+: (?:No such file or directory"
            r"|not found)$|^g?make(?:\[\d+\])?: [\w.+-]+: (?:No such file or directory|Command not "
            r"found)$|\benv: [‘'\"]?[\w.-]+[’'\"]?: No such file or directory"
            r"|(?:FileNotFoundError|OSError|error): \[(?:Errno|WinError) 2\] [^\n]*: '[^'/.\\]+'$"
            r"|\berror: command '[^']+' failed: No such file or directory"
            r"|\bspawn \S+ ENOENT\b|Cannot run program \"[^\"]+\"|\[WinError 2\] The system cannot "
            r"find the file specified",
            "/bin/sh: 1: gcc: not found",
        ),
        (
            "exit 126/127 in text",
            GENERIC,
            UNKNOWN,
            E,
            "126 127",
            r"(?i)\b(?:Error|exit status|exit code:?|exited with code|returned a non-zero code:) "
            r"12[67]\b",
            "make: *** [Makefile:4: build] Error 127",
        ),
        (
            "not executable",
            REFINED,
            UNKNOWN,
            E,
            "execute exec interpreter permission",
            r"(?i)\bcannot execute binary file\b|\bexec format error\b|(?<!\^M)(?<!\r): bad interpreter\b"
            r"|(?m:^(?:\S*/)?(?:ba|z|da|k)?sh: (?:line \d+: |\d+: )?\S+: Permission denied$)",
            "bash: ./deploy.sh: Permission denied",
        ),
        (
            "shared library missing",
            GENERIC,
            UNKNOWN,
            E,
            "shared object libraries library dll",
            r"(?i)\bcannot open shared object file\b|\berror while loading shared libraries\b"
            r"|\bLibrary not loaded\b|\bDLL load failed\b|\bUnable to load (?:shared library|DLL)\b"
            r"|\bcould not load library\b",
            "python3: error while loading shared libraries: libssl.so.3: cannot open shared object"
            " file",
        ),
        (
            # a client that finds no credential to send (pulumi `unable to discover AWS
            # AccessKeyID`, `could not find default credentials`): set-up, not authority
            "credentials not found",
            GENERIC,
            UNKNOWN,
            E,
            "credentials credential accesskeyid secretaccesskey key",
            r"(?i)\b(?:unable to|could not|couldn't|cannot|failed to) (?:discover|find|locate)"
            r" (?:any |valid |default |the )*(?:[\w-]+ ){0,2}(?:credentials?|access ?key ?id"
            r"|secret ?access ?key|api[ _-]?key)\b",
            "error: unable to discover AWS AccessKeyID and/or SecretAccessKey",
        ),
        (
            "missing environment variable",
            GENERIC,
            UNKNOWN,
            E,
            "environment variable variables unbound parameter must set",
            r"(?i:environment variable\b[^\n]{0,80}\b(?:not set|not defined|missing|required|unset"
            r"|must be set|is empty))|(?i:\bmissing (?:required )?(?:environment )?variables?\b)"
            r"|\bunbound variable\b|\bparameter (?:null or )?not set\b|(?i:\bmust be set\b)"
            r"|\b[A-Z][A-Z0-9_]{2,} (?:is not set|is not defined|not set|is empty)\b",
            "environment variable AMAZON_TOKEN is not set",
        ),
    ),
    "missing dependencies": (
        (
            # R `there is no package called 'x'`, `package 'x' is not installed`
            "package not installed",
            GENERIC,
            UNKNOWN,
            E,
            "package",
            r"(?i)\b(?:there is )?no (?:such )?package (?:called|named)\b|\bpackage [‘'\"`]"
            r"[^’'\"`\n]+[’'\"`] (?:is not installed|is not available|was not found|not found)\b",
            "Error in loadNamespace(name) : there is no package called ‘unix’",
        ),
        (
            # autoconf's `configure: error:` about the machine: a library, header, program
            # or compiler it did not find (nothing in the code's own files)
            "configure found a dependency missing",
            NAMED,
            UNKNOWN,
            E,
            "configure",
            r"(?i)\bconfigure: error: [^\n]*(?:\bnot found\b|\bcannot find\b|\bcould not find"
            r"\b|\bunable to find\b|\bnot installed\b|\bis required\b|\brequired\b[^\n]*\bnot\b"
            r"|\bmissing\b|\bno acceptable\b|\bcannot create executables\b|\bnot usable\b"
            r"|\bnot present\b)",
            "configure: error: OCI libraries not found",
        ),
        (
            # a file an import or include names, missing from the search path (protoc:
            # `x.proto: File not found.`, `Import "x.proto" was not found or had errors`)
            "imported file not found",
            GENERIC,
            UNKNOWN,
            E,
            "file import include",
            r"(?m)^[\w./-]+: File not found\.?$|\b(?:Import|Include|include file) [\"'][^\"'\n]+"
            r"[\"'] (?:was )?not found\b|\b(?i:could not find include file)\b",
            'http_bookstore.proto: Import "google/api/annotations.proto" was not found or had'
            " errors",
        ),
        (
            # a cloud resource the deployment expects and nobody created (serverless:
            # `The serverless deployment bucket "x" does not exist`)
            "cloud resource missing",
            GENERIC,
            UNKNOWN,
            E,
            "bucket buckets stack queue topic cluster project group namespace vault dataset"
            " subscription zone account subnet vpc registry",
            r"(?i)\b(?:bucket|stack|queue|topic|cluster|project|resource group|namespace|key vault"
            r"|dataset|subscription|hosted zone|service account|subnet|vpc|registry)\b:?"
            r"(?: (?:with (?:id|name) )?(?:[\"'`‘][^\"'`’\n]{1,120}[\"'`’]|[\w.:/-]{1,120}))?"
            r" (?:does not exist|doesn't exist|was not found|could not be found|not found)\b",
            'The serverless deployment bucket "chromda-dev-serverlessdeploymentbucket-x" does not'
            " exist.",
        ),
        (
            # an installed program paired with the wrong version of another (chromedriver and
            # Chrome): the machine's set-up, not the code
            "installed versions mismatch",
            GENERIC,
            UNKNOWN,
            E,
            "supports current",
            r"\bonly supports [\w ]{1,40}? versions? \d+|\bCurrent (?:browser|\w+) version is"
            r" \d",
            "session not created: This version of ChromeDriver only supports Chrome version 102",
        ),
    ),
    "shells": (
        (
            "shell syntax error",
            VERDICT,
            SYNTAX,
            C,
            "syntax eof parse substitution",
            r"\bsyntax error near unexpected token\b|\bsyntax error: unexpected end of file\b"
            r"|\bunexpected EOF while looking for matching\b|\bSyntax error: (?:\"[^\"]*\" "
            r"unexpected|end of file unexpected|Unterminated quoted string)|\bsyntax error: "
            r"unterminated quoted string\b|\bparse error near\b|\bbad substitution\b",
            "x.sh: line 3: syntax error near unexpected token `fi'",
        ),
        (
            "syntax error",
            GENERIC,
            SYNTAX,
            C,
            "syntax syntaxerror parse parsing unexpected",
            r"(?i)\bsyntax ?error\b|\bparse error\b|\bparsing error\b|\bunexpected token\b",
            "Error: Parse error on line 12: unexpected '}'",
        ),
        (
            "CRLF script",
            REFINED,
            UNKNOWN,
            C,
            "interpreter",
            r"\^M: bad interpreter|\r: bad interpreter",
            "/bin/bash^M: bad interpreter",
        ),
    ),
    "the task and hooks": (
        (
            "TASK_FAILED",
            BARE,
            TASK,
            C,
            "task_failed",
            r"\bTASK_FAILED\b",
            "TASK_FAILED: could not apply",
        ),
        (
            "pre-commit hook id",
            BARE,
            HOOK,
            N,
            "hook",
            r"(?m)^- hook id: \S",
            "- hook id: check-json",
        ),
        (
            "pre_start_hook",
            BARE,
            HOOK,
            N,
            "pre_start_hook pre start_hook hook",
            r"(?i)\bpre[_-]start[_-]hook\b",
            "pre_start_hook exited with 3",
        ),
        (
            "hook failed",
            BARE,
            HOOK,
            N,
            "hook pre",
            r"(?i)\bhook\b[^\n]{0,60}\b(?:failed|declined|rejected)\b|\bpre-commit\b[^\n]{0,60}"
            r"\bfail",
            "remote: pre-receive hook declined",
        ),
        (
            "git hook declined",
            REFINED,
            HOOK,
            N,
            "declined",
            r"\[remote rejected\] [^\n]*\([\w -]*hook declined\)",
            " ! [remote rejected] main -> main (pre-receive hook declined)",
        ),
        (
            "hook modified files",
            VERDICT,
            LINT,
            C,
            "hook",
            r"(?i)files were modified by this hook",
            "- files were modified by this hook",
        ),
    ),
}
