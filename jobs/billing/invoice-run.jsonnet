// Invoicing: loads the month's usage, invoices each tenant (a map item each), then counts what
// was sent. Its expectations catch a green run that did nothing (docs/expectations.md): a load of
// no rows fails (and is retried: a late upstream export can catch up), a tenant invoiced for
// nothing fails its item (listed in the alert, re-run with `jobplane rerun --failed-items`), and a
// month that sent less than half its usual invoices is warned of (the median of the last runs).
local jp = import 'jobplane.libsonnet';

{
  name: 'invoice-run',
  team: 'billing',
  description: 'Loads the usage, invoices each tenant, counts the invoices sent.',
  runbook: jp.runbook(
    impact='Tenants are not invoiced for the month until it succeeds.',
    recovery='Fix the cause, then re-run the failed items (jobplane rerun --failed-items) or from the failed step.',
  ),
  schedule: jp.manual,
  params: { tenants: 3, empty: [] },
  steps: [
    jp.map('invoice-all',
           jp.python('load-usage', 'examples.billing.invoicing:load_usage',
                     opts={ retry: jp.retry(2, interval='15s'), expect: [jp.expect('rows_loaded', '>= 1')] }),
           jp.python('invoice-tenant', 'examples.billing.invoicing:invoice_tenant',
                     opts={ expect: [jp.expect('invoices_sent', '>= 1')] }),
           opts={ max_concurrency: 4 }),
    jp.python('summarize', 'examples.billing.invoicing:summarize',
              opts={ expect: [jp.expect('invoices_sent', '>= 0.5 * baseline', on_fail='warn')] }),
  ],
  notify: jp.slack('#billing-alerts', events=[jp.events.FAILED, jp.events.TIMED_OUT, jp.events.ABORTED,
                                              jp.events.EXPECTATION]),
}
