// Keeps every published daily sales report: runs after each successful daily-sales-report, for
// the day that run was scheduled for (a skipped or failed report starts nothing).
local jp = import 'jobplane.libsonnet';

{
  name: 'archive-sales-report',
  team: 'billing',
  description: 'Copies the day\'s published sales report to the archive after daily-sales-report succeeds.',
  runbook: jp.runbook(
    impact='The archive misses a day; the published report itself is fine.',
    recovery='Safe to re-run: it copies the same report again.',
  ),
  after: [jp.after('daily-sales-report')],
  policy: jp.policy.SKIP_IF_RUNNING,
  timeout: '10m',
  steps: [jp.python('archive', 'examples.billing.reports:archive_report')],
}
