"""The jobs page in pages: which page of the matching jobs a request shows, and the links to
the others. At 5,000 jobs one page of every row was ~3 MB of HTML and 3.5 s (bench/portal.py);
a page of :data:`PER_PAGE` rows reads only its own jobs' states (Reads.job_window).

The links keep the filters (team, status, text, sort) and the page size, so a page's address is
stable: it names the same slice of the same filtered list, and a person can share or bookmark it.
"""

from __future__ import annotations

from dataclasses import dataclass
from urllib.parse import urlencode

#: Rows per page unless the address asks for another size (``per_page``), at most PER_PAGE_MAX.
PER_PAGE = 100
PER_PAGE_MAX = 500
#: The highest page number an address may name (a bound on hostile input, far past 5,000 jobs).
PAGE_MAX = 100_000


@dataclass(frozen=True)
class Pager:
    """Where a page of the jobs list stands, and the links to its neighbours (None: no such page)."""

    page: int  # 1-based, as shown and as in ?page=
    pages: int
    total: int  # the jobs that match the filters
    first_row: int  # 1-based numbers of the rows shown ("101-200 of 5,000"); 0 when none match
    last_row: int
    first_url: str | None
    previous_url: str | None
    next_url: str | None
    last_url: str | None


def page_url(filters: dict[str, str], page: int, per_page: int) -> str:
    """The jobs page's address for ``page`` with these filters (empty ones left out)."""
    query = {k: v for k, v in filters.items() if v}
    if per_page != PER_PAGE:
        query["per_page"] = str(per_page)
    if page > 1:
        query["page"] = str(page)
    return f"/?{urlencode(query)}" if query else "/"


def pager(filters: dict[str, str], total: int, offset: int, per_page: int) -> Pager:
    """The pager of the page that starts at row ``offset`` (0-based) of ``total``."""
    pages = max(1, -(-total // per_page))
    page = offset // per_page + 1

    def link(n: int) -> str | None:
        return page_url(filters, n, per_page) if n != page and 1 <= n <= pages else None

    shown = min(per_page, max(total - offset, 0))
    return Pager(page, pages, total, offset + 1 if shown else 0, offset + shown, link(1), link(page - 1),
                 link(page + 1), link(pages))
