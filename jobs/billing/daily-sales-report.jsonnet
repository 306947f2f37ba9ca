// Yesterday's sales, aggregated per store and mailed to finance before the 09:00 stand-up.
local jp = import 'jobplane.libsonnet';

{
  name: 'daily-sales-report',
  team: 'billing',
  description: "Aggregates yesterday's orders per store and publishes the daily sales report.",
  runbook: jp.runbook(
    impact="Finance's 09:00 dashboard shows the day before yesterday.",
    recovery='Safe to re-run from the failed step: every step overwrites its own output for the date.',
  ),
  schedule: jp.daily('02:00'),
  timezone: 'Asia/Tokyo',
  policy: jp.policy.SKIP_IF_RUNNING,
  expected_duration: '20m',
  timeout: '2h',
  steps: [
    jp.python('extract-orders', 'examples.billing.reports:extract_orders',
              kwargs={ days_back: 1 }, opts={ retry: jp.retry(3, '1m'), timeout: '30m' }),
    jp.python('aggregate', 'examples.billing.reports:aggregate_by_store', opts={ memory: 1024 }),
    jp.python('publish', 'examples.billing.reports:publish_report', kwargs={ recipients: ['finance@example.com'] }),
  ],
  notify: jp.slack('#billing-alerts', events=[jp.events.FAILED, jp.events.TIMED_OUT, jp.events.ABORTED, jp.events.RECOVERED]),
  // typed: `jobplane run daily-sales-report -p report_date=2026-05-01`, the portal's date picker and the
  // API refuse anything but a date before the run starts; not given, the steps report yesterday
  params: { report_date: jp.param.date(required=false, description='The day to report; default: yesterday') },
}
