"""Malformed objects reach the new admission plugins before validation: they pass through, never crash."""

from __future__ import annotations

from typing import Any

import pytest

from apiserver import errors
from apiserver.admission.default_storage_class import DefaultStorageClass
from apiserver.admission.limit_ranger import LimitRanger
from apiserver.admission.resource_quota import ResourceQuota
from apiserver.admission.service_account import ServiceAccount
from machinery.api import kinds
from tests.unit.test_admission import Context, attrs

BAD_PODS = [
    {"metadata": [], "spec": {}},
    {"metadata": {"name": "p"}, "spec": "nope"},
    {"metadata": {"name": "p"}, "spec": {"containers": "x", "volumes": "y"}},
    {"metadata": {"name": "p"}, "spec": {"containers": [1, {"name": "c", "resources": "big"}]}},
    {"metadata": {"name": "p"}, "spec": {"containers": [{"name": "c", "resources": {
        "requests": {"cpu": "lots"}, "limits": ["x"]}}]}},
]
CONTEXT = Context(
    serviceaccounts=[{"metadata": {"name": "default", "namespace": "default"}}],
    limitranges=[{"metadata": {"name": "lr", "namespace": "default"},
                  "spec": {"limits": [{"type": "Container", "default": {"cpu": "a lot"}, "max": {"cpu": "??"}}]}}],
    resourcequotas=[{"metadata": {"name": "q", "namespace": "default"},
                     "spec": {"hard": {"pods": "two", "requests.cpu": "1"}},
                     "status": {"hard": {"pods": "two"}, "used": {"pods": "x", "requests.cpu": "0"}}}],
    storageclasses=[{"metadata": {"name": "standard", "annotations": {
        "storageclass.kubernetes.io/is-default-class": "true"}}}])


@pytest.mark.parametrize("pod", BAD_PODS)
@pytest.mark.parametrize("plugin", [ServiceAccount(), LimitRanger(), ResourceQuota()],
                         ids=["ServiceAccount", "LimitRanger", "ResourceQuota"])
async def test_a_malformed_pod_passes_through(plugin: Any, pod: dict[str, Any]) -> None:
    a = attrs("CREATE", kinds.PODS, pod, ctx=CONTEXT)
    # A dry run: the quota plugin checks but records nothing (the fake context has no writes).
    a.dry_run = True
    if plugin.handles(a):
        try:
            await plugin.admit(a)
            await plugin.validate(a)
        except errors.APIError as err:
            # A refusal with a Status is an answer too (the quota's own garbage is not the Pod's fault).
            assert err.code in (403, 422), err


async def test_a_malformed_claim_passes_default_storage_class() -> None:
    claim = {"metadata": {"name": "c"}, "spec": ["not", "a", "spec"]}
    await DefaultStorageClass().admit(attrs("CREATE", kinds.PERSISTENT_VOLUME_CLAIMS, claim, ctx=CONTEXT))
    assert claim["spec"] == ["not", "a", "spec"]
