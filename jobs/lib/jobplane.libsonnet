// jobplane job DSL. A definition imports this file and returns one job object (or a list).
//
//   local jp = import 'jobplane.libsonnet';
//   {
//     name: 'daily-sales-report',
//     team: 'billing',
//     schedule: jp.daily('02:00'),
//     timezone: 'Asia/Tokyo',
//     steps: [jp.python('build', 'examples.billing.reports:build_daily_report')],
//   }
//
// Every field not given takes the platform default (see docs/dsl.md and `jobplane schema`).
// Helpers only build plain objects and EventBridge expressions: the compiler validates them.
{
  // --- execution policies (what happens when a run is already going, or the last one failed)
  policy:: {
    ALWAYS_RUN: 'ALWAYS_RUN',
    SKIP_IF_RUNNING: 'SKIP_IF_RUNNING',
    SKIP_IF_FAILED: 'SKIP_IF_FAILED',
    SKIP_IF_RUNNING_OR_FAILED: 'SKIP_IF_RUNNING_OR_FAILED',
    REPLACE: 'REPLACE',  // a new fire stops the running execution (recorded ABORTED, REPLACED) and runs
  },

  // --- notification events
  events:: {
    FAILED: 'FAILED',
    TIMED_OUT: 'TIMED_OUT',
    ABORTED: 'ABORTED',
    SKIPPED: 'SKIPPED',
    RECOVERED: 'RECOVERED',
    SLOW: 'SLOW',
    MISSED: 'MISSED',
    DEADLINE: 'DEADLINE',
    STALLED: 'STALLED',
    APPROVAL: 'APPROVAL',  // an approval step's request and reminders: sent whatever the job's events
    EXPECTATION: 'EXPECTATION',
  },

  // --- schedules: each returns an EventBridge Scheduler expression (or a list of them).
  // A helper given a bad argument returns a refusal, { 'jobplane:refused': why, value: stand-in },
  // in place of its expression instead of stopping the whole file with `error`: the compiler
  // reports `why` against the field (each job of the file checked on), and checks the stand-in
  // (or nothing, when it is null) for whatever else is wrong (issue 65 item 6).
  local refuse(why, value=null) = { 'jobplane:refused': why, value: value },
  local refused(x) = std.isObject(x) && std.objectHas(x, 'jobplane:refused'),
  // The helpers below build their text with + and std.toString, not Jsonnet's % (std.format):
  // go-jsonnet runs std.format as Jsonnet, ~0.7 ms a call, so one `jp.daily('02:00')` was two
  // thirds of evaluating a typical job file (issue 66 item 5). Hours and minutes are integers
  // here (std.parseInt of 1-2 digits), which std.toString writes as %d does.
  local digits(s) = std.length(s) > 0 && std.length(s) <= 2 && std.length(std.stripChars(s, '0123456789')) == 0,
  local two(n) = (if n < 10 then '0' else '') + std.toString(n),
  local cronAt(x, rest) = 'cron(' + std.toString(x.minute) + ' ' + std.toString(x.hour) + ' ' + rest + ')',
  local hm(at) =
    local parts = if std.isString(at) then std.split(at, ':') else [];
    if std.length(parts) != 2 || !digits(parts[0]) || !digits(parts[1]) then
      refuse('time %s must be HH:MM' % std.toString(at))
    else
      local hour = std.parseInt(parts[0]), minute = std.parseInt(parts[1]);
      if hour > 23 || minute > 59 then refuse('time %s must be HH:MM, 00:00 to 23:59' % at)
      else { hour: hour, minute: minute },
  local oneOrMany(at, f) = if std.isArray(at) then [f(a) for a in at] else f(at),
  // f(x) for a time that parses; the time's refusal for one that does not
  local atTime(t, f) = local x = hm(t); if refused(x) then x else f(x),
  // 'HH:MM,HH:MM' of a business rule; a bad time's refusal stands in with 00:00, so the rest
  // of the rule (business_day=30) is checked too
  local times(at) =
    local parsed = [hm(t) for t in (if std.isArray(at) then at else [at])];
    local text = std.join(',', [if refused(x) then '00:00' else two(x.hour) + ':' + two(x.minute) for x in parsed]);
    local bad = [x for x in parsed if refused(x)];
    if std.length(bad) == 0 then text else { why: bad[0]['jobplane:refused'], text: text },
  local business(rule, at) =
    local t = times(at);
    if std.isString(t) then rule % t else refuse(t.why, rule % t.text),

  // Raw EventBridge expressions, for anything the helpers do not cover.
  cron(expression):: 'cron(%s)' % expression,
  rate(value, unit):: 'rate(%d %s)' % [value, if value == 1 then unit else unit + 's'],
  at(datetime):: 'at(%s)' % datetime,

  // Every day at 'HH:MM' (or each of a list of times), in the job's timezone.
  daily(at):: oneOrMany(at, function(t) atTime(t, function(x) cronAt(x, '* * ? *'))),
  // Monday to Friday at 'HH:MM'.
  weekdays(at):: oneOrMany(at, function(t) atTime(t, function(x) cronAt(x, '? * MON-FRI *'))),
  // On a day of the week ('MON'...'SUN', or a list such as 'MON,THU') at 'HH:MM'.
  weekly(day, at):: oneOrMany(at, function(t) atTime(t, function(x) cronAt(x, '? * ' + std.toString(day) + ' *'))),
  // On a day of the month (1-31, or 'L' for the last day, 'LW' for the last weekday) at 'HH:MM'.
  // With the job's calendar (docs/dsl.md#calendars): business_day=N, the N-th business day of the
  // month (-1 the last); or day=D with shift='previous'|'next', day D or the business day before/after it.
  monthly(day=null, at='00:00', business_day=null, shift=null)::
    if business_day != null then
      if day != null || shift != null then refuse('monthly: business_day=N takes no day or shift')
      else business('business(monthly business_day=%d at=%%s)' % business_day, at)
    else if shift != null then
      if day == null then refuse('monthly: shift moves a day: give day=D')
      else business('business(monthly day=%d shift=%s at=%%s)' % [day, shift], at)
    else if day == null then refuse('monthly: give day (1-31, L, LW) or business_day')
    else oneOrMany(at, function(t) atTime(t, function(x) cronAt(x, std.toString(day) + ' * ? *'))),
  // Every business day of the job's calendar at 'HH:MM' (or each of a list of times).
  businessDays(at='00:00'):: business('business(days at=%s)', at),
  // Every N minutes, aligned to the clock (minute 0 of every hour is a fire time when 60 % N == 0).
  everyMinutes(n):: if std.isNumber(n) && n >= 1 && n < 60 then 'cron(0/%d * * * ? *)' % n else refuse('everyMinutes takes 1-59, not %s' % std.toString(n)),
  // Every hour at the given minute.
  hourly(minute=0):: 'cron(%d * * * ? *)' % minute,
  // No schedule: the job runs only when started by hand (portal, API or `jobplane run`).
  manual:: [],

  // --- run after another job (`after: [jp.after('extract-orders')]`): when its run SUCCEEDED,
  // or with on='FAILED' when a step of it failed or timed out (a clean-up job). A skipped run
  // of it starts nothing; the run carries its scheduled time.
  after(job, on='SUCCEEDED'):: { job: job, on: on },

  // --- retries of a step's own retryable failures (infrastructure errors are retried anyway)
  retry(attempts, interval='30s', backoff=2, max_interval='1h'):: {
    attempts: attempts,
    interval: interval,
    backoff: backoff,
    max_interval: max_interval,
  },

  // --- an expectation on a metric the step reports (jobplane.metric), for a step's `expect`
  // (docs/expectations.md): check '<op> <number>', '<op> baseline' or '<op> <factor> * baseline';
  // on_fail 'fail' (the attempt fails; retries apply) or 'warn'; on_missing: a metric never reported
  // when: 'business_days' (the job's calendar, else Monday to Friday) or a calendar: judged on its business days only
  expect(metric, check, on_fail='fail', on_missing=null, when=null)::
    { metric: metric, check: check, on_fail: on_fail } + (if on_missing == null then {} else { on_missing: on_missing })
    + (if when == null then {} else { when: when }),

  // --- a Secrets Manager secret by name, for a step's `secrets` (its full ARN is looked up at plan time).
  // A team's jobs use names under '<team>/' and those its [teams.<team>] secrets list allows.
  secret(name):: 'secretsmanager:' + name,
  // --- an SSM Parameter Store parameter by name ('/<team>/...'), for a step's `secrets`
  parameter(name):: 'ssm:' + name,

  // --- steps. `opts` adds any step field: timeout, retry, cpu, memory, env, secrets, description.
  python(name, target, kwargs={}, opts={}):: { name: name, python: target } + (if kwargs == {} then {} else { kwargs: kwargs }) + opts,
  celery(name, task, args=[], kwargs={}, opts={}):: { name: name, celery: task }
                                                    + (if args == [] then {} else { args: args })
                                                    + (if kwargs == {} then {} else { kwargs: kwargs }) + opts,
  django(name, command, args=[], opts={}):: { name: name, django: command } + (if args == [] then {} else { args: args }) + opts,
  shell(name, argv, opts={}):: { name: name, shell: argv } + opts,
  parallel(name, steps, opts={}):: { name: name, parallel: steps } + opts,
  // a python function run on AWS Lambda (starts in about a second; at most 15 minutes; memory, no cpu)
  lambda(name, target, kwargs={}, opts={}):: { name: name, lambda: target } + (if kwargs == {} then {} else { kwargs: kwargs }) + opts,
  // fan-out: `each` runs once per item the `items` step's function returns (docs/dsl.md "Fan-out");
  // opts: max_concurrency (at most 500 unless max_concurrency_override: true), tolerated_failures (a count or 'N%'), and any step field
  map(name, items, each, opts={}):: { name: name, map: { items: items, each: each }
                                      + { [k]: opts[k] for k in ['max_concurrency', 'max_concurrency_override', 'tolerated_failures'] if std.objectHas(opts, k) } }
                                    + { [k]: opts[k] for k in std.objectFields(opts) if k != 'max_concurrency' && k != 'max_concurrency_override' && k != 'tolerated_failures' },

  // a person approves or rejects before the run goes on (docs/dsl.md "Approval steps"); opts: approvers
  // (teams or people), prompt, channel, timeout (the human wait, default '1d'), on_timeout ('reject',
  // 'approve' or 'fail'), four_eyes (the run's starter may not decide), remind (an interval)
  approval(name, opts={}):: { name: name, approval: opts },

  // --- a pool of jobplane.toml [pools] with a weight, for a step's or a job's `pool` (a name alone
  // is weight 1): each attempt holds that many slots while it runs, waiting (WAITING) for them first
  pool(name, weight=1):: { name: name, weight: weight },

  // --- notifications
  slack(channels, events=null, after_failures=null, renotify_after=null):: { channels: if std.isArray(channels) then channels else [channels] }
                                 + (if events == null then {} else { events: events })
                                 + (if after_failures == null then {} else { after_failures: after_failures })
                                 + (if renotify_after == null then {} else { renotify_after: renotify_after }),
  // a signed webhook target (or several) of the deployment's webhook secret, by name: the alert as signed JSON
  // (docs/notifications.md "The webhook channel"); with Slack: jp.slack('#x') + jp.webhook('oncall')
  webhook(targets, events=null, after_failures=null, renotify_after=null):: { channels+: ['webhook:' + t for t in (if std.isArray(targets) then targets else [targets])] }
                                 + (if events == null then {} else { events: events })
                                 + (if after_failures == null then {} else { after_failures: after_failures })
                                 + (if renotify_after == null then {} else { renotify_after: renotify_after }),

  // --- runbook: shown in alerts and in the portal
  runbook(impact, recovery, workaround=''):: { impact: impact, recovery: recovery, workaround: workaround },

  // --- typed parameters, for a job's `params` (docs/dsl.md "Typed parameters"): each checked by
  // every starter (portal form, `jobplane run -p`, backfills, the API) before anything starts.
  // No default: required. A month's default may be 'last_closed' or 'fire_month', a date's
  // 'previous_business_day', 'fire_date' or 'today': resolved at the fire, in the job's timezone.
  param:: {
    local decl(type, fields) = { '$param': type } + { [k]: fields[k] for k in std.objectFields(fields) if fields[k] != null },
    string(default=null, pattern=null, choices=null, min_length=null, max_length=null, description=null, required=null)::
      decl('string', { default: default, pattern: pattern, choices: choices, min_length: min_length, max_length: max_length,
                       description: description, required: required }),
    int(default=null, min=null, max=null, description=null, required=null)::
      decl('int', { default: default, min: min, max: max, description: description, required: required }),
    number(default=null, min=null, max=null, description=null, required=null)::
      decl('number', { default: default, min: min, max: max, description: description, required: required }),
    bool(default=null, description=null, required=null):: decl('bool', { default: default, description: description, required: required }),
    date(default=null, description=null, required=null):: decl('date', { default: default, description: description, required: required }),
    month(default=null, description=null, required=null):: decl('month', { default: default, description: description, required: required }),
    enum(choices, default=null, description=null, required=null)::
      decl('enum', { choices: choices, default: default, description: description, required: required }),
  },
}
