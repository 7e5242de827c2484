"""The PersistentVolume binder: claims bound to matching volumes, or to volumes it provisions.

Kubernetes' ``pkg/controller/volume/persistentvolume`` (the binder and its
in-tree provisioning), for kubesim's simulated storage:

- **Binding.** A pending claim is bound to the smallest Available volume
  that satisfies it (same class, access modes, capacity, selector, volume
  mode; a volume pre-bound to it by ``claimRef`` first): the volume gets the
  ``claimRef`` and phase Bound, the claim ``spec.volumeName``, the
  ``pv.kubernetes.io/bind-completed`` and ``bound-by-controller`` annotations,
  phase Bound, its capacity and access modes.
- **WaitForFirstConsumer.** A claim of a class that binds late waits
  (``WaitForFirstConsumer`` event) until the scheduler's VolumeBinding
  plugin writes the chosen node into ``volume.kubernetes.io/selected-node``;
  then only volumes that node can reach (their node affinity) are candidates.
- **Provisioning.** With no volume to bind and a class whose provisioner is
  ``kubesim.io/hostpath``, a volume ``pvc-<claim uid>`` is made for the
  claim (capacity as requested, the class's reclaim policy, node affinity to
  the selected node for late binding) and bound (``ProvisioningSucceeded``).
  Another provisioner's claims get the ``volume.kubernetes.io/storage-provisioner``
  annotation and the ``ExternalProvisioning`` event, as Kubernetes leaves them
  to an external provisioner.
- **Release.** A volume whose claim is gone becomes Released; with
  ``reclaimPolicy: Delete`` it is deleted, with Retain it stays. A claim whose
  volume is gone is Lost.

Concurrency: one queue holds both kinds of keys (``pvc/<ns>/<name>`` and
``pv/<name>``), never two workers on one key; every sync is also redone
every ``--pvclaimbinder-sync-period``. Writes are guarded by resourceVersions:
a conflict fails the sync and it is retried on fresh caches.
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any, Final, Literal

from kubernetes.client import V1PersistentVolume, V1PersistentVolumeClaim

from controller_manager.context import ControllerContext
from machinery.api import storage
from machinery.api.kinds import (
    NODES,
    PERSISTENT_VOLUME_CLAIMS,
    PERSISTENT_VOLUMES,
    STORAGE_CLASSES,
    ObjectKey,
)
from machinery.api.nodeselector import NodeSelector
from machinery.client.errors import AlreadyExists, NotFound
from machinery.client.objects import meta_of, to_wire
from machinery.controller import Controller
from machinery.events import NORMAL, WARNING
from machinery.informer.shared import DeletedFinalStateUnknown

log = logging.getLogger(__name__)

NAME: Final = "persistentvolume-binder-controller"
ALIASES: Final = ("persistentvolume-binder",)
EVENT_SOURCE: Final = "persistentvolume-controller"


class PersistentVolumeController(Controller):
    def __init__(self, ctx: ControllerContext) -> None:
        self._claims = ctx.informers.informer(PERSISTENT_VOLUME_CLAIMS)
        self._volumes = ctx.informers.informer(PERSISTENT_VOLUMES)
        self._classes = ctx.informers.informer(STORAGE_CLASSES)
        self._nodes = ctx.informers.informer(NODES)
        super().__init__("volumes", informers=[self._claims, self._volumes, self._classes, self._nodes],
                         workers=2, clock=ctx.clock)
        self._client = ctx.client
        self._clock = ctx.clock
        self._recorder = ctx.events.recorder(EVENT_SOURCE)
        self._is_leading = ctx.is_leading
        self._period = ctx.options.pvclaimbinder_sync_period
        self._claims.add_handler(on_add=self._claim_changed, on_update=lambda _o, n: self._claim_changed(n),
                                 on_delete=self._claim_deleted)
        self._volumes.add_handler(on_add=self._volume_changed, on_update=lambda _o, n: self._volume_changed(n),
                                  on_delete=self._volume_deleted)

    async def run(self) -> None:
        async with asyncio.TaskGroup() as group:
            group.create_task(super().run(), name="pv-workers")
            group.create_task(self._resync(), name="pv-resync")

    async def _resync(self) -> None:
        while True:
            await self._clock.sleep(self._period)
            for claim in self._claims.store.list():
                self._claim_changed(claim)
            for volume in self._volumes.store.list():
                self._volume_changed(volume)

    def _claim_changed(self, claim: V1PersistentVolumeClaim) -> None:
        self.queue.add(ObjectKey(f"pvc/{meta_of(claim).namespace}/{meta_of(claim).name}"))

    def _claim_deleted(self, obj: V1PersistentVolumeClaim | DeletedFinalStateUnknown[V1PersistentVolumeClaim],
                       ) -> None:
        claim = obj.obj if isinstance(obj, DeletedFinalStateUnknown) else obj
        name = claim.spec.volume_name if claim.spec is not None else None
        if name:
            self.queue.add(ObjectKey(f"pv/{name}"))

    def _volume_changed(self, volume: V1PersistentVolume) -> None:
        self.queue.add(ObjectKey(f"pv/{meta_of(volume).name}"))
        ref = volume.spec.claim_ref if volume.spec is not None else None
        if ref is not None and ref.name:
            self.queue.add(ObjectKey(f"pvc/{ref.namespace}/{ref.name}"))

    def _volume_deleted(self, obj: V1PersistentVolume | DeletedFinalStateUnknown[V1PersistentVolume]) -> None:
        volume = obj.obj if isinstance(obj, DeletedFinalStateUnknown) else obj
        ref = volume.spec.claim_ref if volume.spec is not None else None
        if ref is not None and ref.name:
            self.queue.add(ObjectKey(f"pvc/{ref.namespace}/{ref.name}"))

    async def sync(self, key: ObjectKey) -> None:
        if not self._is_leading():
            return
        kind, _, rest = key.partition("/")
        if kind == "pvc":
            claim = self._claims.store.get(rest)
            if claim is not None and meta_of(claim).deletion_timestamp is None:
                await self._sync_claim(to_wire(claim))
        else:
            volume = self._volumes.store.get(rest)
            if volume is not None and meta_of(volume).deletion_timestamp is None:
                await self._sync_volume(to_wire(volume))

    # --- claims ------------------------------------------------------------------------------------

    async def _sync_claim(self, claim: dict[str, Any]) -> None:
        spec = claim.get("spec") or {}
        meta = claim["metadata"]
        if spec.get("volumeName"):
            volume = self._volumes.store.get(spec["volumeName"])
            if volume is None:
                if (claim.get("status") or {}).get("phase") != "Lost":
                    self._event(claim, WARNING, "ClaimLost", "Bound claim has lost its PersistentVolume. "
                                "Data on the volume is lost!")
                    await self._claim_status(claim, {"phase": "Lost"})
                return
            wire = to_wire(volume)
            ref = (wire.get("spec") or {}).get("claimRef") or {}
            if ref.get("uid") in (None, meta.get("uid")):
                await self._bind(wire, claim)
            return
        cls = self._class(storage.claim_class(claim))
        late = cls is not None and cls.get("volumeBindingMode") == storage.WAIT_FOR_FIRST_CONSUMER
        node = (meta.get("annotations") or {}).get(storage.SELECTED_NODE)
        if late and not node:
            if (claim.get("status") or {}).get("phase") != "Pending":
                await self._claim_status(claim, {"phase": "Pending"})
            self._event(claim, NORMAL, "WaitForFirstConsumer",
                        "waiting for first consumer to be created before binding")
            return
        match = self._find_volume(claim, node if late else None)
        if match is not None:
            await self._bind(match, claim)
            return
        if cls is None:
            message = ("no persistent volumes available for this claim and no storage class is set"
                       if not storage.claim_class(claim) else
                       f'storageclass.storage.k8s.io "{storage.claim_class(claim)}" not found')
            self._event(claim, WARNING, "FailedBinding" if not storage.claim_class(claim) else
                        "ProvisioningFailed", message)
            if (claim.get("status") or {}).get("phase") != "Pending":
                await self._claim_status(claim, {"phase": "Pending"})
            return
        provisioner = cls.get("provisioner") or ""
        if provisioner != storage.PROVISIONER:
            await self._annotate_provisioner(claim, provisioner)
            self._event(claim, NORMAL, "ExternalProvisioning",
                        f"Waiting for a volume to be created either by the external provisioner '{provisioner}' "
                        "or manually by the system administrator. If volume creation is delayed, please verify "
                        "that the provisioner is running and correctly registered.")
            return
        await self._provision(claim, cls, node if late else None)

    def _class(self, name: str) -> dict[str, Any] | None:
        if not name:
            return None
        cls = self._classes.store.get(name)
        return to_wire(cls) if cls is not None else None

    def _find_volume(self, claim: dict[str, Any], node: str | None) -> dict[str, Any] | None:
        """``FindMatchingVolume``: a volume pre-bound to the claim, else the smallest that fits."""
        meta = claim["metadata"]
        best: dict[str, Any] | None = None
        node_obj = self._nodes.store.get(node) if node else None
        for model in self._volumes.store.list():
            volume = to_wire(model)
            vspec = volume.get("spec") or {}
            ref = vspec.get("claimRef")
            if ref is not None:
                if ref.get("name") == meta["name"] and ref.get("namespace") == meta.get("namespace") \
                        and ref.get("uid") in (None, meta.get("uid")) and storage.volume_matches_claim(volume, claim):
                    return volume
                continue
            if (volume.get("status") or {}).get("phase") not in (None, "Available", "Pending"):
                continue
            if not storage.volume_matches_claim(volume, claim):
                continue
            if node_obj is not None and not _reachable(volume, meta_of(node_obj).name or "",
                                                       meta_of(node_obj).labels or {}):
                continue
            if best is None or storage.volume_capacity(volume) < storage.volume_capacity(best):
                best = volume
        return best

    async def _bind(self, volume: dict[str, Any], claim: dict[str, Any]) -> None:
        """``bind``: the volume's claimRef and phase, then the claim's volumeName, annotations and phase."""
        meta = claim["metadata"]
        vspec = volume.setdefault("spec", {})
        ref = vspec.get("claimRef") or {}
        if ref.get("uid") != meta.get("uid") or ref.get("name") != meta["name"]:
            vspec["claimRef"] = {"kind": "PersistentVolumeClaim", "namespace": meta.get("namespace"),
                                 "name": meta["name"], "uid": meta.get("uid"), "apiVersion": "v1",
                                 "resourceVersion": meta.get("resourceVersion")}
            volume["metadata"].setdefault("annotations", {})[storage.BOUND_BY_CONTROLLER] = "yes"
            volume = to_wire(await self._client.update(PERSISTENT_VOLUMES, volume))
        if (volume.get("status") or {}).get("phase") != "Bound":
            volume["status"] = {**(volume.get("status") or {}), "phase": "Bound"}
            volume = to_wire(await self._client.update_status(PERSISTENT_VOLUMES, volume))
        spec = claim.setdefault("spec", {})
        annotations = meta.setdefault("annotations", {})
        if spec.get("volumeName") != volume["metadata"]["name"] or annotations.get(storage.BIND_COMPLETED) != "yes":
            if spec.get("volumeName") != volume["metadata"]["name"]:
                annotations[storage.BOUND_BY_CONTROLLER] = "yes"
            spec["volumeName"] = volume["metadata"]["name"]
            annotations[storage.BIND_COMPLETED] = "yes"
            claim = to_wire(await self._client.update(PERSISTENT_VOLUME_CLAIMS, claim))
        vspec = volume.get("spec") or {}
        status = {"phase": "Bound", "accessModes": vspec.get("accessModes") or [],
                  "capacity": vspec.get("capacity") or {}}
        if {k: (claim.get("status") or {}).get(k) for k in status} != status:
            await self._claim_status(claim, status)
            log.info("bound PersistentVolumeClaim %s/%s to PersistentVolume %s", meta.get("namespace"),
                     meta["name"], volume["metadata"]["name"])

    async def _provision(self, claim: dict[str, Any], cls: dict[str, Any], node: str | None) -> None:
        meta = claim["metadata"]
        spec = claim.get("spec") or {}
        name = f"pvc-{meta.get('uid')}"
        volume: dict[str, Any] = {
            "apiVersion": "v1", "kind": "PersistentVolume",
            "metadata": {"name": name, "annotations": {storage.PROVISIONED_BY: storage.PROVISIONER}},
            "spec": {"capacity": {"storage": ((spec.get("resources") or {}).get("requests") or {}).get(
                         "storage", "1Gi")},
                     "accessModes": spec.get("accessModes") or ["ReadWriteOnce"],
                     "persistentVolumeReclaimPolicy": cls.get("reclaimPolicy") or "Delete",
                     "storageClassName": storage.claim_class(claim),
                     "volumeMode": spec.get("volumeMode") or "Filesystem",
                     "claimRef": {"kind": "PersistentVolumeClaim", "namespace": meta.get("namespace"),
                                  "name": meta["name"], "uid": meta.get("uid"), "apiVersion": "v1"},
                     # Simulated storage: a directory on the node, as hostPath provisioners make.
                     "hostPath": {"path": f"/var/lib/kubesim/volumes/{name}", "type": "DirectoryOrCreate"}}}
        if cls.get("mountOptions"):
            volume["spec"]["mountOptions"] = cls["mountOptions"]
        if node:
            node_obj = self._nodes.store.get(node)
            hostname = (meta_of(node_obj).labels or {}).get(storage.HOSTNAME_LABEL, node) if node_obj else node
            volume["spec"]["nodeAffinity"] = {"required": {"nodeSelectorTerms": [{"matchExpressions": [
                {"key": storage.HOSTNAME_LABEL, "operator": "In", "values": [hostname]}]}]}}
        await self._annotate_provisioner(claim, storage.PROVISIONER)
        try:
            await self._client.create(PERSISTENT_VOLUMES, volume)
        except AlreadyExists:
            return
        self._event(claim, NORMAL, "ProvisioningSucceeded", f"Successfully provisioned volume {name}")
        log.info("provisioned PersistentVolume %s for claim %s/%s", name, meta.get("namespace"), meta["name"])

    async def _annotate_provisioner(self, claim: dict[str, Any], provisioner: str) -> None:
        annotations = claim["metadata"].setdefault("annotations", {})
        if annotations.get(storage.STORAGE_PROVISIONER) == provisioner:
            return
        annotations[storage.STORAGE_PROVISIONER] = provisioner
        annotations[storage.BETA_STORAGE_PROVISIONER] = provisioner
        updated = await self._client.update(PERSISTENT_VOLUME_CLAIMS, claim)
        claim["metadata"] = to_wire(updated)["metadata"]

    async def _claim_status(self, claim: dict[str, Any], status: dict[str, Any]) -> None:
        body = dict(claim)
        body["status"] = {**(claim.get("status") or {}), **status}
        await self._client.update_status(PERSISTENT_VOLUME_CLAIMS, body)

    # --- volumes -----------------------------------------------------------------------------------

    async def _sync_volume(self, volume: dict[str, Any]) -> None:
        vspec = volume.get("spec") or {}
        ref = vspec.get("claimRef")
        phase = (volume.get("status") or {}).get("phase")
        if ref is None:
            if phase != "Available":
                await self._volume_status(volume, "Available")
            return
        claim = self._claims.store.get(f"{ref.get('namespace')}/{ref.get('name')}")
        if claim is not None and (ref.get("uid") is None or meta_of(claim).uid == ref.get("uid")):
            if phase != "Bound" and claim.spec is not None and claim.spec.volume_name == volume["metadata"]["name"]:
                await self._volume_status(volume, "Bound")
            return
        if ref.get("uid") is None:
            # Pre-bound by name to a claim that does not exist yet: it stays available for that claim.
            if phase != "Available":
                await self._volume_status(volume, "Available")
            return
        if phase != "Released":
            volume = to_wire(await self._volume_status(volume, "Released"))
        policy = vspec.get("persistentVolumeReclaimPolicy") or "Retain"
        if policy == "Delete":
            try:
                await self._client.delete(PERSISTENT_VOLUMES, volume["metadata"]["name"],
                                          uid=volume["metadata"].get("uid"))
            except NotFound:
                return
            log.info("deleted PersistentVolume %s: its claim is gone", volume["metadata"]["name"])

    async def _volume_status(self, volume: dict[str, Any], phase: str) -> V1PersistentVolume:
        body = dict(volume)
        body["status"] = {**(volume.get("status") or {}), "phase": phase}
        return await self._client.update_status(PERSISTENT_VOLUMES, body)

    def _event(self, claim: dict[str, Any], kind: Literal["Normal", "Warning"], reason: str, message: str) -> None:
        model = self._claims.store.get(f"{claim['metadata'].get('namespace')}/{claim['metadata']['name']}")
        if model is not None:
            self._recorder.event(model, kind, reason, message)


def _reachable(volume: dict[str, Any], node_name: str, node_labels: dict[str, str]) -> bool:
    """Whether the volume's node affinity admits the node (no affinity admits every node)."""
    required = (((volume.get("spec") or {}).get("nodeAffinity") or {}).get("required"))
    if not required:
        return True
    try:
        return NodeSelector.from_spec(required).matches(node_name, node_labels)
    except ValueError:
        return False
