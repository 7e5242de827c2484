"""The event recorder against the real APIServer: Events written, repeats aggregated into count."""

from __future__ import annotations

import asyncio

import pytest

from machinery.api.kinds import EVENTS, PODS
from machinery.client import Client
from machinery.events import NORMAL, WARNING, EventBroadcaster
from tests import harness
from tests.kube import pod

pytestmark = pytest.mark.integration


async def test_repeated_events_aggregate_on_one_object(cluster: harness.Cluster, namespace: str) -> None:
    async with Client(cluster.config()) as client:
        target = await client.create(PODS, pod("web"), namespace=namespace)
        broadcaster = EventBroadcaster(client)
        writer = asyncio.create_task(broadcaster.run())
        recorder = broadcaster.recorder("default-scheduler")
        try:
            recorder.event(target, WARNING, "FailedScheduling", "0/3 nodes are available")
            recorder.event(target, NORMAL, "Scheduled", f"Successfully assigned {namespace}/web to node-2")
            async with asyncio.timeout(20):
                while len((await client.list(EVENTS, namespace=namespace)).items) < 2:
                    await asyncio.sleep(0.05)
            for _ in range(3):
                recorder.event(target, WARNING, "FailedScheduling", "0/3 nodes are available")
                await asyncio.sleep(0.05)

            async def counts() -> dict[str, int]:
                events = (await client.list(EVENTS, namespace=namespace)).items
                return {e.reason: e.count for e in events}

            async with asyncio.timeout(20):
                while (await counts()).get("FailedScheduling") != 4:
                    await asyncio.sleep(0.05)
            events = (await client.list(EVENTS, namespace=namespace)).items
            assert sorted(e.reason for e in events) == ["FailedScheduling", "Scheduled"]
            failed = next(e for e in events if e.reason == "FailedScheduling")
            assert failed.involved_object.uid == target.metadata.uid
            assert failed.source.component == "default-scheduler"
            assert failed.last_timestamp >= failed.first_timestamp
            # A precise eventTime (what `kubesim trace` orders steps by), with what Kubernetes
            # then requires beside it.
            assert failed.event_time is not None and failed.event_time >= failed.first_timestamp
            assert failed.action == "FailedScheduling" and failed.reporting_component == "default-scheduler"
            assert failed.reporting_instance
            assert broadcaster.dropped == 0
        finally:
            writer.cancel()
            await asyncio.gather(writer, return_exceptions=True)
