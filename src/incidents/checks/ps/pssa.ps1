# Run PSScriptAnalyzer on the files given as arguments; print DiagnosticRecords as JSON.
# Paths arrive as separate argv elements (never spliced into a command string).
$ErrorActionPreference = 'Stop'
Import-Module PSScriptAnalyzer
$records = foreach ($p in $args) { Invoke-ScriptAnalyzer -Path $p }
if ($records) {
    $records | Select-Object RuleName, Severity, ScriptName, ScriptPath, Line, Column, Message |
        ConvertTo-Json -Depth 3
}
exit 0
