Write-Output "deploying receipts"
$result = Invoke-WebRequest -Uri $env:RECEIPTS_URL
