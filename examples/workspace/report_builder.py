import os
import json


def build_report(rows: list[dict[str, int]]) -> str:
    total = sum( r["amount"] for r in rows )
    return json.dumps({"total":total,"count":len(rows)})
