"""The namespace controller's report: the status conditions, worded as Kubernetes words them."""

from __future__ import annotations

from collections import Counter

import pytest

from controller_manager.controllers.namespace import NAMESPACED, DeletionReport
from machinery.api.kinds import (
    CONFIG_MAPS,
    DEPLOYMENTS,
    EVENTS,
    LEASES,
    PODS,
    REPLICATION_CONTROLLERS,
    SECRETS,
)

OK = {
    "NamespaceDeletionDiscoveryFailure": ("False", "ResourcesDiscovered", "All resources successfully discovered"),
    "NamespaceDeletionGroupVersionParsingFailure": ("False", "ParsedGroupVersions",
                                                    "All legacy kube types successfully parsed"),
    "NamespaceDeletionContentFailure": ("False", "ContentDeleted",
                                        "All content successfully deleted, may be waiting on finalization"),
    "NamespaceContentRemaining": ("False", "ContentRemoved", "All content successfully removed"),
    "NamespaceFinalizersRemaining": ("False", "ContentHasNoFinalizers", "All content-preserving finalizers finished"),
}


@pytest.mark.parametrize(("report", "changed"), [
    pytest.param(DeletionReport(), {}, id="all-done"),
    pytest.param(DeletionReport(estimate=30, remaining={"pods.": 2, "leases.coordination.k8s.io": 1}), {
        "NamespaceContentRemaining": ("True", "SomeResourcesRemain", ("Some resources are remaining: "
                                      "leases.coordination.k8s.io has 1 resource instances, pods. has 2 "
                                      "resource instances"))}, id="content-remains"),
    pytest.param(DeletionReport(remaining={"pods.": 3}, finalizers=Counter({"b.io/x": 1, "a.io/y": 2})), {
        "NamespaceContentRemaining": ("True", "SomeResourcesRemain",
                                      "Some resources are remaining: pods. has 3 resource instances"),
        "NamespaceFinalizersRemaining": ("True", "SomeFinalizersRemain",
                                         ("Some content in the namespace has finalizers remaining: a.io/y in 2 "
                                         "resource instances, b.io/x in 1 resource instances"))}, id="finalizers"),
    pytest.param(DeletionReport(errors=["z failed", "a failed"]), {
        "NamespaceDeletionContentFailure": ("True", "ContentDeletionFailed",
                                            "Failed to delete all resource types, 2 remaining: a failed, z failed")},
                 id="errors"),
])
def test_report_conditions(report: DeletionReport, changed: dict[str, tuple[str, str, str]]) -> None:
    assert report.conditions() == OK | changed


def test_every_namespaced_resource_is_emptied() -> None:
    assert {PODS, REPLICATION_CONTROLLERS, EVENTS, LEASES, DEPLOYMENTS, CONFIG_MAPS, SECRETS} <= set(NAMESPACED)
    # Only what can be deleted: the namespaced reviews and bindings are never stored.
    assert all("delete" in r.verbs and r.namespaced for r in NAMESPACED)
    assert "localsubjectaccessreviews" not in {r.plural for r in NAMESPACED}
