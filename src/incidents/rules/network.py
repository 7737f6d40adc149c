"""Rules any networked tool's output may trip: time limits, connections, DNS, TLS, HTTP
statuses and rate limits. Row format: `incidents.rules`."""

from __future__ import annotations

from incidents.rules import (
    BARE,
    GENERIC,
    NAMED,
    RATE_LIMIT,
    REFINED,
    TIMEOUT,
    UNKNOWN,
    E,
    N,
    Row,
    T,
    any_of,
    http,
    words_of,
)

_NAMED_TIMEOUTS = (
    "ETIMEDOUT ESOCKETTIMEDOUT ERR_TIMED_OUT ERR_SOCKET_CONNECTION_TIMEOUT UND_ERR_CONNECT_TIMEOUT"
    " UND_ERR_HEADERS_TIMEOUT DEADLINE_EXCEEDED DeadlineExceeded TimeoutError TimeoutException"
    " TimeoutExpired TimeoutCancellationException SocketTimeoutException HttpTimeoutException"
    " RequestTimeoutException ReadTimeoutException ConnectTimeoutException ReadTimeoutError"
    " ConnectTimeoutError ReadTimeout ConnectTimeout WriteTimeout PoolTimeout APITimeoutError"
    " RequestTimeout QueryCanceled ER_LOCK_WAIT_TIMEOUT OperationTimedOut"
    " LockTimeout ClientTimeout ServerTimeoutException"
)
_NAMED_RATE_LIMITS = (
    "RateLimitError RateLimitExceeded RateLimited RESOURCE_EXHAUSTED ResourceExhausted"
    " TooManyRequests TooManyRequestsException rate_limit_exceeded rate_limit_error"
    " toomanyrequests rateLimitExceeded userRateLimitExceeded RATE_LIMIT_EXCEEDED"
    " SubscriptionRequestsThrottled"
)
_NAMED_CONNECTION = (
    "ECONNRESET ECONNREFUSED ECONNABORTED EPIPE EHOSTDOWN ConnectionResetError"
    " ConnectionRefusedError ConnectionAbortedError ConnectionError BrokenPipeError"
    " RemoteDisconnected IncompleteRead ChunkedEncodingError ProtocolError APIConnectionError"
    " EndpointConnectionError ConnectException ERR_CONNECTION_REFUSED ERR_CONNECTION_RESET"
    " UND_ERR_SOCKET ServerDisconnectedError ClientConnectorError NewConnectionError"
    " ConnectionClosedError SSLEOFError kex_exchange_identification ERR_NETWORK"
    " ERR_CONNECTION_CLOSED ECONNECTION"
)


RULES: dict[str, tuple[Row, ...]] = {
    "time limits": (
        (
            "timed out",
            GENERIC,
            TIMEOUT,
            T,
            "timed timedout",
            r"(?i)\btimed[ -]?out\b",
            "Read timed out. (read timeout=30)",
        ),
        (
            "timeout phrase",
            GENERIC,
            TIMEOUT,
            T,
            "timeout time deadline exceeded reply respond answer",
            r"(?i)\btime-?out (?:during|while|when|after|of \d|on|occurred|exceeded|expired|reached"
            r"|error|waiting|elapsed|awaiting)\b|\b(?:network|read|write|connect|connection|request"
            r"|socket|operation|response|idle|handshake|i/o|lock|lock wait|statement|query"
            r"|execution|session|dial|client|job|step|test|deploy(?:ment)?|worker) time-?out\b(?!=)"
            r"|\btime-?out (?:exceeded|expired)|\btime limit (?:exceeded|reached)\b"
            r"|\btimeout of \d+ ?m?s\b|\bTimeout \d+ ?ms exceeded|\bdeadline exceeded\b"
            r"|\bClient\.Timeout exceeded|\btimeout exceeded\b|\btimeout was reached\b"
            r"|\bTimeout performing\b|\bexceeded (?:its|the) (?:progress )?deadline\b"
            r"|\bwould exceed (?:the )?(?:context )?deadline\b"
            # an answer that never came (the Cassandra driver: `did not reply before timeout`)
            r"|\bbefore (?:the )?time-?out\b|\b(?:did not|didn't|failed to) (?:reply|respond|answer)"
            r" (?:in time|within|before)\b",
            "dial tcp 140.82.112.3:443: i/o timeout",
        ),
        (
            "named timeout",
            NAMED,
            TIMEOUT,
            T,
            words_of(_NAMED_TIMEOUTS),
            any_of(_NAMED_TIMEOUTS),
            "requests.exceptions.ConnectTimeout: HTTPSConnectionPool(host='api.x.io', port=443)",
        ),
        (
            "time limit exceeded",
            GENERIC,
            TIMEOUT,
            T,
            "execution exceeded longer",
            r"(?i)\bmaximum execution time\b|\bexecution time limit\b|\bexceeded the (?:maximum )?"
            r"(?:time|timeout|execution time)\b|\btook longer than\b",
            "##[error]The job running on runner GitHub Actions 2 has exceeded the maximum execution"
            " time of 360 minutes.",
        ),
    ),
    "network": (
        (
            "connection refused/reset",
            GENERIC,
            UNKNOWN,
            T,
            "connection connect couldn pipe hang hung eof closed established failure failed"
            " server transferred reach connecting",
            r"(?i)\bconnection (?:reset|refused|aborted|closed (?:by|unexpectedly|before)|was (?:"
            r"forcibly )?closed|lost|broken)\b|couldn't connect to server|\b(?:failed|unable) to "
            r"connect to\b|\bfailed to establish a new connection\b|\bcould not connect to\b"
            r"|\bconnection to the server \S+ was refused\b|\bbroken pipe\b|\bsocket hang up\b|\bremote end closed connection\b|\bserver closed "
            r"the connection unexpectedly\b|\bunexpected EOF\b(?! while)|\bearly EOF\b|\bremote end "
            r"hung up unexpectedly\b|\bclosed by remote host\b|\bconnection (?:was )?unexpectedly "
            r"closed\b|\bcould not be established\. (?:Broker|Node) may not be available\b"
            # libcurl's error strings (lib/strerror.c), which git, cmake, vcpkg and R print
            r"|\bFailure when receiving data from the peer\b|\bFailed sending data to the peer\b"
            r"|\bServer returned nothing \(no headers, no data\)|\bTransferred a partial file\b"
            # the API SDKs' `APIConnectionError` message (OpenAI's, Anthropic's and other
            # generated clients: `message: str = "Connection error."`), also without the class
            r"|\bConnection error\.(?!\S)",
            "curl: (7) Failed to connect to localhost port 8080: Connection refused",
        ),
        (
            # a server that could not be reached (Prisma P1001 `Can't reach database server`);
            # a row of its own, so its prefilter words are the ones it needs
            "server unreachable",
            GENERIC,
            UNKNOWN,
            T,
            "reach connect connecting",
            r"(?i)\b(?:cannot|can't|could not|couldn't|unable to|failed to) (?:reach|connect)\b"
            r"|\berror (?:while )?connecting to\b",
            "Error: P1001: Can't reach database server at `db`:`5432`",
        ),
        (
            "named connection error",
            NAMED,
            UNKNOWN,
            T,
            words_of(_NAMED_CONNECTION),
            any_of(_NAMED_CONNECTION),
            "Error: read ECONNRESET",
        ),
        (
            "DNS failure",
            GENERIC,
            UNKNOWN,
            T,
            "known resolution getaddrinfo nodename resolve host misbehaving hostname resolving",
            r"(?i)\bname or service not known\b|\btemporary failure in name resolution\b"
            r"|\bgetaddrinfo (?:failed|ENOTFOUND|EAI_AGAIN)\b|\bnodename nor servname\b"
            r"|\bcould not resolve (?:host|hostname|proxy)\b|\bno such host\b|\bserver misbehaving\b"
            r"|\bname resolution failed\b|\bfailed to resolve '[\w.-]+'|\bunknown host\b"
            r"|\bno address associated with hostname\b|\btemporary failure resolving\b"
            r"|\bcould not resolve '[\w.-]+'",
            "dial tcp: lookup proxy.golang.org on 127.0.0.53:53: server misbehaving",
        ),
        (
            "named DNS error",
            NAMED,
            UNKNOWN,
            T,
            "enotfound eai_again eai_noname unknownhostexception nameresolutionerror"
            " err_name_not_resolved",
            r"\b(?:ENOTFOUND|EAI_AGAIN|EAI_NONAME|UnknownHostException|NameResolutionError"
            r"|ERR_NAME_NOT_RESOLVED)\b",
            "npm ERR! code ENOTFOUND",
        ),
        (
            "network unreachable",
            GENERIC,
            UNKNOWN,
            T,
            "unreachable route down enetunreach" " ehostunreach enetdown",
            r"(?i)\bnetwork is (?:unreachable|down)\b|\bno route to host\b|\bhost is unreachable\b"
            r"|\bE(?:NET|HOST)UNREACH\b|\bENETDOWN\b",
            "connect: Network is unreachable",
        ),
        (
            "TLS transport error",
            GENERIC,
            UNKNOWN,
            T,
            "ssl_error_syscall gnutls gnutls_handshake rpc eof tls",
            r"(?i)\bSSL_ERROR_SYSCALL\b|\bGnuTLS recv error\b|\bgnutls_handshake\(\) failed\b"
            r"|\bRPC failed; (?:curl|HTTP)\b|\bEOF occurred in violation of protocol\b"
            r"|\bTLS connection was non-properly terminated\b",
            "error: RPC failed; curl 56 GnuTLS recv error (-9): Error decoding the received TLS"
            " packet.",
        ),
        (
            "certificate not trusted",
            GENERIC,
            UNKNOWN,
            E,
            "certificate certificate_verify_failed x509 pkix certification",
            r"(?i)\bcertificate verify failed\b|\bCERTIFICATE_VERIFY_FAILED\b|\bx509: certificate\b"
            r"|\bunable to get local issuer certificate\b|\bself[- ]signed certificate\b|\bSSL "
            r"certificate problem\b|\bcertificate has expired\b|\bPKIX path building failed\b"
            r"|\bunable to find valid certification path\b",
            "x509: certificate signed by unknown authority",
        ),
    ),
    "http": (
        (
            "HTTP 401",
            GENERIC,
            UNKNOWN,
            N,
            "401 407",
            http("401|407") + r"|\b401 Unauthorized\b|\b407 Proxy Authentication Required\b",
            "HTTP Error 401: Unauthorized",
        ),
        (
            "HTTP 403",
            BARE,
            UNKNOWN,
            N,
            "403",
            http("403") + r"|\b403 Forbidden\b|\bForbidden \(403\)",
            "status code 403",
        ),
        (
            # a client that reports the server's refusal as a failure to connect (the
            # Snowflake connector: `Failed to connect to DB ... 403: HTTP 403: Forbidden`):
            # the server answered, so the refusal decides, not the connection words
            "refused while connecting",
            REFINED,
            UNKNOWN,
            N,
            "connect",
            r"(?i)\b(?:failed|unable) to connect\b[^\n]{0,200}?\b(?:40[13]\b[^\n]{0,20}?"
            r"(?:forbidden|unauthori[sz]ed)|(?:forbidden|unauthori[sz]ed)\b)",
            "Failed to connect to DB: acme.snowflakecomputing.com:443. 000403: 403: HTTP 403:"
            " Forbidden",
        ),
        (
            "HTTP 408",
            GENERIC,
            TIMEOUT,
            T,
            "408",
            http("408") + r"|\b408 Request Time-?out\b",
            "status code 408",
        ),
        (
            "HTTP 429",
            GENERIC,
            RATE_LIMIT,
            T,
            "429",
            http("429") + r"|\b429 Too Many Requests\b",
            "HTTP Error 429: Too Many Requests",
        ),
        (
            "HTTP 5xx",
            GENERIC,
            UNKNOWN,
            T,
            "500 502 503 504 529 internal gateway unavailable",
            http("500|502|503|504|529")
            + r"|\b50[0234] Server Error\b|\bgot (?:500|502|503|504|529)\b"
            r"|(?i:\binternal server error\b|\bbad gateway\b|\bservice (?:temporarily )?"
            r"unavailable\b|\bgateway time-?out\b)",
            "HTTP Error 503: Service Unavailable",
        ),
    ),
    "rate limits": (
        (
            "rate limit",
            GENERIC,
            RATE_LIMIT,
            T,
            "rate rate_limit rate_limited rate_limiting rate_limits ratelimit ratelimited"
            " ratelimiting ratelimits requests quota throttled throttling quickly"
            " calls abuse request limit",
            r"(?i:\brate[ _-]?limit(?:ed|ing|s)?\b|\btoo many requests\b|(?<!memory )(?<!disk )\bquota exceeded\b"
            r"|\bexceeded (?:your |the )?(?:[\w-]+ )?quota\b|\brate exceeded\b|\bthrottl(?:ed|ing)\b"
            r"|request limit exceeded\b|\btoo many (?:api )?calls\b|\bsubmitted too quickly\b"
            r"|\babuse detection\b)",
            "API rate limit exceeded for 140.82.112.3.",
        ),
        (
            "named rate limit",
            NAMED,
            RATE_LIMIT,
            T,
            words_of(_NAMED_RATE_LIMITS),
            any_of(_NAMED_RATE_LIMITS),
            "grpc: RESOURCE_EXHAUSTED",
        ),
        (
            "overloaded",
            GENERIC,
            UNKNOWN,
            T,
            "overloaded overloaded_error",
            r"(?i:\b(?:is|are|server|service|currently|model|engine|api) overloaded\b)"
            r"|\bOverloaded\b|\boverloaded_error\b",
            '{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}',
        ),
        (
            "quota exhausted permanently",
            REFINED,
            RATE_LIMIT,
            N,
            "insufficient_quota billing balance permanently billing_disabled spending payments"
            " payment quota",
            r"(?i)\binsufficient_quota\b|check your plan and billing|credit balance is too low"
            r"|quota (?:exhausted|exceeded) permanently|\bbilling (?:is )?(?:not enabled|disabled)"
            r"|requires billing to be enabled|\bBILLING_DISABLED\b|\bspending limit\b"
            r"|\bpayments? (?:have|has) failed\b|\b(?:storage|data) quota (?:has been hit|exceeded)"
            r"|\bover (?:its|your) data quota\b|\bexceeded your current quota\b",
            "insufficient_quota",
        ),
    ),
}
