// Manual only: rebuilds the search index for a date range after a mapping change.
// Operators start it from the portal with params { from: '2026-01-01', to: '2026-01-31' }.
local jp = import 'jobplane.libsonnet';

{
  name: 'backfill-search-index',
  team: 'platform',
  description: 'Re-indexes documents of a date range into the search cluster. Started by hand.',
  runbook: jp.runbook(
    impact='Search results for the range stay on the old mapping.',
    recovery='Re-run the whole job: indexing is idempotent per document.',
  ),
  schedule: jp.manual,
  policy: jp.policy.SKIP_IF_RUNNING,
  timeout: '12h',
  params: { from: null, to: null, batch_size: 500 },
  steps: [
    jp.python('reindex', 'examples.platform.search:reindex_range', opts={ timeout: '11h', cpu: 2048, memory: 8192 }),
  ],
}
