"""Render invoices as aligned text or JSON."""

from __future__ import annotations

import json

from ledgerlite.invoice import Invoice


def _columns(data: dict) -> list[str]:
    return [f"{k}: {v}" for k, v in data.items()]


def _header(inv: Invoice, wide: bool) -> str:
    cells = _columns({"Invoice": inv.number, "Customer": inv.customer, "Issued": inv.issued.isoformat(), "Due": inv.due.isoformat()})
    if wide:
        sep = "\n"
    else:
        sep = "  "
    return sep.join(cells)


def render_text(inv: Invoice, wide: bool = True) -> str:
    width = max([len(li.description) for li in inv.lines] + [10]) + 2
    lines = [_header(inv, wide), ""]
    for li in inv.lines:
        qty = f"{li.quantity:g} x {li.unit_price.amount}"
        if li.discount:
            qty += f" -{li.discount:%}"
        lines.append(f"{li.description:<{width}}{qty:>24}{li.net.rounded().amount:>12}")
    lines.append("")
    lines.append(f"{'Net':<{width}}{'':>24}{inv.net_total.amount:>12}")
    for rate, base, tax in inv.tax_breakdown():
        lines.append(f"{'VAT ' + rate:<{width}}{base:>24}{tax:>12}")
    lines.append(f"{'Total':<{width}}{inv.gross_total.amount:>12} {inv.currency}  (incl. {inv.tax_total} tax)")
    return "\n".join(lines)


def render_json(inv: Invoice) -> str:
    return json.dumps(
        {
            "number": inv.number,
            "customer": inv.customer,
            "currency": inv.currency,
            "issued": inv.issued.isoformat(),
            "due": inv.due.isoformat(),
            "lines": [
                {"description": li.description, "quantity": str(li.quantity), "net": str(li.net.rounded().amount)}
                for li in inv.lines
            ],
            "net": str(inv.net_total.amount),
            "tax": str(inv.tax_total.amount),
            "total": str(inv.gross_total.amount),
        },
        indent=2,
    )
