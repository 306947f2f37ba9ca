// Month-end close: the workflow that used to delay user-facing jobs on our shared workers.
// Runs on the last day of the month in Tokyo, never twice at once, and never over a failed
// close until someone has looked at it.
local jp = import 'jobplane.libsonnet';

local ledgerRetry = jp.retry(4, interval='2m', backoff=2, max_interval='15m');

{
  name: 'month-end-close',
  team: 'billing',
  description: 'Closes the month: freezes invoices, reconciles payments with the PSP, posts the ledger and files the reports.',
  runbook: jp.runbook(
    impact='Invoices for the month stay open; accounting cannot file. Customers are not affected until the 3rd.',
    workaround='None needed before the 3rd business day.',
    recovery='Fix the cause, then re-run from the failed step. freeze-invoices is idempotent; post-ledger checks for an existing posting.',
  ),
  schedule: jp.monthly('L', '23:30'),
  timezone: 'Asia/Tokyo',
  policy: jp.policy.SKIP_IF_RUNNING_OR_FAILED,
  timeout: '6h',
  expected_duration: '90m',
  steps: [
    jp.celery('freeze-invoices', 'billing.tasks.freeze_invoices', kwargs={ period: 'current' },
              opts={ timeout: '30m', retry: ledgerRetry }),
    jp.parallel('reconcile', [
      jp.python('reconcile-card-payments', 'examples.billing.close:reconcile', kwargs={ source: 'card' },
                opts={ retry: ledgerRetry, cpu: 1024, memory: 4096 }),
      jp.python('reconcile-bank-transfers', 'examples.billing.close:reconcile', kwargs={ source: 'bank' },
                opts={ retry: ledgerRetry }),
    ]),
    jp.django('post-ledger', 'post_ledger', args=['--period', 'current'],
              opts={ timeout: '1h', retry: ledgerRetry,
                     secrets: { LEDGER_API_TOKEN: jp.secret('billing/ledger-api-token') } }),
    jp.shell('file-reports', ['python', '-m', 'examples.billing.file_reports', '--period', 'current'],
             opts={ timeout: '20m' }),
  ],
  notify: jp.slack(['#billing-alerts', '#accounting'],
                   events=[jp.events.FAILED, jp.events.TIMED_OUT, jp.events.ABORTED, jp.events.RECOVERED, jp.events.SLOW]),
}
