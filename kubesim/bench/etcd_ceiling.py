"""Scenario 1, the etcd ceiling: guarded transactions per second straight to etcd, from one Python process.

Every kubesim write is one guarded etcd transaction (create-if-absent, or a
compare-and-swap on mod_revision), so this rate, divided by the writes one Pod
costs, bounds the Pod rate of any design on this machine. It is measured with
the same client library (aetcd over gRPC) and value size (1 KiB) as the
APIServer's writes, at high concurrency.
"""

from __future__ import annotations

import asyncio
import time

import aetcd
from aetcd import rpc

from kubesim.bench.results import ScenarioResult
from kubesim.bench.sizes import Size, pick


async def _txns(port: int, count: int, concurrency: int, *, cas: bool) -> float:
    client = aetcd.Client(port=port)
    await client.connect()
    kv = client.kvstub
    value = b"x" * 1024
    keys = [f"/bench/ceiling/{i:08d}".encode() for i in range(count)]
    revisions: dict[bytes, int] = {}
    if cas:
        for k in keys:
            resp = await kv.Range(rpc.RangeRequest(key=k))
            revisions[k] = resp.kvs[0].mod_revision if resp.kvs else 0
    pending = list(reversed(keys))

    async def worker() -> None:
        while pending:
            k = pending.pop()
            if cas:
                cmp = rpc.Compare(result=rpc.Compare.EQUAL, target=rpc.Compare.MOD, key=k,
                                  mod_revision=revisions[k])
            else:
                cmp = rpc.Compare(result=rpc.Compare.EQUAL, target=rpc.Compare.CREATE, key=k, create_revision=0)
            resp = await kv.Txn(rpc.TxnRequest(compare=[cmp], success=[
                rpc.RequestOp(request_put=rpc.PutRequest(key=k, value=value))]))
            if not resp.succeeded:
                raise RuntimeError(f"guarded write of {k!r} failed")

    started = time.perf_counter()
    await asyncio.gather(*(worker() for _ in range(concurrency)))
    elapsed = time.perf_counter() - started
    await client.close()
    return count / elapsed


async def run(etcd_port: int, *, size: Size) -> ScenarioResult:
    count = pick(size, full=30_000, quick=3_000, smoke=300)
    result = ScenarioResult("etcd ceiling")
    started = time.perf_counter()
    create = await _txns(etcd_port, count, 256, cas=False)
    cas = await _txns(etcd_port, count, 256, cas=True)
    result.add("create-if-absent txn/s", create, "/s", "1 KiB values, 256 in flight")
    result.add("compare-and-swap txn/s", cas, "/s", "1 KiB values, 256 in flight")
    result.seconds = time.perf_counter() - started
    return result
