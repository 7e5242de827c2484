"""batch: Jobs and CronJobs."""

from __future__ import annotations

from apiserver.registry.batch import cronjobs, jobs

RESOURCES = [cronjobs.RESOURCE, jobs.RESOURCE]
