from decimal import Decimal

import pytest

from ledgerlite.money import Money
from ledgerlite.tax import line_tax, rate_for, tax_lines, total_tax


def eur(text: str) -> Money:
    return Money(Decimal(text), "EUR")


def test_standard_rate() -> None:
    assert rate_for("DE") == Decimal("0.19")


def test_unknown_country() -> None:
    with pytest.raises(ValueError):
        rate_for("XX")


def test_line_tax_rounds_half_up() -> None:
    # 0.125 must become 0.13 (commercial rounding), not 0.12
    assert line_tax(eur("1.25"), Decimal("0.10")) == eur("0.13")


def test_line_tax_yen_has_no_minor_unit() -> None:
    assert line_tax(Money(Decimal("1005"), "JPY"), Decimal("0.10")) == Money(Decimal("101"), "JPY")


def test_groups_by_rate() -> None:
    lines = [(eur("10.00"), Decimal("0.19")), (eur("5.00"), Decimal("0.07")), (eur("2.50"), Decimal("0.19"))]
    groups = tax_lines(lines)
    assert [g.rate for g in groups] == [Decimal("0.07"), Decimal("0.19")]
    assert groups[1].base == eur("12.50")


def test_total_tax() -> None:
    lines = [(eur("10.00"), Decimal("0.19")), (eur("5.00"), Decimal("0.07"))]
    assert total_tax(lines) == eur("2.25")
