"""Invoices: lines, discounts, totals."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import date, timedelta
from decimal import Decimal

from ledgerlite.money import Money, zero
from ledgerlite.tax import rate_for, tax_lines, total_tax


@dataclass(frozen=True, slots=True)
class LineItem:
    description: str
    quantity: Decimal
    unit_price: Money
    reduced_rate: bool = False
    discount: Decimal = Decimal(0)  # a fraction, 0.1 = 10 %

    @property
    def net(self) -> Money:
        gross = self.unit_price * self.quantity
        return gross - gross * self.discount


@dataclass(slots=True)
class Invoice:
    number: str
    customer: str
    country: str
    currency: str
    issued: date
    payment_days: int = 30
    lines: list[LineItem] = field(default_factory=list)

    @property
    def due(self) -> date:
        return self.issued + timedelta(days=self.payment_days)

    def add(self, item: LineItem) -> None:
        if item.unit_price.currency != self.currency:
            raise ValueError(f"line in {item.unit_price.currency} on a {self.currency} invoice")
        self.lines.append(item)

    def _taxable(self) -> list[tuple[Money, Decimal]]:
        return [(li.net, rate_for(self.country, li.reduced_rate)) for li in self.lines]

    @property
    def net_total(self) -> Money:
        total = zero(self.currency)
        for li in self.lines:
            total = total + li.net
        return total.rounded()

    @property
    def tax_total(self) -> Money:
        return total_tax(self._taxable())

    @property
    def gross_total(self) -> Money:
        return (self.net_total + self.tax_total).rounded()

    def tax_breakdown(self) -> list[tuple[str, str, str]]:
        return [(f"{tl.rate:%}", str(tl.base.rounded()), str(tl.tax)) for tl in tax_lines(self._taxable())]
