"""The web page in Firefox too: Debian's firefox-esr, headless, driven through Marionette.

Playwright drives only its own patched Firefox, so this test uses Mozilla's
Marionette client (the ``marionette-driver`` package) on the Firefox ESR that
``.ci/run`` installs; without /usr/bin/firefox-esr it is skipped, saying so.
The Chromium tests (``test_ui.py``) cover the page in depth; this one checks
that the same page works in the other engine: it loads, shows the nodes live,
a new Pod appears Running, and a Pod's 13 steps render.
"""

from __future__ import annotations

import subprocess
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from kubesim import procs
from tests import harness
from tests.e2e.test_ui import health_url, start_ui
from tests.kubectl import Kubectl

pytestmark = [
    pytest.mark.e2e,
    # Marionette's client leaves the sockets of its start-up polling to the garbage collector.
    pytest.mark.filterwarnings("ignore::pytest.PytestUnraisableExceptionWarning"),
]

FIREFOX = "/usr/bin/firefox-esr"
if not Path(FIREFOX).exists():
    pytest.skip("Debian's firefox-esr is not installed here (.ci/run installs it)", allow_module_level=True)

from marionette_driver.marionette import Marionette

_PREFS = {
    "browser.shell.checkDefaultBrowser": "false", "datareporting.policy.dataSubmissionEnabled": "false",
    "network.captive-portal-service.enabled": "false", "app.update.enabled": "false",
    "browser.startup.homepage_override.mstone": '"ignore"', "toolkit.telemetry.enabled": "false",
}


@pytest.fixture(scope="module")
def firefox() -> Iterator[Marionette]:
    port = procs.free_port()
    with tempfile.TemporaryDirectory(prefix="kubesim-firefox-") as profile:
        prefs = {**_PREFS, "marionette.port": str(port)}
        Path(profile, "user.js").write_text("".join(f'user_pref("{k}", {v});\n' for k, v in prefs.items()))
        proc = subprocess.Popen([FIREFOX, "--marionette", "--headless", "--no-remote", "-profile", profile],
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
        try:
            client = Marionette(host=procs.LOOPBACK, port=port, startup_timeout=60)
            client.start_session()
            client.set_window_rect(width=1400, height=900)
            yield client
            client.delete_session()
        finally:
            proc.terminate()
            try:
                proc.wait(15)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait(5)


@pytest.fixture(scope="module")
def ui(cluster: harness.Cluster) -> Iterator[str]:
    proc, url = start_ui(cluster.kubeconfig(), cluster.workdir,
                         scheduler_url=health_url(cluster, "scheduler"))
    try:
        yield url
    finally:
        proc.stop()


def until(firefox: Marionette, script: str, *, timeout: float = 10.0, message: str) -> Any:
    """Run ``script`` (a function body returning a value) until it returns something truthy."""
    deadline = time.monotonic() + timeout
    value: Any = None
    while time.monotonic() < deadline:
        value = firefox.execute_script(script)
        if value:
            return value
        time.sleep(0.2)
    raise AssertionError(f"timed out after {timeout}s waiting for {message} (last value: {value!r})")


def test_the_page_works_in_firefox(firefox: Marionette, ui: str, kubectl: Kubectl, namespace: str) -> None:
    firefox.navigate(ui)
    until(firefox, "return document.querySelectorAll('article.node .badge.Ready').length === 3",
          message="three Ready nodes")
    assert until(firefox, "return document.getElementById('connection').textContent", message="the pill") == "live"
    kubectl.apply({"apiVersion": "v1", "kind": "ReplicationController", "metadata": {"name": "fox"},
                   "spec": {"replicas": 1, "selector": {"app": "fox"},
                            "template": {"metadata": {"labels": {"app": "fox"}},
                                         "spec": {"containers": [{"name": "c", "image": "nginx:1.25"}]}}}})
    chip = f"document.querySelector('.nodes .chip.Running[aria-label^=\"Pod {namespace}/fox-\"]')"
    until(firefox, f"return {chip}", timeout=10, message="the Pod Running")
    firefox.execute_script(f"{chip}.click()")
    rows = until(firefox, "const r = document.querySelectorAll('table.steps tbody tr'); "
                          "return r.length === 15 ? r[14].textContent : null", timeout=20, message="the 13 steps")
    assert "stored the Running status" in rows
