"""The CRD controller serves a CRD as soon as its own status write establishes it, not when the watch returns it."""

from __future__ import annotations

import copy
from typing import Any

import orjson

from apiserver.apiextensions.controller import CRDController
from apiserver.storage.objects import Entry
from machinery.api import kinds
from tests.crds import widget_crd


class _CRDs:
    """The CRD cache and store of a fake APIServer whose watch never delivers anything."""

    def __init__(self, crd: dict[str, Any]) -> None:
        self.crd = crd
        self.rv = 1
        self.strategy = object()
        self.state = {kinds.CUSTOM_RESOURCE_DEFINITIONS.etcd_key(None, crd["metadata"]["name"]): self._entry()}

    def _entry(self) -> Entry:
        self.crd["metadata"]["resourceVersion"] = str(self.rv)
        return Entry("", orjson.dumps(self.crd), self.rv)

    # the cache
    def get(self, key: str) -> Entry | None:
        return self.state.get(key)

    def list(self, _filter: Any) -> list[Entry]:
        return list(self.state.values())

    # the store
    def using(self, _strategy: Any) -> _CRDs:
        return self

    async def update_with(self, _namespace: Any, _name: str, mutate: Any, _opts: Any, *,
                          expect_rv: Any = None) -> tuple[Entry, bool]:
        assert expect_rv(self.crd) == str(self.rv)
        self.crd = mutate(copy.deepcopy(self.crd), None)
        self.rv += 1
        return self._entry(), False  # written to "etcd"; the cache (state) is not told


class _Server:
    def __init__(self, crds: _CRDs) -> None:
        self.caches = {kinds.CUSTOM_RESOURCE_DEFINITIONS: crds}
        self.crds = crds
        self.served: list[Any] = []

    def store(self, _info: Any) -> _CRDs:
        return self.crds

    def serve(self, resource: Any, *, version_priority: int) -> None:
        self.served.append(resource.info)

    def unserve(self, info: Any) -> None:
        self.served.remove(info)


async def test_a_crd_is_served_as_soon_as_its_status_write_establishes_it() -> None:
    crd = widget_crd("ctl.example.com")
    crd["metadata"]["uid"] = "u1"
    crds = _CRDs(crd)
    server = _Server(crds)
    controller = CRDController(server)  # type: ignore[arg-type]
    await controller.sync("widgets.ctl.example.com")
    conditions = {c["type"]: c["status"] for c in crds.crd["status"]["conditions"]}
    assert conditions["Established"] == "True" and conditions["NamesAccepted"] == "True"
    # Served though the cache still holds the CRD without a status: a client that read Established
    # from etcd may create a Widget at once.
    assert [(i.group, i.version, i.plural) for i in server.served if i.plural == "widgets"] == [
        ("ctl.example.com", "v1", "widgets")]
    assert "widgets.ctl.example.com" in controller.served
