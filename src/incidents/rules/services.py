"""Rules for cloud SDKs and CLIs (AWS, GCP, Azure), GitHub/GitLab APIs and CI, LLM provider
APIs and GPUs. Row format: `incidents.rules`."""

from __future__ import annotations

from incidents.rules import (
    BARE,
    NAMED,
    RATE_LIMIT,
    REFINED,
    TIMEOUT,
    UNKNOWN,
    C,
    E,
    N,
    Row,
    T,
    any_of,
    words_of,
)

_AWS_THROTTLING = (
    "ThrottlingException Throttling ThrottledException RequestLimitExceeded SlowDown"
    " ProvisionedThroughputExceededException RequestThrottled RequestThrottledException"
    " EC2ThrottledException BandwidthLimitExceeded LimitExceededException"
)
_AWS_REFUSED = (
    "ExpiredToken ExpiredTokenException InvalidClientTokenId UnrecognizedClientException"
    " SignatureDoesNotMatch InvalidAccessKeyId InvalidSignatureException AuthFailure"
    " IncompleteSignature MissingAuthenticationToken UnauthorizedOperation"
    " NotAuthorizedException InvalidToken"
)
_AWS_QUOTA = (
    "ServiceQuotaExceededException VcpuLimitExceeded InstanceLimitExceeded AddressLimitExceeded"
    " VpcLimitExceeded TooManyBuckets"
)
# Microsoft Entra sign-in errors: bad or expired secrets, missing consent, MFA, policy
_AADSTS = (
    "50001 50020 50034 50053 50055 50057 50058 50076 50079 50105 50126 50158 50173 53003 65001"
    " 70000 70001 70002 70008 70011 70016 70021 70043 90002 500011 500113 700016 700024 700027"
    " 700082 7000215 7000222"
)


RULES: dict[str, tuple[Row, ...]] = {
    "aws": (
        (
            "AWS throttling",
            NAMED,
            RATE_LIMIT,
            T,
            words_of(_AWS_THROTTLING),
            any_of(_AWS_THROTTLING),
            "An error occurred (ThrottlingException) when calling the DescribeStacks operation",
        ),
        (
            "AWS credentials refused",
            NAMED,
            UNKNOWN,
            N,
            words_of(_AWS_REFUSED) + " security sso",
            any_of(_AWS_REFUSED) + r"|security token included in the request is (?:expired|invalid)"
            r"|The AWS Access Key Id you provided does not exist|Token has expired and refresh "
            r"failed|SSO session associated with this profile has expired",
            "An error occurred (ExpiredToken) when calling the GetCallerIdentity operation",
        ),
        (
            "AWS access denied",
            NAMED,
            UNKNOWN,
            N,
            "authorized explicit",
            r"is not authorized to perform|with an explicit deny",
            "User: arn:aws:iam::1:user/ci is not authorized to perform: s3:PutObject",
        ),
        (
            "AWS credentials missing",
            NAMED,
            UNKNOWN,
            E,
            "locate nocredentialserror nocredentialproviders load credentialsprovidererror profile"
            " profilenotfound region noregionerror retrieve sdk imds noauthhandlerfound missing"
            " chain",
            r"Unable to locate credentials|\bNoCredentialsError\b|\bNoCredentialProviders\b|Could "
            r"not load credentials from any providers|\bCredentialsProviderError\b|The config "
            r"profile \([^)]+\) could not be found|\bProfileNotFound\b|You must specify a region"
            r"|\bNoRegionError\b|Missing credentials in config|failed to retrieve credentials"
            r"|unable to load SDK config|no EC2 IMDS role found|\bNoAuthHandlerFound\b"
            # the Java SDK v2's chain (`AwsCredentialsProviderChain`), v1's `AWSCredentials...`
            r"|Unable to load (?:AWS )?credentials from any (?:of the )?providers in the chain",
            "botocore.exceptions.NoCredentialsError: Unable to locate credentials",
        ),
        (
            "AWS service quota",
            NAMED,
            RATE_LIMIT,
            N,
            words_of(_AWS_QUOTA) + " requested",
            any_of(_AWS_QUOTA) + r"|You have requested more (?:vCPU capacity|instances) than your "
            r"current",
            "An error occurred (VcpuLimitExceeded) when calling the RunInstances" " operation",
        ),
        (
            "AWS service unavailable",
            NAMED,
            UNKNOWN,
            T,
            "internalerror internalfailure serviceunavailable serviceunavailableexception"
            " insufficientinstancecapacity priorrequestnotcomplete endpoint",
            r"\b(?:InternalError|InternalFailure|ServiceUnavailable(?:Exception)?"
            r"|InsufficientInstanceCapacity|PriorRequestNotComplete)\b"
            r"|Could not connect to the endpoint URL",
            'Could not connect to the endpoint URL: "https://sts.us-east-1.amazonaws.com/"',
        ),
        (
            "clock skew",
            NAMED,
            UNKNOWN,
            E,
            "requesttimetooskewed signature clock",
            r"\bRequestTimeTooSkewed\b|Signature expired: \d+ is now earlier than|\bclock skew\b",
            "An error occurred (RequestTimeTooSkewed): The difference between the request time"
            " and the current time is too large.",
        ),
        (
            "AWS resource missing",
            NAMED,
            UNKNOWN,
            E,
            "nosuchbucket resourcenotfoundexception nosuchentity parameternotfound nosuchkey",
            r"\b(?:NoSuchBucket|ResourceNotFoundException|NoSuchEntity|ParameterNotFound|NoSuchKey)"
            r"\b",
            "An error occurred (NoSuchBucket) when calling the PutObject operation",
        ),
        (
            "AWS request invalid",
            NAMED,
            UNKNOWN,
            C,
            "validationexception validationerror invalidparametervalue invalidparametervalueexception"
            " invalidparameterexception malformedpolicydocument missingparameter",
            r"\b(?:ValidationException|ValidationError|InvalidParameterValue(?:Exception)?"
            r"|InvalidParameterException|MalformedPolicyDocument|MissingParameter)\b",
            "An error occurred (ValidationError) when calling the CreateStack operation: Template"
            " format error",
        ),
    ),
    "gcp": (
        (
            "GCP credentials refused",
            NAMED,
            UNKNOWN,
            N,
            "unauthenticated scopes access_token_scope_insufficient invalid_grant reauthentication"
            " revoked caller iam_permission_denied credentials api_key_invalid key",
            r"\bUNAUTHENTICATED\b|Request had insufficient authentication scopes"
            r"|\bACCESS_TOKEN_SCOPE_INSUFFICIENT\b|\binvalid_grant\b|Reauthentication failed|Token "
            r"has been expired or revoked|The caller does not have permission"
            r"|\bIAM_PERMISSION_DENIED\b|Request had invalid authentication credentials"
            r"|\bAPI_KEY_INVALID\b|API key not valid|API key expired",
            "google.auth.exceptions.RefreshError: ('invalid_grant: Token has been expired or"
            " revoked.')",
        ),
        (
            "GCP credentials missing",
            REFINED,
            UNKNOWN,
            E,
            "automatically defaultcredentialserror default active google_application_credentials"
            " application loaded",
            r"Could not automatically determine credentials|\bDefaultCredentialsError\b|Your "
            r"default credentials were not found|You do not currently have an active account "
            r"selected|\bGOOGLE_APPLICATION_CREDENTIALS\b[^\n]*(?:not set|not found|does not exist)"
            r"|[Aa]pplication [Dd]efault [Cc]redentials (?:have|has) not been set up"
            r"|No credentials loaded\. To use your gcloud credentials",  # terraform's google provider
            "google.auth.exceptions.DefaultCredentialsError: Your default credentials were not"
            " found.",
        ),
        (
            "GCP resource quota",
            REFINED,
            RATE_LIMIT,
            N,
            "quota",
            r"\bQuota '[\w-]+' exceeded\.\s+Limit: [\d.]+|\bquota metrics? exceeds? quota limits?"
            r"|Quota exceeded for quota metric '[^']+' and limit '(?![^']*\bper\b)[^']+'",
            "ERROR: (gcloud.compute.instances.create) Could not fetch resource: - Quota"
            " 'GPUS_ALL_REGIONS' exceeded. Limit: 0.0 globally.",
        ),
        (
            "GCP API disabled",
            NAMED,
            UNKNOWN,
            E,
            "service_disabled used enabled accessnotconfigured",
            r"\bSERVICE_DISABLED\b|has not been used in project \S+ before or it is disabled|API "
            r"\[[^\]]+\] not enabled|\baccessNotConfigured\b",
            "Cloud Run Admin API has not been used in project 1234 before or it is disabled.",
        ),
        (
            # google-api-core's 404 (`google.api_core.exceptions.NotFound: 404 GET ...: Not
            # found: Dataset p:d`): a resource nobody created, like AWS's NoSuchBucket
            "GCP resource missing",
            NAMED,
            UNKNOWN,
            E,
            "notfound",
            r"\bgoogle\.api_core\.exceptions\.NotFound\b|\bgoogle\.cloud\.exceptions\.NotFound\b",
            "google.api_core.exceptions.NotFound: 404 GET https://bigquery.googleapis.com/x: Not"
            " found: Dataset p:d",
        ),
        (
            "GCP unavailable",
            NAMED,
            UNKNOWN,
            T,
            "unavailable serviceunavailable backenderror zone_resource_pool_exhausted resources",
            r"\bUNAVAILABLE\b|\bbackendError\b|\bZONE_RESOURCE_POOL_EXHAUSTED\b|does not have "
            r"enough resources available to fulfill the request",
            "grpc._channel._InactiveRpcError: status = StatusCode.UNAVAILABLE",
        ),
    ),
    "azure": (
        (
            "Azure credentials refused",
            NAMED,
            UNKNOWN,
            N,
            words_of(_AADSTS, "aadsts") + " authorizationfailed invalidauthenticationtoken"
            " expiredauthenticationtoken authenticationfailed authorizationpermissionmismatch"
            " keybasedauthenticationnotpermitted authorization linkedauthorizationfailed"
            " requestdisallowedbypolicy invalidauthenticationtokentenant clientauthenticationerror",
            any_of(_AADSTS, "AADSTS") + r"|\b(?:AuthorizationFailed|InvalidAuthenticationToken"
            r"|ExpiredAuthenticationToken|AuthenticationFailed|AuthorizationPermissionMismatch"
            r"|KeyBasedAuthenticationNotPermitted|LinkedAuthorizationFailed"
            r"|RequestDisallowedByPolicy|InvalidAuthenticationTokenTenant"
            r"|ClientAuthenticationError)\b|does not have authorization to perform action",
            "AADSTS7000215: Invalid client secret provided.",
        ),
        (
            "Azure credentials missing",
            REFINED,
            UNKNOWN,
            E,
            "az defaultazurecredential credentialunavailableerror environmentcredential"
            " subscription managedidentitycredential",
            r"Please run 'az login' to setup account|DefaultAzureCredential failed to retrieve a "
            r"token|\bCredentialUnavailableError\b|EnvironmentCredential authentication unavailable"
            r"|No subscription found|ManagedIdentityCredential authentication unavailable",
            "ERROR: Please run 'az login' to setup account.",
        ),
        (
            "Azure quota",
            NAMED,
            RATE_LIMIT,
            N,
            "quotaexceeded quota",
            r"\bQuotaExceeded\b|exceeding approved [\w ]*quota",
            "Operation could not be completed as it results in exceeding approved Total Regional"
            " Cores quota.",
        ),
        (
            "Azure busy",
            NAMED,
            UNKNOWN,
            T,
            "retryableerror anotheroperationinprogress serverbusy operationpreempted",
            r"\b(?:RetryableError|AnotherOperationInProgress|ServerBusy|OperationPreempted)\b",
            "Code: AnotherOperationInProgress",
        ),
        (
            "Azure resource missing",
            NAMED,
            UNKNOWN,
            E,
            "resourcegroupnotfound subscriptionnotfound containernotfound storageaccountnotfound"
            " missingsubscriptionregistration skunotavailable",
            r"\b(?:ResourceGroupNotFound|SubscriptionNotFound|ContainerNotFound"
            r"|StorageAccountNotFound|MissingSubscriptionRegistration|SkuNotAvailable)\b",
            "(ResourceGroupNotFound) Resource group 'rg-ci' could not be found.",
        ),
    ),
    "github and gitlab": (
        (
            "GitHub token refused",
            NAMED,
            UNKNOWN,
            N,
            "credentials accessible authentication admin gh007 scopes refusing basic password",
            r"\bBad credentials\b|Resource not accessible by integration|Requires authentication"
            r"|Must have admin rights|\bGH007\b|has not been granted the required scopes|refusing "
            r"to allow an? (?:Personal Access Token|GitHub App|OAuth App) to create or update "
            r"workflow|HTTP Basic: Access denied|Support for password authentication was removed",
            "HttpError: Resource not accessible by integration",
        ),
        (
            "CI runner lost",
            NAMED,
            UNKNOWN,
            T,
            "communication shutdown canceled system acquired responding preparation",
            r"lost communication with the server|runner has received a shutdown signal|The "
            r"operation was canceled\.|Job failed \(system failure\)|The job was not acquired by "
            r"Runner|Runner is not responding|ERROR: Preparation failed",
            "The self-hosted runner: ci-1 lost communication with the server.",
        ),
        (
            "CI workflow invalid",
            NAMED,
            UNKNOWN,
            C,
            "workflow resolve unrecognized",
            r"Invalid workflow file|Unable to resolve action|Unrecognized named-value|The workflow "
            r"is not valid",
            "Error: Unable to resolve action `actions/checkout@v9`, unable to find" " version `v9`",
        ),
        (
            "CI input not set",
            NAMED,
            UNKNOWN,
            E,
            "input github_token",
            r"Input required and not supplied: \w+|\bGITHUB_TOKEN (?:is|was) not (?:set|provided)",
            "Error: Input required and not supplied: token",
        ),
        (
            "no CI runner",
            NAMED,
            UNKNOWN,
            E,
            "stuck runner runners",
            r"This job is stuck because (?:you don't have any active runners|the project doesn't "
            r"have any runners)|No runner matching the specified labels",
            "This job is stuck because you don't have any active runners that can run this job.",
        ),
    ),
    "llm providers": (
        (
            "LLM key refused",
            NAMED,
            UNKNOWN,
            N,
            "authenticationerror invalid_api_key incorrect authentication_error invalid"
            " permissiondeniederror"
            " permission_error account_deactivated gated",
            r"\bAuthenticationError\b|\binvalid_api_key\b|Incorrect API key provided"
            r"|\bauthentication_error\b|invalid x-api-key|\bPermissionDeniedError\b"
            r"|\bpermission_error\b|\baccount_deactivated\b|\bgated repo\b",
            "openai.AuthenticationError: Error code: 401 - Incorrect API key provided",
        ),
        (
            "LLM key missing",
            NAMED,
            UNKNOWN,
            E,
            "api_key authentication key missingapikeyerror",
            r"api_key client option must be set|Could not resolve authentication method|No API key "
            r"(?:provided|found)|Did not find \w+_api_key|Expected either api_key or auth_token to "
            r"be set|\bMissingApiKeyError\b",
            "openai.OpenAIError: The api_key client option must be set either by passing api_key"
            " to the client or by setting the OPENAI_API_KEY environment variable",
        ),
        (
            "LLM rate limit",
            NAMED,
            RATE_LIMIT,
            T,
            "rate exceeded",
            r"Rate limit reached for|exceeded (?:token|call) rate limit",
            "Rate limit reached for gpt-4o in organization org-x on tokens per min (TPM)",
        ),
        (
            "LLM context too long",
            NAMED,
            UNKNOWN,
            C,
            "context_length_exceeded context prompt length tokens string_above_max_length",
            r"\bcontext_length_exceeded\b|maximum context length is \d+ tokens|prompt is too long"
            r"|exceed context limit|exceeds the maximum (?:number of )?tokens"
            r"|\bstring_above_max_length\b",
            "This model's maximum context length is 8192 tokens. However, your messages resulted in"
            " 9000 tokens.",
        ),
        (
            "LLM service error",
            NAMED,
            UNKNOWN,
            T,
            "serviceunavailableerror api_error internalservererror server",
            r"\bServiceUnavailableError\b|\bapi_error\b|\bInternalServerError\b|The server had an "
            r"error while processing your request",
            "anthropic.InternalServerError: Error code: 500 - {'type': 'api_error'}",
        ),
        (
            "LLM model missing",
            NAMED,
            UNKNOWN,
            E,
            "model_not_found model deploymentnotfound",
            r"\bmodel_not_found\b|The model `[^`]+` does not exist|model '[^']+' not found, try "
            r"pulling it first|is not a valid model identifier"
            # Azure OpenAI: the deployment named in the request was never created
            r"|\bDeploymentNotFound\b",
            "Error: model 'llama3:70b' not found, try pulling it first",
        ),
        (
            "LLM content policy",
            NAMED,
            UNKNOWN,
            N,
            "content_policy_violation content responsibleaipolicyviolation",
            r"\bcontent_policy_violation\b|content management policy"
            r"|\bResponsibleAIPolicyViolation\b",
            "Error code: 400 - {'error': {'code': 'content_policy_violation'}}",
        ),
        (
            "LLM bad request",
            BARE,
            UNKNOWN,
            C,
            "badrequesterror invalid_request_error",
            r"\b(?:BadRequestError|invalid_request_error)\b",
            "anthropic.BadRequestError: Error code: 400 - invalid_request_error",
        ),
    ),
    "gpu": (
        (
            "GPU out of memory",
            NAMED,
            UNKNOWN,
            E,
            "cuda outofmemoryerror cudaerrormemoryallocation cublas_status_alloc_failed"
            " cudnn_status_alloc_failed device hip mps oom resourceexhaustederror cudamalloc",
            r"CUDA out of memory|\bOutOfMemoryError: CUDA\b|CUDA error: out of memory"
            r"|\bcudaErrorMemoryAllocation\b|\bCUBLAS_STATUS_ALLOC_FAILED\b"
            r"|\bCUDNN_STATUS_ALLOC_FAILED\b|out of memory on device|HIP out of memory|MPS backend "
            r"out of memory|OOM when allocating tensor|\bResourceExhaustedError\b|cudaMalloc "
            r"failed",
            "RuntimeError: CUDA out of memory. Tried to allocate 2.00 GiB",
        ),
        (
            "GPU driver or device missing",
            REFINED,
            UNKNOWN,
            E,
            "cuda driver nvidia torch kernel cuda_error_no_device cudaerrornodevice"
            " cudaerrorinsufficientdriver select libcuda cuinit nvml runtime aten_cuda gpus"
            " cudnn_status_not_initialized cudnn_status_alloc_failed cudnn_status_arch_mismatch"
            " cudnn_status_version_mismatch",
            r"CUDA driver version is insufficient|no CUDA-capable device is detected|NVIDIA-SMI has "
            r"failed|couldn't communicate with the NVIDIA driver|Found no NVIDIA driver|Torch not "
            r"compiled with CUDA enabled|no kernel image is available for execution on the device"
            r"|\bCUDA_ERROR_NO_DEVICE\b|\bcudaErrorNoDevice\b|\bcudaErrorInsufficientDriver\b|could "
            r"not select device driver \"[^\"]*\" with capabilities: \[\[gpu\]\]|nvidia-container-"
            r"cli: (?:initialization|requirement) error|libcuda\.so\.1: cannot open shared object "
            r"file|failed call to cuInit|NVIDIA driver on your system is too old|NVML: Driver/library"
            r" version mismatch|Failed to initialize NVML|unknown or invalid runtime name: nvidia"
            r"|Cannot initialize CUDA without ATen_cuda library|No CUDA GPUs are available"
            # cuDNN that could not start or allocate (its status names): the GPU's set-up or
            # memory, not the code (`CUDNN_STATUS_BAD_PARAM` and the like stay the code's)
            r"|\bCUDNN_STATUS_(?:NOT_INITIALIZED|ALLOC_FAILED|ARCH_MISMATCH|VERSION_MISMATCH)\b",
            "AssertionError: Torch not compiled with CUDA enabled",
        ),
        (
            "GPU busy",
            REFINED,
            UNKNOWN,
            T,
            "cuda cudaerrordevicesunavailable",
            r"CUDA-capable devices? (?:\(s\) )?(?:is/)?are busy or unavailable"
            r"|\bcudaErrorDevicesUnavailable\b",
            "RuntimeError: CUDA error: all CUDA-capable devices are busy or unavailable",
        ),
        (
            "CUDA kernel error",
            REFINED,
            UNKNOWN,
            C,
            "device illegal cudaerrorillegaladdress cublas_status_execution_failed misaligned",
            r"device-side assert triggered|an illegal memory access was encountered"
            r"|\bcudaErrorIllegalAddress\b|\bCUBLAS_STATUS_EXECUTION_FAILED\b|\bmisaligned address\b",
            "RuntimeError: CUDA error: device-side assert triggered",
        ),
        (
            "NCCL timeout",
            NAMED,
            TIMEOUT,
            T,
            "watchdog nccl_timeout",
            r"Watchdog caught collective operation timeout|\bNCCL_TIMEOUT\b",
            "[Rank 0] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=1)",
        ),
    ),
}
