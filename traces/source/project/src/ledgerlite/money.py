"""Money amounts with an explicit currency, stored as Decimal."""

from __future__ import annotations

from dataclasses import dataclass
from decimal import ROUND_HALF_UP, Decimal, InvalidOperation

# ISO 4217 minor units for the currencies we bill in
MINOR_UNITS: dict[str, int] = {
    "EUR": 2,
    "USD": 2,
    "GBP": 2,
    "CHF": 2,
    "JPY": 0,
    "KWD": 3,
    "SEK": 2,
    "NOK": 2,
}


class CurrencyError(ValueError):
    """An amount was combined with an amount in another currency, or the code is unknown."""


def minor_unit(currency: str) -> int:
    try:
        return MINOR_UNITS[currency]
    except KeyError:
        raise CurrencyError(f"unknown currency {currency!r}") from None


def quantize(amount: Decimal, currency: str) -> Decimal:
    """Round ``amount`` to the currency's minor unit, half away from zero (commercial rounding)."""
    exp = Decimal(1).scaleb(-minor_unit(currency))
    return amount.quantize(exp, rounding=ROUND_HALF_UP)


@dataclass(frozen=True, slots=True)
class Money:
    amount: Decimal
    currency: str

    @classmethod
    def parse(cls, text: str, currency: str) -> Money:
        try:
            return cls(Decimal(text), currency)
        except InvalidOperation:
            raise ValueError(f"not an amount: {text!r}") from None

    def _check(self, other: Money) -> None:
        if other.currency != self.currency:
            raise CurrencyError(f"cannot combine {self.currency} and {other.currency}")

    def __add__(self, other: Money) -> Money:
        self._check(other)
        return Money(self.amount + other.amount, self.currency)

    def __sub__(self, other: Money) -> Money:
        self._check(other)
        return Money(self.amount - other.amount, self.currency)

    def __mul__(self, factor: Decimal | int) -> Money:
        return Money(self.amount * Decimal(factor), self.currency)

    def rounded(self) -> Money:
        return Money(quantize(self.amount, self.currency), self.currency)

    def __str__(self) -> str:
        return f"{self.rounded().amount} {self.currency}"


def zero(currency: str) -> Money:
    return Money(Decimal(0), currency)
