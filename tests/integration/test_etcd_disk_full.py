"""etcd's disk full: writes fail with a Status, cached reads still answer, nothing is lost when space returns.

etcd's data directory is a small tmpfs mounted for the test (this needs root,
as CI and the sandbox have; the test is skipped elsewhere), then filled up.
etcd 3.5 cannot commit on a full disk and exits (``failed to commit tx ...
no space left on device``), so the APIServer answers writes and consistent
reads with 503 Status objects while lists at ``resourceVersion=0`` are served
from its watch cache. Once space returns and etcd is started again (as
``kubesim up`` would), every acknowledged write is there and writes work, and the
APIServer's watch cache, which saw writes that etcd applied but lost in its
crash, agrees with etcd again (it relists when etcd's revision is behind its own).
"""

from __future__ import annotations

import contextlib
import os
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from kubesim import procs
from tests import harness

pytestmark = pytest.mark.integration


@contextlib.contextmanager
def small_filesystem(path: Path, size: str) -> Iterator[Path]:
    path.mkdir(parents=True, exist_ok=True)
    if os.geteuid() != 0 or shutil.which("mount") is None:
        pytest.skip("mounting a tmpfs needs root")
    done = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(path)],
                          capture_output=True, text=True, check=False)
    if done.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {done.stderr.strip()}")
    try:
        yield path
    finally:
        subprocess.run(["umount", "-l", str(path)], capture_output=True, check=False)


def pod(name: str, image: str = "nginx") -> dict[str, object]:
    return {"metadata": {"name": name}, "spec": {"containers": [{"name": "c", "image": image}]}}


def test_a_full_disk_fails_writes_with_a_status_and_loses_nothing(tmp_path: Path) -> None:
    with small_filesystem(tmp_path / "mnt", "150m") as mnt:
        port = procs.free_port()
        etcd = procs.etcd_process(mnt / "etcd", client_port=port, log_path=tmp_path / "etcd.log")
        etcd.start().wait_ready(30)
        api_server = None
        try:
            api_server = harness.start_apiserver(f"http://127.0.0.1:{port}", tmp_path)
            with harness.admin_client(api_server.url, timeout=15) as api:
                harness.wait_for(lambda: api.get("/api/v1/namespaces/default").status_code == 200)
                acknowledged = []
                for i in range(10):
                    r = api.post("/api/v1/namespaces/default/pods", json=pod(f"before-{i}"))
                    assert r.status_code == 201
                    acknowledged.append(f"before-{i}")
                filler = mnt / "filler"
                subprocess.run(["dd", "if=/dev/zero", f"of={filler}", "bs=1M", "count=200"],
                               capture_output=True, check=False)
                failed = None
                for i in range(300):
                    r = api.post("/api/v1/namespaces/default/pods", json=pod(f"during-{i}", "x" * 2000))
                    if r.status_code == 201:
                        acknowledged.append(f"during-{i}")
                        continue
                    failed = r
                    break
                assert failed is not None, "the disk never filled up"
                assert failed.status_code in (503, 504), failed.text
                assert failed.json()["kind"] == "Status" and failed.json()["code"] == failed.status_code
                harness.wait_for(lambda: not etcd.alive(), timeout=10, message="etcd to stop on the full disk")
                assert "no space left on device" in etcd.log_path.read_text()
                # Reads the watch cache can serve still answer; consistent ones are a 503, not a 500.
                # resourceVersion=0 may be served a moment stale (the cache may still be applying what
                # etcd sent before it stopped; CI saw the last six acknowledged Pods missing at once):
                # every acknowledged Pod must be there once it has.
                def cached() -> set[str]:
                    r = api.get("/api/v1/namespaces/default/pods", params={"resourceVersion": "0"})
                    assert r.status_code == 200
                    return {p["metadata"]["name"] for p in r.json()["items"]}
                harness.wait_for(lambda: cached() >= set(acknowledged), timeout=10,
                                 message="the watch cache to hold every acknowledged Pod")
                consistent = api.get("/api/v1/namespaces/default/pods/before-1")
                assert consistent.status_code == 503 and consistent.json()["kind"] == "Status"

                filler.unlink()
                etcd.start().wait_ready(30)
                harness.wait_for(lambda: api.post("/api/v1/namespaces/default/pods", json=pod("after"))
                                 .status_code == 201, timeout=30, message="writes to work again")
                # The watch cache saw writes etcd applied and then lost with its crash (they were never
                # acknowledged): it must agree with etcd again, not serve those ghosts.
                # (A consistent read in the first moments may still miss a write: see the report of
                # issue 16. The cache must agree with etcd soon after.)
                def names(**params: str) -> set[str]:
                    items = api.get("/api/v1/namespaces/default/pods", params=params).json()["items"]
                    return {p["metadata"]["name"] for p in items}
                harness.wait_for(lambda: names() == names(limit="1000"), timeout=15,
                                 message="the watch cache to agree with etcd")
                assert set(acknowledged) | {"after"} <= names(limit="1000")
                for name in acknowledged:
                    got = api.get(f"/api/v1/namespaces/default/pods/{name}")
                    assert got.status_code == 200 and got.json()["metadata"]["name"] == name
        finally:
            if api_server is not None:
                api_server.process.stop()
            etcd.stop()
