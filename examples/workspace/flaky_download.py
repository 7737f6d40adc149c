"""Fails the first time it runs in this folder, passes after: a transient failure."""

from pathlib import Path

marker = Path(__file__).with_name(".download_attempted")
if not marker.exists():
    marker.write_text("1\n")
    raise SystemExit("Network timeout during receipt download")
print("downloaded 12 receipts")
