"""ledgerlite command line: render and check invoices."""

from __future__ import annotations

import argparse
import json
import sys
from datetime import date
from decimal import Decimal
from pathlib import Path

from ledgerlite.invoice import Invoice, LineItem
from ledgerlite.money import Money
from ledgerlite.render import render_json, render_text


def load(path: Path) -> Invoice:
    data = json.loads(path.read_text())
    inv = Invoice(
        number=data["number"],
        customer=data["customer"],
        country=data["country"],
        currency=data["currency"],
        issued=date.fromisoformat(data["issued"]),
        payment_days=data.get("payment_days", 30),
    )
    for line in data["lines"]:
        inv.add(
            LineItem(
                description=line["description"],
                quantity=Decimal(str(line["quantity"])),
                unit_price=Money.parse(str(line["unit_price"]), inv.currency),
                reduced_rate=line.get("reduced", False),
                discount=Decimal(str(line.get("discount", 0))),
            )
        )
    return inv


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="ledgerlite")
    sub = parser.add_subparsers(dest="command", required=True)
    render = sub.add_parser("render", help="print an invoice")
    render.add_argument("invoice", type=Path)
    render.add_argument("--format", choices=["text", "json"], default="text")
    check = sub.add_parser("check", help="validate invoice files")
    check.add_argument("invoices", type=Path, nargs="+")
    args = parser.parse_args(argv)
    if args.command == "render":
        inv = load(args.invoice)
        print(render_json(inv) if args.format == "json" else render_text(inv))
        return 0
    bad = 0
    for path in args.invoices:
        try:
            load(path)
        except (KeyError, ValueError) as exc:
            print(f"{path}: {exc}", file=sys.stderr)
            bad += 1
    return 1 if bad else 0


if __name__ == "__main__":
    raise SystemExit(main())
