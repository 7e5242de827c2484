"""The PodGroup custom resource (``scheduling.x-k8s.io/v1alpha1``), as Coscheduling reads it.

``crd.yaml`` next to this module is its CustomResourceDefinition; :data:`PODGROUPS`
addresses it for the typed client and the informer; :class:`PodGroup` is the
model (unknown fields are kept, so a newer PodGroup reads fine). A Pod joins
a group with the label :data:`POD_GROUP_LABEL` naming a PodGroup of its namespace.

Plain data.
"""

from __future__ import annotations

from importlib import resources
from typing import Any, Final

import yaml
from kubernetes.client import V1ObjectMeta
from pydantic import BaseModel, ConfigDict, Field

from machinery.api.kinds import ResourceInfo, Subresource

GROUP: Final = "scheduling.x-k8s.io"
VERSION: Final = "v1alpha1"
#: The label that puts a Pod in a PodGroup of its namespace.
POD_GROUP_LABEL: Final = "scheduling.x-k8s.io/pod-group"


class PodGroupSpec(BaseModel):
    model_config = ConfigDict(extra="allow", populate_by_name=True)

    min_member: int = Field(default=1, alias="minMember")
    min_resources: dict[str, Any] | None = Field(default=None, alias="minResources")
    schedule_timeout_seconds: int | None = Field(default=None, alias="scheduleTimeoutSeconds")


class PodGroup(BaseModel):
    model_config = ConfigDict(extra="allow", populate_by_name=True)

    api_version: str | None = Field(default=None, alias="apiVersion")
    kind: str | None = None
    metadata: V1ObjectMeta | None = None
    spec: PodGroupSpec = Field(default_factory=PodGroupSpec)
    status: dict[str, Any] | None = None


PODGROUPS: Final = ResourceInfo(
    group=GROUP, version=VERSION, plural="podgroups", singular="podgroup", kind="PodGroup", namespaced=True,
    model_ref=PodGroup, etcd_resource=f"{GROUP}/podgroups", definition="io.x-k8s.scheduling.v1alpha1.PodGroup",
    short_names=("pg", "pgs"), subresources=(Subresource("status", "PodGroup", ("get", "patch", "update")),))


def rbac_manifest() -> list[dict[str, Any]]:
    """The ClusterRole and binding that let the scheduler (``system:kube-scheduler``) read PodGroups and write
    their status, as scheduler-plugins' manifests grant its scheduler; applied with the CRD."""
    name = "kubesim:coscheduling"
    return [
        {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole", "metadata": {"name": name},
         "rules": [{"apiGroups": ["scheduling.x-k8s.io"], "resources": ["podgroups"],
                    "verbs": ["get", "list", "watch"]},
                   {"apiGroups": ["scheduling.x-k8s.io"], "resources": ["podgroups/status"],
                    "verbs": ["get", "patch", "update"]}]},
        {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding", "metadata": {"name": name},
         "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": name},
         "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": "system:kube-scheduler"}]},
    ]


def crd_manifest() -> dict[str, Any]:
    """The PodGroup CustomResourceDefinition (``crd.yaml``)."""
    text = resources.files(__package__).joinpath("crd.yaml").read_text()
    doc: dict[str, Any] = yaml.safe_load(text)
    return doc
