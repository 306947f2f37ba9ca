"""The example application the jobs under jobs/ run.

It stands in for a team's existing code base: plain functions, a Celery app, a Django project and
scripts, none of which know about jobplane. The steps do small but real work on files under
``EXAMPLES_DATA_DIR`` (``jobplane dev`` points it at ``.jobplane/examples``) and call the local
partner API (:mod:`examples.partner_api`), which fails now and then like a real one.
"""
