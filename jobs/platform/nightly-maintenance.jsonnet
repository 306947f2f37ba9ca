// Housekeeping that must not pile up after a failure: if last night's run failed, tonight's
// is skipped until someone acknowledges it in the portal (or a re-run succeeds).
local jp = import 'jobplane.libsonnet';

[
  {
    name: 'clear-expired-sessions',
    team: 'platform',
    description: 'Deletes expired Django sessions and compacts the session table.',
    schedule: jp.daily('03:15'),
    policy: jp.policy.SKIP_IF_FAILED,
    // The database's own weekly maintenance (jobplane.toml [blackouts.db-maint]): Sunday's 03:15
    // fire is recorded BLACKED_OUT, not run, not alerted, never MISSED (docs/dsl.md#blackout-windows).
    blackout: ['db-maint'],
    steps: [
      jp.django('clearsessions', 'clearsessions'),
      jp.shell('vacuum-sessions', ['python', '-m', 'examples.platform.vacuum', '--table', 'django_session'],
               opts={ timeout: '15m' }),
    ],
    notify: jp.slack('#platform-oncall', events=[jp.events.FAILED, jp.events.TIMED_OUT, jp.events.ABORTED, jp.events.SKIPPED]),
  },
  {
    name: 'rotate-audit-archives',
    team: 'platform',
    description: 'Moves audit log partitions older than 90 days to cold storage, on weekday evenings.',
    schedule: jp.weekdays('19:00'),
    enabled: false,  // paused until the cold-storage bucket policy lands
    steps: [jp.python('rotate', 'examples.platform.audit:rotate', kwargs={ older_than_days: 90 })],
  },
]
