"""``python -m controller_manager --master URL``: run kubesim's controller-manager until a signal stops it."""

from __future__ import annotations

import argparse
import sys

from controller_manager.app import COMPONENT, LEASE_NAME, add_flags, main
from machinery import process

DESCRIPTION = ("kubesim's kube-controller-manager: the workload controllers (ReplicationController, "
               "ReplicaSet, Deployment, StatefulSet, DaemonSet, Job, CronJob, TTL-after-finished, "
               "HorizontalPodAutoscaler), the ones around them (Endpoints, EndpointSlice, disruption, "
               "ResourceQuota, PersistentVolume binder, ServiceAccount, root CA publisher), and garbage "
               "collection, namespace, node lifecycle and taint eviction; each can be switched with "
               "--controllers.")


def build_parser() -> argparse.ArgumentParser:
    """The controller-manager's flags (what docker-compose.yml and kubesim up pass are checked against it)."""
    return process.build_parser(COMPONENT, description=DESCRIPTION, lease_name=LEASE_NAME, add_flags=add_flags)


if __name__ == "__main__":
    sys.exit(process.run(COMPONENT, main, lease_name=LEASE_NAME, add_flags=add_flags, description=DESCRIPTION))
