"""``python -m controller_manager --master URL``: run kubesim's controller-manager until a signal stops it."""

from __future__ import annotations

import sys

from controller_manager.app import COMPONENT, LEASE_NAME, add_flags, main
from machinery import process

if __name__ == "__main__":
    sys.exit(process.run(
        COMPONENT, main, lease_name=LEASE_NAME, add_flags=add_flags,
        description="kubesim's kube-controller-manager: the replication, garbage collection, namespace, "
                    "node lifecycle and taint eviction controllers."))
