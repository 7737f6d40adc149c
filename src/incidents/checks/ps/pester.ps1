# Run Pester on the test files given after the report path; write NUnit XML to the report.
$ErrorActionPreference = 'Stop'
Import-Module Pester -MinimumVersion 5.0
$report, $tests = $args[0], $args[1..($args.Count - 1)]
$cfg = New-PesterConfiguration
$cfg.Run.Path = $tests
$cfg.Run.Exit = $false
$cfg.Output.Verbosity = 'None'
$cfg.TestResult.Enabled = $true
$cfg.TestResult.OutputFormat = 'NUnitXml'
$cfg.TestResult.OutputPath = $report
$result = Invoke-Pester -Configuration $cfg
if ($result.FailedCount -gt 0) { exit 1 } else { exit 0 }
