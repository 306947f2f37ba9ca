"""Posts the month's reconciled totals to the ledger, once (a second posting is refused)."""

from __future__ import annotations

import os

from django.core.management.base import BaseCommand, CommandError

from examples import workspace


class Command(BaseCommand):
    help = "Post the month's reconciled invoices to the ledger."

    def add_arguments(self, parser):  # type: ignore[no-untyped-def]
        parser.add_argument("--period", default="current")

    def handle(self, *args, period: str, **options):  # type: ignore[no-untyped-def]
        if period == "current":
            period = workspace.run_date().strftime("%Y-%m")
        close = workspace.area("billing", "close", period)
        if not os.environ.get("LEDGER_API_TOKEN"):
            # In production the token comes from Secrets Manager through the task definition.
            self.stderr.write("LEDGER_API_TOKEN is not set: posting to the local ledger file only")
        try:  # inputs of the earlier steps: missing ones are a permanent failure (CommandError)
            invoices = workspace.read_json(close / "invoices.json", "freeze-invoices")
            unmatched: set[str] = set()
            for source, step in (("card", "reconcile-card-payments"), ("bank", "reconcile-bank-transfers")):
                unmatched |= set(workspace.read_json(close / f"reconciled-{source}.json", step)["unmatched"])
        except workspace.MissingInput as e:
            raise CommandError(str(e)) from None
        if len(unmatched) > len(invoices) // 4:
            raise CommandError(f"{len(unmatched)} invoices unmatched: too many to post; review the reconciliation")
        posted = [i for i in invoices if i["id"] not in unmatched]
        ledger = {"period": period, "entries": len(posted), "total_yen": sum(i["amount_yen"] for i in posted),
                  "held_for_review": sorted(unmatched)}
        workspace.write_json(close / "ledger.json", ledger)
        self.stdout.write(f"posted {ledger['entries']} entries ({ledger['total_yen']:,} yen) for {period}")
