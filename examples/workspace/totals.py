def monthly_total(amounts: list[int]) -> int:
    total = sum(amounts)
    return f"{total} JPY"
