"""Admission: the plugins that change or refuse writes, in Kubernetes' order.

:func:`default_chain` builds the chain kube-apiserver 1.32 enables by
default, for the plugins kubesim implements; :mod:`apiserver.admission.chain`
has the mechanism.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from apiserver.admission.chain import ANONYMOUS, Attributes, BoundChain, Chain, Plugin, UserInfo
from apiserver.admission.default_storage_class import DefaultStorageClass
from apiserver.admission.default_toleration_seconds import DefaultTolerationSeconds
from apiserver.admission.limit_ranger import LimitRanger
from apiserver.admission.namespace_lifecycle import NamespaceLifecycle
from apiserver.admission.noderestriction import NodeRestriction
from apiserver.admission.priority import Priority
from apiserver.admission.resource_quota import ResourceQuota
from apiserver.admission.service_account import ServiceAccount

if TYPE_CHECKING:
    from apiserver.settings import Settings

__all__ = ["ANONYMOUS", "PLUGIN_NAMES", "Attributes", "BoundChain", "Chain", "Plugin", "UserInfo",
           "default_chain"]


def _plugins(settings: Settings) -> list[Plugin]:
    """Every plugin kubesim has, in kube-apiserver's order (``AllOrderedPlugins``)."""
    return [
        NamespaceLifecycle(),
        LimitRanger(),
        ServiceAccount(),
        NodeRestriction(),
        Priority(),
        DefaultTolerationSeconds(not_ready_seconds=settings.default_not_ready_toleration_seconds,
                                 unreachable_seconds=settings.default_unreachable_toleration_seconds),
        DefaultStorageClass(),
        ResourceQuota(),
    ]


#: The names ``--enable-admission-plugins`` and ``--disable-admission-plugins`` accept.
PLUGIN_NAMES: tuple[str, ...] = (
    "NamespaceLifecycle", "LimitRanger", "ServiceAccount", "NodeRestriction", "Priority",
    "DefaultTolerationSeconds",
    "DefaultStorageClass", "ResourceQuota",
)


def default_chain(settings: Settings) -> Chain:
    """The enabled plugins in kube-apiserver's order (NamespaceLifecycle first, ResourceQuota last).

    NodeRestriction is on, as kubeadm enables it; it comes after ServiceAccount and before Priority.
    """
    disabled = set(settings.disabled_admission_plugins)
    return Chain([p for p in _plugins(settings) if p.name not in disabled])
