"""Take the README's screenshots of the web page: ``make screenshots`` runs this.

Starts a throwaway ``kubesim up`` cluster on free ports, creates what the
walkthrough creates (a ReplicationController of 5, a Pod that cannot be
scheduled), and photographs, in headless Chromium, the cluster view and one
Pod's flow and scheduling decision, into ``docs/ui/``, with the page's version
in ``docs/ui/VERSION`` (a test checks it matches the page's).
"""

from __future__ import annotations

import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx
from playwright.sync_api import sync_playwright

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from kubesim import procs
from kubesim.ui.server import UI_VERSION
from machinery.client.config import load_kubeconfig

OUT = ROOT / "docs" / "ui"
RC = {"apiVersion": "v1", "kind": "ReplicationController", "metadata": {"name": "web"},
      "spec": {"replicas": 5, "selector": {"app": "web"},
               "template": {"metadata": {"labels": {"app": "web"}},
                            "spec": {"containers": [{"name": "nginx", "image": "nginx:1.25", "resources": {
                                "requests": {"cpu": "500m", "memory": "512Mi"}}}]}}}}
STUCK = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "needs-gpu"},
         "spec": {"nodeSelector": {"gpu": "true"}, "containers": [{"name": "app", "image": "nginx:1.25"}]}}


def main() -> int:
    OUT.mkdir(parents=True, exist_ok=True)
    api_port, etcd_port, ui_port = procs.free_port(), procs.free_port(), procs.free_port()
    with tempfile.TemporaryDirectory(prefix="kubesim-shots-") as data:
        up = subprocess.Popen([sys.executable, "-m", "kubesim", "up", f"--port={api_port}", f"--etcd-port={etcd_port}",
                               f"--ui-port={ui_port}", f"--data-dir={data}", "--quiet"], cwd=ROOT)
        try:
            ui = f"http://{procs.LOOPBACK}:{ui_port}"
            deadline = time.monotonic() + 90
            while not procs.http_ok(ui + "/readyz") and time.monotonic() < deadline:
                time.sleep(0.5)
            # As the admin of the kubeconfig kubesim up wrote (HTTPS, its CA and client certificate).
            with httpx.Client(**load_kubeconfig(Path(data) / "kubeconfig").httpx_options(), timeout=30) as client:
                client.post("/api/v1/namespaces/default/replicationcontrollers", json=RC).raise_for_status()
                client.post("/api/v1/namespaces/default/pods", json=STUCK).raise_for_status()
                while time.monotonic() < deadline:
                    pods = client.get("/api/v1/namespaces/default/pods", params={"labelSelector": "app=web"}).json()
                    if sum(p["status"].get("phase") == "Running" for p in pods["items"]) == 5:
                        break
                    time.sleep(0.5)
                first = min(p["metadata"]["name"] for p in pods["items"])
            with sync_playwright() as p:
                browser = p.chromium.launch(executable_path="/usr/bin/chromium", args=[
                    "--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update",
                    "--disable-sync", "--no-first-run"])
                page = browser.new_page(viewport={"width": 1400, "height": 820})
                page.goto(ui)
                page.wait_for_selector(".chip.Running")
                page.wait_for_timeout(1500)
                page.screenshot(path=str(OUT / "cluster.png"))
                page.locator(f'.chip[aria-label="Pod default/{first}, Running"]').click()
                page.wait_for_selector("table.steps tbody tr:nth-child(15)", timeout=20000)
                page.get_by_role("tab", name="Scheduling").click()
                page.wait_for_selector("table[aria-label='Scores']")
                page.wait_for_timeout(500)
                page.screenshot(path=str(OUT / "pod.png"))
                browser.close()
        finally:
            up.terminate()
            up.wait(30)
    (OUT / "VERSION").write_text(UI_VERSION + "\n")
    print(f"wrote {OUT / 'cluster.png'} and {OUT / 'pod.png'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
