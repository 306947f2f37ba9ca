// Weekly cohort export for the growth analysts. Independent weeks, so overlapping runs are
// harmless and every Monday run should happen even if last week's failed.
local jp = import 'jobplane.libsonnet';

{
  name: 'weekly-cohort-export',
  team: 'growth',
  description: "Exports last week's signup cohorts with their 7-day retention to the analytics bucket.",
  schedule: jp.weekly('MON', '06:00'),
  timezone: 'America/New_York',
  policy: jp.policy.ALWAYS_RUN,
  steps: [
    jp.celery('build-cohorts', 'growth.tasks.build_cohorts', args=['last_week'], opts={ memory: 2048, cpu: 512 }),
    jp.shell('upload', ['sh', '-c', 'python -m examples.growth.export --out "${EXPORT_DIR:-/tmp/export}"'],
             opts={ env: { EXPORT_DIR: '/tmp/cohorts' } }),
  ],
}
