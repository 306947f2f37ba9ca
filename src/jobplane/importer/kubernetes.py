"""Kubernetes CronJob manifests (``batch/v1``; ``batch/v1beta1`` reads the same): one or more
YAML documents, a ``List`` of them too.

The schedule is Unix cron as Kubernetes evaluates it (its cron library treats ``?`` as ``*`` and
ORs the day fields unless one starts with ``*``, as Vixie cron does), in ``timeZone`` or, without
it, the kube-controller-manager's local zone, which the manifest does not say. The job's
container (the first; others are reported) gives the command: ``command`` + ``args``; an env
``value`` is kept (a secret-looking one becomes a secret reference), a ``secretKeyRef`` becomes a
reference to a named secret, never a value; values from ConfigMaps or the pod's fields cannot be
read from the manifest, so such a job is refused with what to set instead.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Literal

from jobplane.importer.crontab import KEYWORDS
from jobplane.importer.dialects import UNIX_CRON
from jobplane.importer.entries import Command, Entry, InputProblem, Origin, Reading, SecretRef, Skipped, SourceSchedule
from jobplane.importer.sources import ReadContext, Source, SourceFormat
from jobplane.importer.yamldocs import YamlError, documents, line_of
from jobplane.contract.types import JsonObject, JsonValue

#: Kubernetes' default when a CronJob gives no backoffLimit (the Job API reference).
DEFAULT_BACKOFF_LIMIT = 6


def looks_like(source: Source) -> bool:
    return source.is_yaml


def _read(source: Source, context: ReadContext) -> Reading:
    return read(source.name, source.text, context.team, source.documents)


def read(path: str, text: str, team: str, parse: Callable[[str], list[JsonValue]] = documents) -> Reading:
    """``parse``: the YAML reader (a :class:`Source`'s, which parses a text once for every format)."""
    out = Reading()
    try:
        docs = parse(text)
    except YamlError as e:
        out.problems.append(InputProblem(Origin(path, e.line, "manifest"), str(e)))
        return out
    flat = _flatten(docs)
    # the Secrets the given manifest holds, so a to-do can name the file and line of the value
    held = {str(_get(d, "metadata").get("name")): f"{path}:{line_of(d)}" for d in flat
            if isinstance(d, dict) and d.get("kind") == "Secret"}
    for doc in flat:
        line = line_of(doc)
        if not isinstance(doc, dict):
            out.problems.append(InputProblem(Origin(path, line, "manifest"), "a document is not a Kubernetes object"))
            continue
        kind = doc.get("kind")
        name = (doc.get("metadata") or {}).get("name") if isinstance(doc.get("metadata"), dict) else None
        origin = Origin(path, line, f"{kind} {name!r}" if name else str(kind))
        if kind != "CronJob":
            out.skipped.append(Skipped(origin, f"a {kind}, not a CronJob: nothing to schedule", counts=False))
            continue
        if str(doc.get("apiVersion")) not in ("batch/v1", "batch/v1beta1"):
            out.problems.append(InputProblem(origin, f"apiVersion {doc.get('apiVersion')!r}: CronJobs are batch/v1"))
            continue
        _cronjob(origin, doc, team, held, out)
    return out


def _flatten(docs: list[JsonValue]) -> list[JsonValue]:
    flat: list[JsonValue] = []
    for d in docs:
        if isinstance(d, dict) and d.get("kind") == "List" and isinstance(d.get("items"), list):
            flat.extend(d["items"])
        else:
            flat.append(d)
    return flat


#: Kubernetes concurrencyPolicy as the entry's (a policy it does not know is Allow, its default).
CONCURRENCY: dict[str, Literal["allow", "forbid", "replace"]] = {"Allow": "allow", "Forbid": "forbid",
                                                                 "Replace": "replace"}


def _cronjob(origin: Origin, doc: JsonObject, team: str, held: dict[str, str], out: Reading) -> None:
    spec = _get(doc, "spec")
    problems: list[str] = []
    schedule = spec.get("schedule")
    if not isinstance(schedule, str) or not schedule.strip():
        problems.append("spec.schedule: missing")
        schedule = ""
    schedule = KEYWORDS.get(schedule.strip(), schedule.strip())
    if schedule.upper().startswith(("TZ=", "CRON_TZ=")):
        problems.append("spec.schedule: a TZ= prefix is refused by Kubernetes since 1.27; use spec.timeZone")
    elif schedule and len(schedule.split()) != 5:
        problems.append(f"spec.schedule: {schedule!r} is not a 5-field cron schedule")
    job_spec = _get(spec, "jobTemplate", "spec")
    pod_spec = _get(job_spec, "template", "spec")
    found = pod_spec.get("containers")
    containers: list[JsonValue] = found if isinstance(found, list) else []
    if not containers or not isinstance(containers[0], dict):
        problems.append("spec.jobTemplate.spec.template.spec.containers: no container")
    if problems:
        out.problems.extend(InputProblem(origin, p) for p in problems)
        return
    container: JsonObject = containers[0]
    notes: list[str] = []
    blockers: list[str] = []
    if len(containers) > 1:
        notes.append(f"only the first container ({container.get('name')!r}) is imported; the pod had "
                     f"{len(containers)}")
    command = [str(x) for x in container.get("command") or []]
    args = [str(x) for x in container.get("args") or []]
    if not command and not args:
        blockers.append("the container runs its image's default command, which the manifest does not show: "
                        "add command: to the manifest (or write the step by hand)")
    elif not command:
        blockers.append(f"the container gives args ({_short(args)}) but no command: they ran after its image's "
                        "ENTRYPOINT, which the manifest does not show: add command: (the image's entrypoint) to "
                        "the manifest, or write the step by hand")
    blockers.extend(_pod_context(container, pod_spec, command + args, notes))
    env, secrets = [], []
    for i, var in enumerate(container.get("env") or []):
        if not isinstance(var, dict) or not isinstance(var.get("name"), str):
            continue
        vname = var["name"]
        source = var.get("valueFrom")
        if isinstance(source, dict) and isinstance(source.get("secretKeyRef"), dict):
            ref = source["secretKeyRef"]
            secret, key = str(ref.get("name")), str(ref.get("key"))
            where = (f"its value is in {held[secret]}, data.{key}" if secret in held else
                     f"the cluster holds it: kubectl get secret {secret} -o jsonpath='{{.data.{key}}}' | base64 -d")
            secrets.append((vname, SecretRef(f"{team}/{secret}-{key}",
                                             f"Kubernetes secret {secret!r}, key {key!r}; {where}")))
        elif isinstance(source, dict):
            what = next(iter(source), "valueFrom")
            blockers.append(f"env {vname}: its value comes from {what} ({source[what]!r}), which the manifest "
                            "does not hold: give it as a value or a secret")
        else:
            env.append((vname, "" if var.get("value") is None else str(var.get("value"))))
    if container.get("envFrom"):
        blockers.append("envFrom: the variables come from a ConfigMap or Secret the manifest does not hold: list them")
    policy = str(spec.get("concurrencyPolicy") or "Allow")
    deadline = job_spec.get("activeDeadlineSeconds")
    backoff = job_spec.get("backoffLimit", DEFAULT_BACKOFF_LIMIT)
    if spec.get("startingDeadlineSeconds") is not None:
        notes.append(f"startingDeadlineSeconds {spec['startingDeadlineSeconds']}: a late start is not dropped "
                     "by jobplane (a missed fire is run by backfill)")
    out.entries.append(Entry(
        origin=origin,
        name_hint=str((doc.get("metadata") or {}).get("name") or ""),
        schedules=(SourceSchedule(UNIX_CRON.name, schedule.replace("?", "*")),),
        command=Command(argv=tuple(command + args)),
        timezone=spec.get("timeZone") if isinstance(spec.get("timeZone"), str) else None,
        enabled=not bool(spec.get("suspend")),
        concurrency=CONCURRENCY.get(policy, "allow"),
        description=str(_get(doc, "metadata", "annotations").get("description", "")),
        env=tuple(env),
        secrets=tuple(secrets),
        timeout_seconds=int(deadline) if isinstance(deadline, int) and deadline > 0 else None,
        attempts=int(backoff) + 1 if isinstance(backoff, int) and backoff >= 0 else None,
        blockers=tuple(blockers),
        notes=tuple(notes),
    ))


def _pod_context(container: JsonObject, pod_spec: JsonObject, argv: list[str], notes: list[str]) -> list[str]:
    """What the pod gave the command that a jobplane step does not have: the image, mounted
    volumes, the service account. Each is reported with what to do; a command that names a
    mounted path is refused (its files would not be there)."""
    blockers: list[str] = []
    image = container.get("image")
    if isinstance(image, str) and image:
        notes.append(f"the container ran the image {image!r}; the step runs in the team's runner image, which must "
                     "have the program and files it used (or be built from it)")
    account = pod_spec.get("serviceAccountName") or pod_spec.get("serviceAccount")
    if isinstance(account, str) and account:
        notes.append(f"the pod ran as the service account {account!r} (its RBAC and cloud permissions); the step "
                     "runs with the job's IAM role: grant what the command needs there")
    volumes = {str(v.get("name")): v for v in pod_spec.get("volumes") or [] if isinstance(v, dict)}
    text = " ".join(argv)
    for mount in container.get("volumeMounts") or []:
        if not isinstance(mount, dict) or not isinstance(mount.get("mountPath"), str):
            continue
        path = str(mount["mountPath"]).rstrip("/") or "/"
        volume = volumes.get(str(mount.get("name")), {})
        kinds = [k for k in volume if k != "name"]
        what = f"{kinds[0]} {_short(volume[kinds[0]])}" if kinds else f"volume {mount.get('name')!r}"
        if path != "/" and path in text:
            blockers.append(f"the command reads {path}, where the pod mounted {what}; the step will not have it: "
                            "bake the files into the runner image or read them from S3 or Secrets Manager, change "
                            "the command, and import again")
        else:
            notes.append(f"the pod mounted {what} at {path}, which the step will not have: if the command reads it, "
                         "bake the files into the runner image or read them from S3 or Secrets Manager")
    return blockers


def _short(value: JsonValue) -> str:
    text = value if isinstance(value, str) else repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def _get(value: JsonValue, *keys: str) -> JsonObject:
    for key in keys:
        value = value.get(key) if isinstance(value, dict) else None
    return value if isinstance(value, dict) else {}


FORMAT = SourceFormat("kubernetes", "any other .yaml file", looks_like, _read, (UNIX_CRON,))
