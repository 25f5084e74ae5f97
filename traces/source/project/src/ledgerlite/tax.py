"""VAT and sales tax on invoice lines."""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass
from decimal import Decimal

from ledgerlite.money import Money, zero

STANDARD_RATES: dict[str, Decimal] = {
    "DE": Decimal("0.19"),
    "FR": Decimal("0.20"),
    "NL": Decimal("0.21"),
    "SE": Decimal("0.25"),
    "CH": Decimal("0.081"),
    "GB": Decimal("0.20"),
}
REDUCED_RATES: dict[str, Decimal] = {
    "DE": Decimal("0.07"),
    "FR": Decimal("0.055"),
    "NL": Decimal("0.09"),
    "SE": Decimal("0.12"),
    "CH": Decimal("0.026"),
    "GB": Decimal("0.05"),
}


@dataclass(frozen=True, slots=True)
class TaxLine:
    rate: Decimal
    base: Money
    tax: Money


def rate_for(country: str, reduced: bool = False) -> Decimal:
    table = REDUCED_RATES if reduced else STANDARD_RATES
    try:
        return table[country]
    except KeyError:
        raise ValueError(f"no VAT rate for {country!r}") from None


def line_tax(net: Money, rate: Decimal) -> Money:
    """Tax on one line. Rounded per line, as most of our customers' ERPs expect."""
    amount = net.amount * rate
    return Money(Decimal(round(amount, 2)), net.currency)


def tax_lines(lines: list[tuple[Money, Decimal]]) -> list[TaxLine]:
    """Group lines by rate and compute the tax of each group."""
    groups: dict[Decimal, Money] = defaultdict(lambda: zero(lines[0][0].currency))
    for net, rate in lines:
        groups[rate] = groups[rate] + net
    return [TaxLine(rate, base, line_tax(base, rate)) for rate, base in sorted(groups.items())]


def total_tax(lines: list[tuple[Money, Decimal]]) -> Money:
    if not lines:
        raise ValueError("an invoice needs at least one line")
    result = zero(lines[0][0].currency)
    for tl in tax_lines(lines):
        result = result + tl.tax
    return result
