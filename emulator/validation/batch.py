"""batch/v1 rules (pkg/apis/batch/validation): a Job's counts are non-negative, its pods
restart OnFailure or Never, its selector matches its template; a CronJob has a five-field
schedule (no TZ= inside: ``timeZone`` says it), a known concurrency policy and a name short
enough to suffix its Jobs'."""

from __future__ import annotations

import zoneinfo
from typing import Any

from kubetrio.emulator.validation import labelselector
from kubetrio.emulator.validation.apps import validate_template
from kubetrio.emulator.validation.causes import Causes
from kubetrio.emulator.validation.podspec import dict_at, nonnegative

Obj = dict[str, Any]

_DESCRIPTORS = frozenset(
    {"@yearly", "@annually", "@monthly", "@weekly", "@daily", "@midnight", "@hourly"}
)
_CRONJOB_NAME_MAX = 52


def _job_spec(spec: Obj, path: str, causes: Causes) -> None:
    """validateJobSpec: what a Job and a CronJob's job template share."""
    for key in ("parallelism", "completions"):
        nonnegative(causes, f"{path}.{key}", spec.get(key))
    nonnegative(causes, f"{path}.activeDeadlineSeconds", spec.get("activeDeadlineSeconds"))
    nonnegative(causes, f"{path}.backoffLimit", spec.get("backoffLimit"))
    nonnegative(causes, f"{path}.ttlSecondsAfterFinished", spec.get("ttlSecondsAfterFinished"))
    mode = spec.get("completionMode")
    if mode is not None:
        if mode not in ("NonIndexed", "Indexed"):
            causes.unsupported(f"{path}.completionMode", mode, ["NonIndexed", "Indexed"])
        if mode == "Indexed" and spec.get("completions") is None:
            causes.required(f"{path}.completions", "when completion mode is Indexed")
    template = dict_at(spec, "template")
    validate_template(template, f"{path}.template", causes)
    if dict_at(template, "spec").get("restartPolicy") not in ("OnFailure", "Never"):
        causes.required(f"{path}.template.spec.restartPolicy", 'valid values: "OnFailure", "Never"')


def job_create(obj: Obj, causes: Causes) -> None:
    spec = dict_at(obj, "spec")
    _job_spec(spec, "spec", causes)
    selector = spec.get("selector")
    if selector is None:
        causes.required("spec.selector")
    else:
        labelselector.validate(selector, "spec.selector", causes)
    if labelselector.convertible(selector):
        labels = dict_at(dict_at(spec, "template"), "metadata").get("labels")
        if not labelselector.matches(selector, labels):
            causes.invalid(
                "spec.template.metadata.labels",
                labels,
                "`selector` does not match template `labels`",
            )


def job_update(new: Obj, old: Obj, causes: Causes) -> None:
    """The Job's rules again, then what may never change once it exists (its template
    printed as JSON, where kube prints its Go struct)."""
    job_create(new, causes)
    spec, old_spec = dict_at(new, "spec"), dict_at(old, "spec")
    for key in ("completions", "selector", "template", "completionMode"):
        value = spec.get(key)
        if value == old_spec.get(key):
            continue
        shown: Any = labelselector.go_value(value) if key == "selector" else value
        causes.invalid(f"spec.{key}", shown, "field is immutable")


def _schedule(schedule: str, causes: Causes) -> None:
    if "TZ=" in schedule:
        causes.invalid(
            "spec.schedule",
            schedule,
            "cannot use TZ or CRON_TZ in schedule, use timeZone field instead",
        )
        return
    if schedule.startswith("@"):
        if schedule not in _DESCRIPTORS and not schedule.startswith("@every "):
            causes.invalid("spec.schedule", schedule, f"unrecognized descriptor: {schedule}")
        return
    fields = schedule.split()
    if len(fields) != 5:
        causes.invalid(
            "spec.schedule",
            schedule,
            f"expected exactly 5 fields, found {len(fields)}: [{' '.join(fields)}]",
        )


def cronjob_create(obj: Obj, causes: Causes) -> None:
    name = dict_at(obj, "metadata").get("name")
    if isinstance(name, str) and len(name) > _CRONJOB_NAME_MAX:
        causes.invalid(
            "metadata.name", name, f"must be no more than {_CRONJOB_NAME_MAX} characters"
        )
    spec = dict_at(obj, "spec")
    schedule = spec.get("schedule")
    if not schedule:
        causes.required("spec.schedule")
    elif isinstance(schedule, str):
        _schedule(schedule, causes)
    nonnegative(causes, "spec.startingDeadlineSeconds", spec.get("startingDeadlineSeconds"))
    policy = spec.get("concurrencyPolicy")
    if not policy:
        causes.required("spec.concurrencyPolicy")
    elif policy not in ("Allow", "Forbid", "Replace"):
        causes.unsupported("spec.concurrencyPolicy", policy, ["Allow", "Forbid", "Replace"])
    _job_spec(dict_at(dict_at(spec, "jobTemplate"), "spec"), "spec.jobTemplate.spec", causes)
    for key in ("successfulJobsHistoryLimit", "failedJobsHistoryLimit"):
        nonnegative(causes, f"spec.{key}", spec.get(key))
    zone = spec.get("timeZone")
    if isinstance(zone, str) and zone and not _known_zone(zone):
        causes.invalid("spec.timeZone", zone, f"unknown time zone {zone}")


def _known_zone(zone: str) -> bool:
    try:
        zoneinfo.ZoneInfo(zone)
    except (zoneinfo.ZoneInfoNotFoundError, ValueError):
        return False
    return True


def cronjob_update(new: Obj, old: Obj, causes: Causes) -> None:
    spec = dict_at(new, "spec")
    schedule = spec.get("schedule")
    if not schedule:
        causes.required("spec.schedule")
    elif isinstance(schedule, str):
        _schedule(schedule, causes)
    nonnegative(causes, "spec.startingDeadlineSeconds", spec.get("startingDeadlineSeconds"))
    policy = spec.get("concurrencyPolicy")
    if policy not in ("Allow", "Forbid", "Replace"):
        causes.unsupported("spec.concurrencyPolicy", policy, ["Allow", "Forbid", "Replace"])
    _job_spec(dict_at(dict_at(spec, "jobTemplate"), "spec"), "spec.jobTemplate.spec", causes)


RULES = {
    "jobs.batch": (job_create, job_update, None),
    "cronjobs.batch": (cronjob_create, cronjob_update, None),
}
