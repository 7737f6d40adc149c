"""Rules for .NET (dotnet, MSBuild, NuGet) and PowerShell (pwsh, Pester, PSScriptAnalyzer).
Row format: `incidents.rules`."""

from __future__ import annotations

from incidents.rules import (
    BARE,
    GENERIC,
    LINT,
    NAMED,
    SYNTAX,
    TEST,
    UNKNOWN,
    VERDICT,
    C,
    E,
    N,
    Row,
    T,
    any_of,
    words_of,
)

_DOTNET_RUNTIME = (
    "NullReferenceException InvalidOperationException ArgumentNullException"
    " ArgumentOutOfRangeException ArgumentException IndexOutOfRangeException"
    " InvalidCastException FormatException NotImplementedException NotSupportedException"
    " DivideByZeroException ObjectDisposedException KeyNotFoundException"
)

# csc's parse errors
_CS_SYNTAX = "1001 1002 1003 1009 1010 1012 1022 1026 1031 1040 1041 1513 1514 1519 1525 1733"

_PSSA = (
    "AvoidUsingCmdletAliases AvoidUsingWriteHost UseApprovedVerbs AvoidUsingPlainTextForPassword"
    " UseDeclaredVarsMoreThanAssignments AvoidUsingInvokeExpression AvoidGlobalVars"
    " UseShouldProcessForStateChangingFunctions AvoidUsingPositionalParameters UseSingularNouns"
    " AvoidTrailingWhitespace PossibleIncorrectComparisonWithNull UseBOMForUnicodeEncodedFile"
    " AvoidUsingEmptyCatchBlock UseCompatibleCmdlets AvoidDefaultValueSwitchParameter"
    " UseOutputTypeCorrectly ProvideCommentHelp ReviewUnusedParameter UseConsistentIndentation"
    " UseConsistentWhitespace PlaceOpenBrace PlaceCloseBrace AlignAssignmentStatement"
    " AvoidUsingConvertToSecureStringWithPlainText AvoidUsingUsernameAndPasswordParams"
    " AvoidUsingComputerNameHardcoded MisleadingBacktick AvoidSemicolonsAsLineTerminators"
    " PossibleIncorrectUsageOfAssignmentOperator UseCmdletCorrectly AvoidLongLines"
    " AvoidOverwritingBuiltInCmdlets AvoidAssignmentToAutomaticVariable UseSupportsShouldProcess"
    " UseUsingScopeModifierInNewRunspaces AvoidUsingDeprecatedManifestFields"
)


RULES: dict[str, tuple[Row, ...]] = {
    "dotnet": (
        (
            "C# syntax",
            VERDICT,
            SYNTAX,
            C,
            words_of(_CS_SYNTAX, "cs"),
            r"\berror " + any_of(_CS_SYNTAX, "CS"),
            "Program.cs(12,30): error CS1002: ; expected",
        ),
        (
            ".NET compiler error",
            VERDICT,
            LINT,
            C,
            "cs vb fs",
            r"\.(?:cs|vb|fs)\(\d+,\d+\): error (?:CS|FS|BC|CA|IDE|SA)\d{4}\b",
            "Program.cs(8,13): error CS0103: The name 'cout' does not exist in the current context",
        ),
        (
            # the test frameworks' assertion messages: MSTest `Assert.AreEqual failed.
            # Expected:<1>. Actual:<2>.`, xUnit `Assert.Equal() Failure`
            "dotnet assertion failed",
            VERDICT,
            TEST,
            C,
            "assert",
            r"\bAssert\.\w+ failed\. |\bAssert\.\w+\(\) Failure\b",
            "Assert.AreEqual failed. Expected:<1>. Actual:<2>.",
        ),
        (
            "dotnet test failed",
            VERDICT,
            TEST,
            C,
            "failed",
            r"\bFailed!\s+-\s+Failed:\s+[1-9]|\bTest Run Failed\b|\bTotal tests: \d+[^\n]*Failed: "
            r"[1-9]|(?m:^\s*Failed \S+ \[[\d.]+ ?m?s\]$)",
            "Failed!  - Failed:     2, Passed:    40, Skipped:     0, Total:    42",
        ),
        (
            "dotnet format",
            VERDICT,
            LINT,
            C,
            "whitespace finalnewline charset imports formatting",
            r"\berror (?:WHITESPACE|FINALNEWLINE|CHARSET|IMPORTS)\b|\bFix whitespace formatting\b",
            "Program.cs(3,1): error WHITESPACE: Fix whitespace formatting.",
        ),
        (
            "NuGet package missing",
            NAMED,
            UNKNOWN,
            E,
            "nu1101 nu1102 nu1103 nu1100 unable",
            r"\bNU110[0-3]\b|\bUnable to find package\b|\bUnable to resolve '[^']+' for '",
            "error NU1101: Unable to find package Acme.Core. No packages exist with this id",
        ),
        (
            "NuGet source unreachable",
            NAMED,
            UNKNOWN,
            T,
            "nu1301 index",
            r"\bNU1301\b|\bUnable to load the service index for source\b",
            "error NU1301: Unable to load the service index for source https://api.nuget.org",
        ),
        (
            ".NET SDK missing",
            NAMED,
            UNKNOWN,
            E,
            "netsdk1045 netsdk1004 msb4236 msb4019 compatible framework possible install sdks"
            " assembly",
            r"\b(?:NETSDK1045|NETSDK1004|MSB4236|MSB4019)\b|A compatible \.NET SDK was not found"
            r"|The framework '[^']+', version '[^']+'[^\n]* was not found|It was not possible to "
            r"find any compatible framework version|You must install or update \.NET to run"
            r"|No \.NET SDKs were found|Could not load file or assembly",
            "error NETSDK1045: The current .NET SDK does not support targeting .NET 9.0.",
        ),
        (
            # MSBuild's copy that gave up on a file another process holds (MSB3027/MSB3021,
            # `The file is locked by: "App (1234)"`): a lock, it clears
            "MSBuild file locked",
            NAMED,
            UNKNOWN,
            T,
            "msb3027 msb3021 locked",
            r"\berror MSB30(?:27|21)\b|\bThe file is locked by: ",
            'error MSB3027: Could not copy "obj/App.dll" to "bin/App.dll". Exceeded retry count'
            " of 10. Failed.",
        ),
        (
            # SqlClient's connection failure (`A network-related or instance-specific error
            # occurred while establishing a connection to SQL Server`): the server, not the code
            "SQL Server unreachable",
            NAMED,
            UNKNOWN,
            T,
            "network",
            r"\bA network-related or instance-specific error occurred while establishing a "
            r"connection to SQL Server\b",
            "A network-related or instance-specific error occurred while establishing a connection"
            " to SQL Server.",
        ),
        (
            ".NET exception",
            NAMED,
            UNKNOWN,
            C,
            words_of(_DOTNET_RUNTIME),
            any_of(_DOTNET_RUNTIME),
            "Unhandled exception. System.NullReferenceException: Object reference not set",
        ),
        (
            ".NET unhandled exception",
            BARE,
            UNKNOWN,
            C,
            "unhandled",
            r"\bUnhandled exception\.",
            "Unhandled exception. Acme.ConfigException: bad",
        ),
    ),
    "powershell": (
        (
            "PowerShell ParserError",
            VERDICT,
            SYNTAX,
            C,
            "parsererror parseexception missing unexpected string",
            r"\bParserError\b|\bParseException\b|Missing closing '[)}\]]'|Missing (?:expression"
            r"|statement block|function body|closing) |Unexpected token '[^']+' in expression or "
            r"statement|The string is missing the terminator|Missing '\)' in function parameter list",
            "ParserError: Missing closing ')'",
        ),
        (
            "Pester Failed:",
            VERDICT,
            TEST,
            C,
            "failed was",
            r"(?m)\bTests Passed: \d+, Failed: [1-9]|^\s*Failed:\s+[1-9]\d*(?:,|\s*$)"
            r"|^\s*But was:\s",
            "Tests Passed: 4, Failed: 2, Skipped: 0",
        ),
        (
            "PSScriptAnalyzer",
            VERDICT,
            LINT,
            C,
            words_of(_PSSA, "ps") + " ps1 psm1 psd1",
            any_of(_PSSA, "PS") + r"|\bPS[A-Z]\w+\s+(?:Error|Warning|Information"
            r"|ParseError)\s+\S+\.ps[dm]?1\b",
            "PSAvoidUsingWriteHost  Warning  build.ps1  3  File 'build.ps1' uses Write-Host.",
        ),
        (
            "execution policy",
            NAMED,
            UNKNOWN,
            N,
            "scripts signed unauthorizedaccess about_execution_policies pssecurityexception",
            r"running scripts is disabled on this system|is not digitally signed"
            r"|\bUnauthorizedAccess\b|\babout_Execution_Policies\b|\bPSSecurityException\b",
            "File C:\\build.ps1 cannot be loaded because running scripts is disabled on this system.",
        ),
        (
            "pwsh not found",
            GENERIC,
            UNKNOWN,
            E,
            "pwsh powershell",
            r"(?i)\b(?:pwsh|powershell)\b[^\n]{0,20}\bnot (?:found|installed)\b",
            "Error: pwsh is not installed on this runner",
        ),
        (
            "PowerShell command not found",
            NAMED,
            UNKNOWN,
            E,
            "commandnotfoundexception term",
            r"\bCommandNotFoundException\b|\bThe term '[^']+' is not recognized",
            "CommandNotFoundException",
        ),
        (
            "PowerShell module missing",
            NAMED,
            UNKNOWN,
            E,
            "module modulenotfound",
            r"The specified module '[^']+' was not loaded because no valid module file was found"
            r"|No match was found for the specified search criteria and module name"
            r"|\bModuleNotFound\b",
            "Import-Module: The specified module 'Az.Accounts' was not loaded because no valid"
            " module file was found in any module directory.",
        ),
        (
            "PowerShell runtime error",
            NAMED,
            UNKNOWN,
            C,
            "null invokemethodonnull bind parameterbindingvalidationexception"
            " parameterbindingexception propertynotfoundexception methodnotfound parameter",
            r"You cannot call a method on a null-valued expression|\bInvokeMethodOnNull\b|Cannot "
            r"bind argument to parameter '[^']+' because it is (?:null|an empty)"
            r"|\bParameterBinding(?:Validation)?Exception\b|\bPropertyNotFoundException\b"
            r"|\bMethodNotFound\b|Cannot index into a null array"
            r"|A parameter cannot be found that matches parameter name '[^']+'",
            "InvalidOperation: You cannot call a method on a null-valued expression.",
        ),
    ),
}
