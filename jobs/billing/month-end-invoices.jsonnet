// Month-end invoices: totals the month's invoices, waits for finance to sign the totals off, then
// sends them. The sign-off is an approval step (docs/dsl.md "Approval steps"): the run waits
// (for at most 8 hours) until a member of team billing approves or rejects it in the portal
// (/approvals) or with `jobplane approve|reject`; never the person who started the run (four_eyes).
local jp = import 'jobplane.libsonnet';

{
  name: 'month-end-invoices',
  team: 'billing',
  description: 'Totals the month\'s invoices, waits for finance\'s sign-off, then sends them.',
  runbook: jp.runbook(
    impact='Customers are not invoiced for the month until it runs and is signed off.',
    recovery='A rejected run sent nothing: fix the totals, then run it again (or re-run from total).',
  ),
  schedule: jp.monthly(1, '09:00'),
  timezone: 'Asia/Tokyo',
  policy: jp.policy.SKIP_IF_RUNNING,
  timeout: '12h',
  steps: [
    jp.python('total', 'examples.billing.invoices:total_invoices', opts={ timeout: '20m' }),
    jp.approval('sign-off', {
      approvers: ['billing'],
      prompt: 'Send {total.invoices} invoices totalling {total.total_yen} yen?',
      timeout: '8h',
      on_timeout: 'reject',
      four_eyes: true,
      remind: '2h',
    }),
    jp.python('send', 'examples.billing.invoices:send_invoices', opts={ timeout: '30m' }),
  ],
  notify: jp.slack(['#billing-alerts']),
}
