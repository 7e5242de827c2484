"""RequestInfo: what a method and a path ask for, read as kube-apiserver's RequestInfoFactory reads them."""

from __future__ import annotations

import pytest

from apiserver.endpoints.requestinfo import RequestInfo, request_info


def info(verb: str, group: str = "", version: str = "v1", namespace: str = "", resource: str = "",
         subresource: str = "", name: str = "") -> tuple[str, str, str, str, str, str, str]:
    return verb, group, version, namespace, resource, subresource, name


def key(r: RequestInfo) -> tuple[str, str, str, str, str, str, str]:
    return r.verb, r.api_group, r.api_version, r.namespace, r.resource, r.subresource, r.name


@pytest.mark.parametrize(("method", "path", "query", "expected"), [
    pytest.param("GET", "/api/v1/namespaces/default/pods", {}, info("list", namespace="default", resource="pods"),
                 id="list"),
    pytest.param("GET", "/api/v1/namespaces/default/pods", {"watch": "true"},
                 info("watch", namespace="default", resource="pods"), id="watch-param"),
    pytest.param("GET", "/api/v1/watch/namespaces/default/pods/web", {},
                 info("watch", namespace="default", resource="pods", name="web"), id="watch-path"),
    pytest.param("GET", "/api/v1/namespaces/default/pods", {"fieldSelector": "metadata.name=web"},
                 info("list", namespace="default", resource="pods", name="web"), id="name-from-field-selector"),
    pytest.param("POST", "/apis/apps/v1/namespaces/x/deployments", {},
                 info("create", "apps", namespace="x", resource="deployments"), id="create"),
    pytest.param("DELETE", "/api/v1/namespaces/x/pods", {}, info("deletecollection", namespace="x", resource="pods"),
                 id="deletecollection"),
    pytest.param("PATCH", "/api/v1/nodes/n1/status", {}, info("patch", resource="nodes", subresource="status",
                                                              name="n1"), id="cluster-subresource"),
    pytest.param("POST", "/api/v1/namespaces/x/pods/web/exec", {},
                 info("create", namespace="x", resource="pods", subresource="exec", name="web"), id="exec"),
    pytest.param("GET", "/api/v1/namespaces/kube-system", {},
                 info("get", namespace="kube-system", resource="namespaces", name="kube-system"),
                 id="namespace-object-is-in-its-namespace"),
    pytest.param("PUT", "/api/v1/namespaces/x/finalize", {},
                 info("update", namespace="x", resource="namespaces", subresource="finalize", name="x"),
                 id="namespace-subresource"),
    pytest.param("GET", "/api/v1/namespaces/x/pods/web/proxy/some/path", {},
                 info("get", namespace="x", resource="pods", subresource="proxy", name="web"), id="proxy-path"),
    pytest.param("GET", "/api/v1/proxy/namespaces/x/pods/web/a", {},
                 info("proxy", namespace="x", resource="pods", name="web"), id="proxy-verb"),
])
def test_resource_requests(method: str, path: str, query: dict[str, str],
                           expected: tuple[str, ...]) -> None:
    r = request_info(method, path, query)
    assert r.is_resource_request
    assert key(r) == expected


@pytest.mark.parametrize(("method", "path", "verb"), [
    pytest.param("GET", "/healthz", "get", id="health"),
    pytest.param("GET", "/api", "get", id="legacy-discovery"),
    pytest.param("GET", "/api/v1", "get", id="group-version"),
    pytest.param("GET", "/apis/apps/v1", "get", id="named-group-version"),
    pytest.param("POST", "/openapi/v3", "post", id="method-is-the-verb"),
])
def test_non_resource_requests(method: str, path: str, verb: str) -> None:
    r = request_info(method, path)
    assert (r.is_resource_request, r.verb, r.path) == (False, verb, path)
