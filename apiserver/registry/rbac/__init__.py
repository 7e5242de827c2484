"""rbac.authorization.k8s.io: Roles, ClusterRoles and their bindings."""

from __future__ import annotations

from apiserver.registry.rbac import clusterrolebindings, clusterroles, rolebindings, roles

RESOURCES = [clusterrolebindings.RESOURCE, clusterroles.RESOURCE, rolebindings.RESOURCE, roles.RESOURCE]
