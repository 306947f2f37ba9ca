from __future__ import annotations

from pathlib import Path

from django.core.management.base import BaseCommand, CommandError


class Command(BaseCommand):
    help = "Posts the period's ledger (test double of a real command)."

    def add_arguments(self, parser):  # noqa: ANN001
        parser.add_argument("--period", required=True)
        parser.add_argument("--out", required=True)

    def handle(self, *args, **options):  # noqa: ANN002, ANN003
        if options["period"] == "closed":
            raise CommandError("period is closed")
        Path(options["out"]).write_text(f"posted {options['period']}")
        self.stdout.write(f"posted {options['period']}")
