"""A job's calendar as the catalog carries it: explicit closed and open dates over the
compiled horizon (the compiler resolved the country's holidays, the closures and the included
calendars into them), so the runtime reads dates, never a holiday library.

A date outside the horizon is judged by the weekend alone, and says so
(:meth:`CatalogCalendar.beyond`): its holidays were not compiled.
"""

from __future__ import annotations

from datetime import date

from pydantic import BaseModel, ConfigDict, Field

#: Each calendar object's lookups, by its id (kept with the object, so an id reused after it is
#: gone is not mistaken for it).
_TABLES: dict[int, tuple[CatalogCalendar, dict[date, str], frozenset[date], frozenset[int]]] = {}
_DAY_NAMES = ("Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday")


class CatalogCalendar(BaseModel):
    model_config = ConfigDict(extra="ignore", frozen=True)

    name: str
    first_year: int
    last_year: int
    weekend: list[int] = Field(default_factory=lambda: [5, 6])  # Python weekdays (Monday 0)
    closed: dict[str, str] = Field(default_factory=dict)  # 'YYYY-MM-DD' -> why (holiday's name, closure)
    open: list[str] = Field(default_factory=list)  # one-off business days, whatever else says
    source: str = ""  # where the holidays came from (package and version)

    def _tables(self) -> tuple[dict[date, str], frozenset[date], frozenset[int]]:
        """The dates as lookups, made once per calendar object (the ledger asks each job's
        calendar about dozens of days a pass; a pydantic private attribute costs more than that)."""
        key = id(self)
        found = _TABLES.get(key)
        if found is None or found[0] is not self:
            found = (self, {date.fromisoformat(k): v for k, v in self.closed.items()},
                     frozenset(date.fromisoformat(d) for d in self.open), frozenset(self.weekend))
            _TABLES[key] = found
        return found[1], found[2], found[3]

    def beyond(self, d: date) -> bool:
        """Outside the compiled years: holidays unknown (recompile with a later horizon)."""
        return not self.first_year <= d.year <= self.last_year

    def closed_reason(self, d: date) -> str | None:
        """Why ``d`` is closed (a holiday's name, a closure, 'Saturday'), None when open."""
        closed, opened, weekend = self._tables()
        if d in opened:
            return None
        if d in closed:
            return closed[d]
        if d.weekday() in weekend:
            return _DAY_NAMES[d.weekday()]
        return None

    def is_open(self, d: date) -> bool:
        return self.closed_reason(d) is None
