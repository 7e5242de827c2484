"""A property-based fuzzer over every operation the APIServer's OpenAPI v3 documents describe.

schemathesis (from PyPI) reads the served ``/openapi/v3`` documents, so the
campaign grows with every kind the API serves, and generates requests for
each operation (paths, query parameters, bodies, valid and not) with a fixed
seed, so a run is reproducible. Each request goes to a whole cluster of its
own (the fuzzer deletes and mangles what it finds), and for each answer:

- nothing is >= 500 (etcd is up the whole time, so not even 503 or 504);
- every error (>= 400) is a ``Status`` whose ``code`` is the HTTP status;
- every request is answered within its deadline (no hang).

Afterwards the cluster still schedules and runs a Pod, once the default RBAC
roles and bindings the fuzzer (the admin) deleted are created again, as an
admin would. The run prints its figures (requests, answers >= 500,
non-Status errors, hangs).

``make test`` sends about :data:`BUDGET` requests in all, spread evenly over the
operations (at least :data:`MIN_EXAMPLES` each): with every kind of Kubernetes
1.32 served there are about 600 operations, so a fixed count per operation would
outgrow the suite's time. ``KUBESIM_FUZZ_EXAMPLES`` sets the examples per
operation instead, for a long campaign (``make chaos`` sets 200).
"""

from __future__ import annotations

import collections
import os
import time
import uuid
from collections.abc import Iterator
from typing import Any

import hypothesis
import orjson
import pytest
import requests
import schemathesis
from hypothesis import HealthCheck, Phase

from apiserver.registry.generic import NotServedREST
from apiserver.registry.groups import builtin_resources
from apiserver.registry.rbac import bootstrap
from tests import harness
from tests.e2e.conftest import _node_profile, _start, _wait_nodes_usable

pytestmark = [pytest.mark.e2e, pytest.mark.slow]

#: Examples per operation when set (``make chaos``); else the budget below is spread over the operations.
EXAMPLES = int(os.environ.get("KUBESIM_FUZZ_EXAMPLES", "0"))
BUDGET = 3000
MIN_EXAMPLES = 3
SEED = 16
#: Seconds a request may take before it counts as a hang (for a watch: until its headers).
DEADLINE = 15.0
MIN_REQUEST_TIMEOUT = 1
#: Subresources the registry declares not served yet (``NotServedREST``): their 501 NotImplemented Status is
#: the answer they promise, counted apart; any other answer >= 500 fails the test.
NOT_SERVED = frozenset(f"/{r.info.plural}/{name}" for r in builtin_resources()
                       for name, sub in r.subresources.items() if isinstance(sub, NotServedREST))


@pytest.fixture(scope="module")
def fuzz_cluster() -> Iterator[harness.Cluster]:
    with harness.cluster(apiserver_args=[f"--min-request-timeout={MIN_REQUEST_TIMEOUT}"]) as c:
        _start(c, "controller_manager", "controller-manager", "--node-monitor-period=1s",
               "--node-monitor-grace-period=6s")
        _start(c, "scheduler", "scheduler")
        _start(c, "kubelet_sim", "kubelet", "--node-profile", str(_node_profile(c.workdir / "nodes.yaml")),
               "--node-lease-renew-interval", "1s")
        with c.client(timeout=30) as api:
            _wait_nodes_usable(api)
        yield c


def _not_served(path: str) -> bool:
    """Whether ``path`` is a subresource the registry declares not served yet (``.../pods/x/exec``...)."""
    parts = path.rstrip("/").split("/")
    return len(parts) >= 3 and f"/{parts[-3]}/{parts[-1]}" in NOT_SERVED


class Tally:
    def __init__(self) -> None:
        self.requests = 0
        self.server_errors: list[str] = []
        self.not_served: list[str] = []
        self.non_status: list[str] = []
        self.hangs: list[str] = []
        self.codes: collections.Counter[int] = collections.Counter()

    def check(self, case: Any, response: requests.Response | None, what: str) -> None:
        self.requests += 1
        if response is None:
            self.hangs.append(what)
            return
        code = response.status_code
        self.codes[code] += 1
        if code == 501 and _not_served(case.formatted_path) and b'"NotImplemented"' in response.content:
            self.not_served.append(what)
        elif code >= 500:
            self.server_errors.append(f"{what} -> {code} {response.text[:200]}")
        if code >= 400 and case.method.upper() != "HEAD":
            try:
                body = orjson.loads(response.content)
            except orjson.JSONDecodeError:
                body = None
            if not (isinstance(body, dict) and body.get("kind") == "Status" and body.get("code") == code):
                self.non_status.append(f"{what} -> {code} {response.text[:200]}")


def _restore_default_rbac(api: Any) -> list[str]:
    """Create the default roles and bindings that are missing, as an admin would (``kubectl auth reconcile``).

    The fuzzer is the admin, and its ``deletecollection`` of ClusterRoles and ClusterRoleBindings deletes
    them all. In Kubernetes as here every component then loses its permissions (the scheduler cannot list
    Pods) until the defaults come back, which kube-apiserver does only at its next start. That is the API
    doing what it was asked, not the fuzzing breaking the server: the check below is about the server.
    """
    restored = []
    for info, wanted, _reconcile in bootstrap.defaults():
        meta = wanted["metadata"]
        collection = (f"{info.api_prefix}/namespaces/{meta['namespace']}/{info.plural}" if info.namespaced
                      else f"{info.api_prefix}/{info.plural}")
        if api.get(f"{collection}/{meta['name']}").status_code == 404:
            response = api.post(collection, json=wanted)
            assert response.status_code == 201, response.text
            restored.append(f"{info.kind} {meta['name']}")
    return restored


def _is_watch(case: Any) -> bool:
    value = str((case.query or {}).get("watch", "")).lower()
    return "/watch/" in case.formatted_path or value not in ("", "false", "0")


def _schemas(url: str) -> list[Any]:
    with harness.admin_client(url, timeout=30) as api:
        index = api.get("/openapi/v3").json()["paths"]
        docs = [api.get(ref["serverRelativeURL"]).json() for ref in index.values()]
    schemas = []
    for doc in docs:
        schema = schemathesis.openapi.from_dict(doc)
        schema.config.update(base_url=url)
        schemas.append(schema)
    return schemas


@pytest.mark.timeout(1800)
def test_every_served_operation_answers_every_generated_request_with_a_status(
        fuzz_cluster: harness.Cluster) -> None:
    tally = Tally()
    operations = [result.ok() for schema in _schemas(fuzz_cluster.url) for result in schema.get_all_operations()]
    assert len(operations) >= 500, "the OpenAPI documents should describe every operation served"
    examples = EXAMPLES or max(MIN_EXAMPLES, BUDGET // len(operations))
    session = requests.Session()
    # As the admin: every generated request is authorized, and what is fuzzed is the API behind.
    ca, cert, key = harness.admin_files()
    session.verify, session.cert = ca, (cert, key)
    started = time.monotonic()
    for operation in operations:
        @hypothesis.seed(SEED)
        @hypothesis.settings(max_examples=examples, deadline=None, database=None, phases=[Phase.generate],
                             suppress_health_check=list(HealthCheck), derandomize=False)
        @hypothesis.given(case=operation.as_strategy())
        def run(case: Any) -> None:
            what = f"{case.method.upper()} {case.formatted_path} query={case.query!r}"
            kwargs = case.as_transport_kwargs(base_url=fuzz_cluster.url)
            # The CA and the admin's certificate on each request: a per-request setting (or
            # $REQUESTS_CA_BUNDLE) would otherwise win over the session's.
            kwargs.update(verify=ca, cert=(cert, key))
            try:
                response = session.request(**kwargs, timeout=DEADLINE, stream=True)
                try:
                    if response.status_code == 200 and _is_watch(case):
                        # A watch streams until its window ends: its status line and headers are its answer.
                        pass
                    else:
                        response.content  # noqa: B018 - read it all, within the deadline
                finally:
                    response.close()
            except requests.Timeout:
                response = None
            tally.check(case, response, what)
        run()
    elapsed = time.monotonic() - started
    print(f"\nfuzz (schemathesis, seed {SEED}, {examples} examples per operation): {len(operations)} operations, "
          f"{tally.requests} requests in {elapsed:.0f}s; answers >= 500: {len(tally.server_errors)} "
          f"(and {len(tally.not_served)} 501s of subresources not served yet: {sorted(NOT_SERVED)}); "
          f"non-Status errors: {len(tally.non_status)}; hangs: {len(tally.hangs)}; "
          f"codes {dict(sorted(tally.codes.items()))}")
    assert not tally.server_errors, tally.server_errors[:10]
    assert not tally.non_status, tally.non_status[:10]
    assert not tally.hangs, tally.hangs[:10]

    # The cluster still works: a Pod is scheduled and runs.
    with fuzz_cluster.client(timeout=30) as api:
        restored = _restore_default_rbac(api)
        print(f"default roles and bindings the fuzzing deleted, created again: {len(restored)}")
        namespace = f"after-fuzz-{uuid.uuid4().hex[:6]}"
        assert api.post("/api/v1/namespaces", json={"metadata": {"name": namespace}}).status_code == 201
        created = time.monotonic()
        r = api.post(f"/api/v1/namespaces/{namespace}/pods", json={
            "metadata": {"name": "alive"}, "spec": {"containers": [{"name": "c", "image": "nginx"}]}})
        assert r.status_code == 201, r.text

        def running() -> bool:
            pod = api.get(f"/api/v1/namespaces/{namespace}/pods/alive").json()
            return pod.get("status", {}).get("phase") == "Running"
        # A component refused a list retries after its backoff (client-go's: up to 30 s, with as much jitter).
        harness.wait_for(running, timeout=90 if restored else 30, message="a Pod to run after the fuzzing")
        print(f"after fuzzing, a new Pod ran {time.monotonic() - created:.1f}s after its creation")
