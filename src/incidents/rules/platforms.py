"""Rules for Docker, Kubernetes/Helm, Terraform, git/ssh and database clients (PostgreSQL,
MySQL, SQLite, Redis). Row format: `incidents.rules`."""

from __future__ import annotations

from incidents.rules import (
    BARE,
    GENERIC,
    LINT,
    NAMED,
    RATE_LIMIT,
    REFINED,
    SYNTAX,
    UNKNOWN,
    VERDICT,
    C,
    E,
    N,
    Row,
    T,
)

RULES: dict[str, tuple[Row, ...]] = {
    "docker": (
        (
            "docker daemon not running",
            NAMED,
            UNKNOWN,
            T,
            "docker docker_engine pipe",
            r"Cannot connect to the Docker daemon|Is (?:the|your) docker daemon (?:up and )?running\?"
            r"|dial unix \S*docker\.sock: (?:connect: )?(?:no such file or directory|connection "
            r"refused)|open //\./pipe/"
            r"docker\w*|docker_engine: The system cannot find the file specified",
            "Cannot connect to the Docker daemon at unix:///var/run/docker.sock. Is the docker"
            " daemon running?",
        ),
        (
            "image not found",
            GENERIC,
            UNKNOWN,
            E,
            "manifest image",
            r"\bmanifest unknown\b|\bmanifest for \S+ not found\b|\bno matching manifest for\b"
            r"|\bNo such image\b|\bimage \S+ not found\b",
            "Error response from daemon: manifest for node:99 not found: manifest unknown",
        ),
        (
            "image platform mismatch",
            GENERIC,
            UNKNOWN,
            E,
            "platform",
            r"image's platform \([^)]+\) does not match|\bdoes not match the detected host "
            r"platform\b",
            "The requested image's platform (linux/arm64) does not match the"
            " detected host platform (linux/amd64)",
        ),
        (
            "docker registry denied",
            NAMED,
            UNKNOWN,
            N,
            "requested",
            r"requested access to the resource is denied",
            "denied: requested access to the resource is denied",
        ),
        (
            "build context file missing",
            NAMED,
            UNKNOWN,
            C,
            "cache copy checksum",
            r"failed to compute cache key|COPY failed: (?:file not found|stat|forbidden path)"
            r"|failed to calculate checksum of ref",
            'ERROR: failed to solve: failed to compute cache key: "/app.jar": not found',
        ),
        (
            "Dockerfile syntax",
            VERDICT,
            SYNTAX,
            C,
            "dockerfile",
            r"(?i)dockerfile parse error|\bunknown instruction: ",
            "failed to solve: dockerfile parse error on line 3: unknown instruction: RUNN",
        ),
        (
            "OCI runtime failed",
            BARE,
            UNKNOWN,
            E,
            "oci",
            r"\bOCI runtime (?:create|exec) failed",
            "docker: Error response from daemon: OCI runtime create failed: runc create failed",
        ),
    ),
    "kubernetes": (
        (
            "pod evicted",
            GENERIC,
            UNKNOWN,
            E,
            "low evicted",
            r"The node was low on resource: |\bEvicted\b",
            "The node was low on resource: ephemeral-storage.",
        ),
        (
            "cannot schedule",
            NAMED,
            UNKNOWN,
            E,
            "insufficient nodes failedscheduling affinity untolerated unschedulable",
            r"\bInsufficient (?:cpu|memory|nvidia\.com/gpu|ephemeral-storage|pods)\b|\d+/\d+ nodes "
            r"are available|\bFailedScheduling\b|didn't match Pod's node affinity|had untolerated "
            r"taint|\bUnschedulable\b",
            "0/3 nodes are available: 3 Insufficient memory.",
        ),
        (
            "image pull failed",
            BARE,
            UNKNOWN,
            E,
            "imagepullbackoff errimagepull errimageneverpull invalidimagename pulling pull",
            r"\b(?:ImagePullBackOff|ErrImagePull|ErrImageNeverPull|InvalidImageName)\b|Back-off "
            r"pulling image|Failed to pull image",
            "Warning  Failed  kubelet  Error: ImagePullBackOff",
        ),
        (
            "kubectl forbidden",
            NAMED,
            UNKNOWN,
            N,
            "forbidden logged",
            r"\bis forbidden: User \"[^\"]*\" cannot\b|Error from server \(Forbidden\)|You must be "
            r"logged in to the server",
            'Error from server (Forbidden): pods is forbidden: User "ci" cannot list resource'
            ' "pods"',
        ),
        (
            "kubectl has no cluster",
            REFINED,
            UNKNOWN,
            E,
            "localhost configuration context",
            r"no configuration has been "
            r"provided|no context exists with the name|current-context is not set|invalid "
            r"configuration: no configuration",
            "error: no configuration has been provided, try setting KUBERNETES_MASTER",
        ),
        (
            "resource quota",
            REFINED,
            RATE_LIMIT,
            N,
            "quota",
            r"forbidden: exceeded quota: ",
            'Error from server (Forbidden): pods "web" is forbidden: exceeded quota: compute,'
            " requested: cpu=2",
        ),
        (
            "kind not installed",
            NAMED,
            UNKNOWN,
            E,
            "kind",
            r"no matches for kind \"[^\"]+\" in version",
            'error: resource mapping not found for name: "x" namespace: "" from "c.yaml": no'
            ' matches for kind "Certificate" in version "cert-manager.io/v1"',
        ),
        (
            "manifest invalid",
            NAMED,
            UNKNOWN,
            C,
            "validating validationerror field strict",
            r"error validating data: (?!failed to )|\bValidationError\(|unknown field \"[^\"]+\"|strict decoding"
            r" error",
            'error: error validating "deploy.yaml": error validating data:'
            ' ValidationError(Deployment.spec): unknown field "replica"',
        ),
        (
            "YAML syntax",
            VERDICT,
            SYNTAX,
            C,
            "yaml json scannererror parsererror parsing character find mapping",
            r"yaml: line \d+: (?:mapping values are not allowed|did not find expected|found "
            r"character that cannot start|could not find expected)|error converting YAML to JSON: "
            r"yaml:|YAML parse error|yaml\.(?:scanner|parser)\.(?:ScannerError|ParserError)"
            r"|while parsing a (?:block|flow) (?:mapping|collection)|found character that cannot "
            r"start any token|error in your yaml syntax|Syntax Error while loading YAML"
            r"|\b(?:YAML|JSON) not well-formed\b|(?m:^\s*(?:did not find expected (?:key|'-' "
            r"indicator|<document start>|node content)|could not find expected ':'|mapping values "
            r"are not allowed (?:here|in this context))\s*$)",
            "error: error parsing deploy.yaml: error converting YAML to JSON: yaml: line 7: mapping"
            " values are not allowed in this context",
        ),
        (
            "helm operation in progress",
            GENERIC,
            UNKNOWN,
            T,
            "operation",
            r"another operation \(install/upgrade/rollback\) is in progress",
            "Error: UPGRADE FAILED: another operation (install/upgrade/rollback) is in progress",
        ),
    ),
    "terraform": (
        (
            "terraform syntax",
            VERDICT,
            SYNTAX,
            C,
            "argument block unclosed expression newline character unterminated separator string",
            r"Error: (?:Argument or block definition required|Invalid block definition|Unclosed "
            r"configuration block|Invalid expression|Missing newline after argument|Invalid "
            r"character|Unterminated template string|Missing item separator|Invalid multi-line "
            r"string)",
            "Error: Unclosed configuration block",
        ),
        (
            "terraform invalid configuration",
            VERDICT,
            LINT,
            C,
            "unsupported missing invalid reference incorrect call count for_each duplicate cycle",
            r"Error: (?:Unsupported argument|Unsupported attribute|Unsupported block type|Missing "
            r"required argument|Invalid reference|Reference to undeclared (?:resource|input "
            r"variable|local value|module)|Invalid value for (?:input variable|module argument)"
            r"|Incorrect attribute value type|Invalid function argument|Call to unknown function"
            r"|Invalid count argument|Invalid for_each argument|Duplicate (?:resource|variable"
            r"|output) |Cycle: )",
            "Error: Unsupported argument",
        ),
        (
            "terraform init required",
            NAMED,
            UNKNOWN,
            E,
            "backend plugins inconsistent plugin init installed reinitialization",
            r"Backend initialization required|Required plugins are not installed|Inconsistent "
            r"dependency lock file|Could not load plugin|please run \"terraform init\"|Module not "
            r"installed|Plugin reinitialization required",
            'Error: Backend initialization required, please run "terraform init"',
        ),
        (
            "terraform provider install",
            BARE,
            UNKNOWN,
            E,
            "query install",
            r"Failed to query available provider packages|Failed to install provider",
            "Error: Failed to query available provider packages",
        ),
        (
            "terraform state lock",
            NAMED,
            UNKNOWN,
            T,
            "lock locking conditionalcheckfailedexception",
            r"Error acquiring the state lock|Error locking state|\bConditionalCheckFailedException\b",
            "Error: Error acquiring the state lock",
        ),
        (
            "terraform credentials missing",
            NAMED,
            UNKNOWN,
            E,
            "credential credentials",
            r"No valid credential sources found|failed to refresh cached credentials|\bNo "
            r"credentials found\b",
            "Error: No valid credential sources found",
        ),
        (
            "terraform variable not set",
            NAMED,
            UNKNOWN,
            E,
            "value default",
            r"No value for required variable|is not set, and has no default value",
            "Error: No value for required variable",
        ),
    ),
    "git and ssh": (
        (
            "host key not trusted",
            GENERIC,
            UNKNOWN,
            E,
            "host identification",
            r"Host key verification failed|REMOTE HOST IDENTIFICATION HAS CHANGED|No \w* ?host key "
            r"is known for",
            "Host key verification failed.",
        ),
        (
            "ssh key file",
            REFINED,
            UNKNOWN,
            E,
            "unprotected permissions load",
            r"UNPROTECTED PRIVATE KEY FILE|Permissions \d+ for '[^']+' are too open|Load key "
            r"\"[^\"]+\": (?:invalid format|bad permissions|error in libcrypto)",
            'Load key "/home/ci/.ssh/id_rsa": invalid format',
        ),
        (
            "git credentials missing",
            GENERIC,
            UNKNOWN,
            E,
            "username password terminal",
            r"could not read (?:Username|Password) for '[^']+'|terminal prompts disabled",
            "fatal: could not read Username for 'https://github.com': terminal prompts disabled",
        ),
        (
            "repository not found",
            GENERIC,
            UNKNOWN,
            N,
            "repository access",
            r"(?i)\bRepository not found\b|fatal: repository '[^']+' not found|make sure you have the"
            r" correct access rights",
            "ERROR: Repository not found.",
        ),
        (
            "not a git repository",
            GENERIC,
            UNKNOWN,
            E,
            "repository dubious safe",
            r"not a git repository|detected dubious ownership in repository|safe\.directory",
            "fatal: not a git repository (or any of the parent directories): .git",
        ),
        (
            "merge conflict",
            NAMED,
            UNKNOWN,
            C,
            "conflict conflicts apply unmerged",
            r"CONFLICT \([\w/ -]+\): |Automatic merge failed; fix conflicts|Merge conflict in"
            r"|error: could not apply [0-9a-f]+|You have unmerged paths|Resolve all conflicts "
            r"manually",
            "CONFLICT (content): Merge conflict in src/app.py",
        ),
        (
            "protected branch",
            NAMED,
            UNKNOWN,
            N,
            "gh006 gh013 protected violations secrets",
            r"\bGH006\b|\bGH013\b|Protected branch update failed|protected branch hook declined"
            r"|You are not allowed to push code to protected branches|Repository rule violations "
            r"found|Push cannot contain secrets",
            "remote: error: GH006: Protected branch update failed for refs/heads/main.",
        ),
    ),
    "databases": (
        (
            "database login refused",
            NAMED,
            UNKNOWN,
            N,
            "password pg_hba invalidpassword 28p01 sasl ident peer noauth wrongpass noperm"
            " er_access_denied_error er_dbaccess_denied_error 1045 1044 1142 denied",
            r"password authentication failed for user|no pg_hba\.conf entry for|\bInvalidPassword"
            r"\b|\b28P01\b|SASL authentication failed|(?:Ident|peer) authentication failed"
            r"|\bNOAUTH\b|\bWRONGPASS\b|\bERR invalid password\b|\bNOPERM\b|\bER_(?:DB)?ACCESS_"
            r"DENIED_ERROR\b|\bERROR 10(?:45|44) \(|\bERROR 1142 \(|Access denied for user",
            'FATAL:  password authentication failed for user "app"',
        ),
        (
            "database not provisioned",
            NAMED,
            UNKNOWN,
            E,
            "role database invalidcatalogname 3d000 unknown er_bad_db_error extension",
            r"(?:role|database) \"[^\"]+\" does not exist|\bInvalidCatalogName\b|\b3D000\b|Unknown "
            r"database '[^']+'|\bER_BAD_DB_ERROR\b|extension \"[^\"]+\" is not available",
            'FATAL:  database "orders" does not exist',
        ),
        (
            "database unavailable",
            GENERIC,
            UNKNOWN,
            T,
            "database server terminating clients slots connections cannotconnectnow adminshutdown"
            " 57p01 57p03 53300 receive ssl connection",
            r"the database system is (?:starting up|shutting down|in recovery mode|not yet "
            r"accepting connections)|Is the server running|terminating connection due to "
            r"administrator command|sorry, too many clients already|remaining connection slots are "
            r"reserved|(?i:\btoo many connections\b)|\bCannotConnectNow\b|\bAdminShutdown\b"
            r"|\b57P0[13]\b|\b53300\b|could not receive data from server|SSL SYSCALL error: EOF "
            r"detected|SSL connection has been closed unexpectedly|connection to server at "
            r"\"[^\"]+\"[^\n]* failed",
            "FATAL:  the database system is starting up",
        ),
        (
            "MySQL server unavailable",
            NAMED,
            UNKNOWN,
            T,
            "mysql 2002 2003 2006 2013 er_con_count_error protocol_connection_lost",
            r"Can't connect to (?:local )?MySQL server|Lost connection to MySQL server|MySQL server"
            r" has gone away|\bERROR 20(?:02|03|06|13) \(|\bER_CON_COUNT_ERROR\b"
            r"|\bPROTOCOL_CONNECTION_LOST\b",
            "ERROR 2002 (HY000): Can't connect to local MySQL server through socket",
        ),
        (
            "Redis unavailable",
            NAMED,
            UNKNOWN,
            T,
            "loading busy clusterdown tryagain readonly masterdown connecting clients",
            r"\bLOADING Redis is loading\b|\bBUSY Redis is busy\b|\bCLUSTERDOWN\b|\bTRYAGAIN\b"
            r"|\bREADONLY You can't write against a read only replica|\bMASTERDOWN\b|\bError \d+ "
            r"connecting to [^\s:]+:\d+|max number of clients reached",
            "redis.exceptions.BusyLoadingError: LOADING Redis is loading the dataset in memory",
        ),
        (
            "Redis out of memory or disk",
            NAMED,
            UNKNOWN,
            E,
            "oom misconf",
            r"OOM command not allowed when used memory|\bMISCONF\b",
            "OOM command not allowed when used memory > 'maxmemory'.",
        ),
        (
            "SQL syntax",
            VERDICT,
            SYNTAX,
            C,
            "syntax er_parse_error 42601 near incomplete",
            r"syntax error at or near|You have an error in your SQL syntax|\bER_PARSE_ERROR\b"
            r"|\b42601\b|near \"[^\"]+\": syntax error|\bincomplete input\b",
            'ERROR:  syntax error at or near "FORM"',
        ),
        (
            "SQL column missing",
            NAMED,
            UNKNOWN,
            C,
            "column undefinedcolumn 42703 er_bad_field_error",
            r"column \"[^\"]+\" (?:of relation \"[^\"]+\" )?does not exist|no such column: "
            r"|Unknown column '[^']+'|\bUndefinedColumn\b|\b42703\b|\bER_BAD_FIELD_ERROR\b",
            'psycopg2.errors.UndefinedColumn: column "emial" does not exist',
        ),
        (
            "SQL table missing",
            NAMED,
            UNKNOWN,
            E,
            "relation table undefinedtable 42p01 er_no_such_table",
            r"relation \"[^\"]+\" does not exist|no such table: |Table '[^']+' doesn't exist"
            r"|\bUndefinedTable\b|\b42P01\b|\bER_NO_SUCH_TABLE\b",
            'psycopg2.errors.UndefinedTable: relation "users" does not exist',
        ),
        (
            "SQL constraint",
            NAMED,
            UNKNOWN,
            C,
            "violates duplicate unique foreign null integrityerror uniqueviolation er_dup_entry"
            " 23505 23503 23502",
            r"violates (?:unique|foreign key|not-null|check) constraint|duplicate key value|UNIQUE "
            r"constraint failed|FOREIGN KEY constraint failed|NOT NULL constraint failed|Duplicate "
            r"entry '[^']*' for key|\bIntegrityError\b|\bUniqueViolation\b|\bER_DUP_ENTRY\b"
            r"|\b2350[235]\b",
            "sqlite3.IntegrityError: UNIQUE constraint failed: users.email",
        ),
        (
            "SQLite file unusable",
            NAMED,
            UNKNOWN,
            E,
            "database sqlite_cantopen sqlite_corrupt sqlite_full sqlite_readonly disk sqlite_ioerr"
            " sqlite_ioerr_write sqlite_ioerr_read sqlite_ioerr_fsync",
            r"unable to open database file|database disk image is malformed|disk I/O error"
            r"|\bSQLITE_IOERR\w*|\bSQLITE_(?:CANTOPEN"
            r"|CORRUPT|FULL|READONLY)\b",
            "sqlite3.OperationalError: unable to open database file",
        ),
        (
            "Redis command error",
            NAMED,
            UNKNOWN,
            C,
            "wrongtype unknown wrong",
            r"\bWRONGTYPE\b|\bERR unknown command\b|\bERR wrong number of arguments\b",
            "WRONGTYPE Operation against a key holding the wrong kind of value",
        ),
    ),
}
