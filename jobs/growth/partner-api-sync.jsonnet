// Pulls partner catalogue changes every 15 minutes. A run that overlaps the next fire is
// normal when the partner API is slow: the later fire is skipped rather than queued.
local jp = import 'jobplane.libsonnet';

{
  name: 'partner-api-sync',
  team: 'growth',
  description: 'Fetches changed offers from the partner API and upserts them into our catalogue.',
  runbook: jp.runbook(
    impact='Partner offers are up to one interval stale.',
    recovery='Nothing to do for a single failure: the next fire catches up from the last cursor.',
  ),
  schedule: 'rate(15 minutes)',
  timezone: 'UTC',
  policy: jp.policy.SKIP_IF_RUNNING,
  timeout: '14m',
  steps: [
    // The endpoint comes from PARTNER_API_URL (the task's environment; locally [dev.env]).
    // A short, frequent call: on Lambda it starts in about a second instead of a Fargate task's
    // tens of seconds, every 15 minutes (docs/dsl.md "Lambda or ECS").
    jp.lambda('fetch-changes', 'examples.growth.partner_sync:fetch_changes',
              opts={ retry: jp.retry(3, '20s'), timeout: '5m', env: { PARTNER_REGION: 'jp' } }),
    jp.python('upsert-offers', 'examples.growth.partner_sync:upsert_offers', opts={ timeout: '5m' }),
  ],
  // One failed sync is caught up by the next fire: page only when two fail in a row.
  notify: jp.slack('#growth-alerts', events=[jp.events.FAILED, jp.events.TIMED_OUT], after_failures=2),
}
