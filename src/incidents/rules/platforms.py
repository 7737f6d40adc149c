"""Rules for Docker, Kubernetes/Helm, Terraform and git/ssh (database clients:
`incidents.rules.databases`). Row format: `incidents.rules`."""

from __future__ import annotations

from incidents.rules import (
    BARE,
    GENERIC,
    LINT,
    NAMED,
    RATE_LIMIT,
    REFINED,
    SYNTAX,
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
            # the daemon's `Conflict. The container name %q is already in use by container %q.
            # You have to remove (or rename) that container`: a container to free (env)
            "container name in use",
            NAMED,
            UNKNOWN,
            E,
            "container",
            r"The container name \S+ is already in use by container\b",
            'docker: Error response from daemon: Conflict. The container name "/web" is already'
            ' in use by container "4a5a".',
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
            # BuildKit's `Multi-platform build is not supported for the docker driver`: the
            # builder's set-up (a driver to create), whatever its `try again` says
            "builder driver unsupported",
            NAMED,
            UNKNOWN,
            E,
            "platform",
            r"\bMulti-platform build is not supported for the docker driver\b",
            "ERROR: Multi-platform build is not supported for the docker driver.",
        ),
        (
            "build context file missing",
            NAMED,
            UNKNOWN,
            C,
            "cache copy checksum dockerfile",
            r"failed to compute cache key|COPY failed: (?:file not found|stat|forbidden path)"
            r"|failed to calculate checksum of ref"
            r"|failed to read dockerfile: open \S+: no such file or directory",
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
            # the API server's status reason as kubectl prints it (`Error from server (%s): %s`):
            # the named object is not in the cluster, which nobody created (env)
            "kubectl object not found",
            NAMED,
            UNKNOWN,
            E,
            "notfound",
            r"Error from server \(NotFound\)",
            'Error from server (NotFound): deployments.apps "web" not found',
        ),
        (
            # the API server's 504 (apimachinery: StatusReasonTimeout, `the server was unable to
            # return a response in the time allotted, but may still be processing the request`)
            "kubernetes server timeout",
            NAMED,
            TIMEOUT,
            T,
            "timeout allotted",
            r"Error from server \(Timeout\)|\bunable to return a response in the time allotted\b",
            "Error from server (Timeout): the server was unable to return a response in the time"
            " allotted, but may still be processing the request (get pods)",
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
            # `cannot re-use a name that is still in use`: a release to uninstall (env), like a
            # container name still taken
            "helm release name in use",
            NAMED,
            UNKNOWN,
            E,
            "use",
            r"\bcannot re-use a name that is still in use\b",
            "Error: INSTALLATION FAILED: cannot re-use a name that is still in use",
        ),
        (
            # kubelet's FailedMount of a ConfigMap or Secret nobody created
            # (`MountVolume.SetUp failed for volume "x" : configmap "y" not found`)
            "volume source missing",
            NAMED,
            UNKNOWN,
            E,
            "mountvolume",
            r"\bMountVolume\.SetUp failed for volume \S+ : (?:configmap|secret) \S+ not found",
            'MountVolume.SetUp failed for volume "config" : configmap "app-config" not found',
        ),
        (
            # the API server's StatusReasonInvalid (`The %s %q is invalid: %s`): the manifest
            "object invalid",
            NAMED,
            UNKNOWN,
            C,
            "invalid",
            r"\bThe [A-Z]\w+ \S+ is invalid: ",
            'The Deployment "web" is invalid: spec.template.spec.containers[0].image: Required'
            " value",
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
            # a trust failure retrying cannot fix (tests/fixtures/corpus/infra.md, hard case 9:
            # never_retry, not the known_hosts set-up)
            "host key not trusted",
            GENERIC,
            UNKNOWN,
            N,
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
            "repository",
            r"(?i)\bRepository not found\b|fatal: repository '[^']+' not found",
            "ERROR: Repository not found.",
        ),
        (
            # git's advice after any failed first contact with a remote (connect.c,
            # `die_initial_contact`): it follows a refused key as well as an ssh connection
            # that timed out or found no route, so it only says that the contact failed
            "remote contact failed",
            BARE,
            UNKNOWN,
            N,
            "access",
            r"(?i)make sure you have the correct access rights",
            "Please make sure you have the correct access rights",
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
}
