"""Countries we invoice: ISO code, name, currency and VAT rates (percent).

Rates are the standard and the most common reduced rate; 0 means no VAT (or no reduced rate).
Review this table every January: rates change with national budgets.
"""

from __future__ import annotations

from dataclasses import dataclass
from decimal import Decimal


@dataclass(frozen=True, slots=True)
class Country:
    code: str
    name: str
    currency: str
    standard_rate: Decimal
    reduced_rate: Decimal
    eu: bool


COUNTRIES: dict[str, Country] = {
    "AT": Country("AT", "Austria", "EUR", Decimal("20"), Decimal("10"), eu=True),
    "BE": Country("BE", "Belgium", "EUR", Decimal("21"), Decimal("6"), eu=True),
    "BG": Country("BG", "Bulgaria", "BGN", Decimal("20"), Decimal("9"), eu=True),
    "HR": Country("HR", "Croatia", "EUR", Decimal("25"), Decimal("13"), eu=True),
    "CY": Country("CY", "Cyprus", "EUR", Decimal("19"), Decimal("5"), eu=True),
    "CZ": Country("CZ", "Czechia", "CZK", Decimal("21"), Decimal("12"), eu=True),
    "DK": Country("DK", "Denmark", "DKK", Decimal("25"), Decimal("25"), eu=True),
    "EE": Country("EE", "Estonia", "EUR", Decimal("22"), Decimal("9"), eu=True),
    "FI": Country("FI", "Finland", "EUR", Decimal("25.5"), Decimal("14"), eu=True),
    "FR": Country("FR", "France", "EUR", Decimal("20"), Decimal("5.5"), eu=True),
    "DE": Country("DE", "Germany", "EUR", Decimal("19"), Decimal("7"), eu=True),
    "GR": Country("GR", "Greece", "EUR", Decimal("24"), Decimal("13"), eu=True),
    "HU": Country("HU", "Hungary", "HUF", Decimal("27"), Decimal("5"), eu=True),
    "IE": Country("IE", "Ireland", "EUR", Decimal("23"), Decimal("13.5"), eu=True),
    "IT": Country("IT", "Italy", "EUR", Decimal("22"), Decimal("10"), eu=True),
    "LV": Country("LV", "Latvia", "EUR", Decimal("21"), Decimal("12"), eu=True),
    "LT": Country("LT", "Lithuania", "EUR", Decimal("21"), Decimal("9"), eu=True),
    "LU": Country("LU", "Luxembourg", "EUR", Decimal("17"), Decimal("8"), eu=True),
    "MT": Country("MT", "Malta", "EUR", Decimal("18"), Decimal("5"), eu=True),
    "NL": Country("NL", "Netherlands", "EUR", Decimal("21"), Decimal("9"), eu=True),
    "PL": Country("PL", "Poland", "PLN", Decimal("23"), Decimal("8"), eu=True),
    "PT": Country("PT", "Portugal", "EUR", Decimal("23"), Decimal("6"), eu=True),
    "RO": Country("RO", "Romania", "RON", Decimal("19"), Decimal("9"), eu=True),
    "SK": Country("SK", "Slovakia", "EUR", Decimal("23"), Decimal("10"), eu=True),
    "SI": Country("SI", "Slovenia", "EUR", Decimal("22"), Decimal("9.5"), eu=True),
    "ES": Country("ES", "Spain", "EUR", Decimal("21"), Decimal("10"), eu=True),
    "SE": Country("SE", "Sweden", "SEK", Decimal("25"), Decimal("12"), eu=True),
    "NO": Country("NO", "Norway", "NOK", Decimal("25"), Decimal("15"), eu=False),
    "IS": Country("IS", "Iceland", "ISK", Decimal("24"), Decimal("11"), eu=False),
    "CH": Country("CH", "Switzerland", "CHF", Decimal("8.1"), Decimal("2.6"), eu=False),
    "LI": Country("LI", "Liechtenstein", "CHF", Decimal("8.1"), Decimal("2.6"), eu=False),
    "GB": Country("GB", "United Kingdom", "GBP", Decimal("20"), Decimal("5"), eu=False),
    "RS": Country("RS", "Serbia", "RSD", Decimal("20"), Decimal("10"), eu=False),
    "TR": Country("TR", "Türkiye", "TRY", Decimal("20"), Decimal("10"), eu=False),
    "UA": Country("UA", "Ukraine", "UAH", Decimal("20"), Decimal("7"), eu=False),
    "JP": Country("JP", "Japan", "JPY", Decimal("10"), Decimal("8"), eu=False),
    "KR": Country("KR", "South Korea", "KRW", Decimal("10"), Decimal("0"), eu=False),
    "AU": Country("AU", "Australia", "AUD", Decimal("10"), Decimal("0"), eu=False),
    "NZ": Country("NZ", "New Zealand", "NZD", Decimal("15"), Decimal("0"), eu=False),
    "SG": Country("SG", "Singapore", "SGD", Decimal("9"), Decimal("0"), eu=False),
    "IN": Country("IN", "India", "INR", Decimal("18"), Decimal("5"), eu=False),
    "ZA": Country("ZA", "South Africa", "ZAR", Decimal("15"), Decimal("0"), eu=False),
    "KW": Country("KW", "Kuwait", "KWD", Decimal("0"), Decimal("0"), eu=False),
    "BH": Country("BH", "Bahrain", "BHD", Decimal("10"), Decimal("0"), eu=False),
    "CA": Country("CA", "Canada", "CAD", Decimal("5"), Decimal("0"), eu=False),
    "MX": Country("MX", "Mexico", "MXN", Decimal("16"), Decimal("0"), eu=False),
    "BR": Country("BR", "Brazil", "BRL", Decimal("17"), Decimal("7"), eu=False),
    "CL": Country("CL", "Chile", "CLP", Decimal("19"), Decimal("0"), eu=False),
}


def country(code: str) -> Country:
    try:
        return COUNTRIES[code.upper()]
    except KeyError:
        raise ValueError(f"unknown country {code!r}") from None


def currency_of(code: str) -> str:
    return country(code).currency


def eu_reverse_charge(seller: str, buyer: str, buyer_has_vat_id: bool) -> bool:
    """B2B sales between two EU countries are reverse-charged: the buyer accounts for the VAT."""
    s, b = country(seller), country(buyer)
    return s.eu and b.eu and s.code != b.code and buyer_has_vat_id
