"""The APIServer's connect subresources: proxying exec, attach, port-forward and proxy to kubelets.

kube-apiserver does not run commands or forward ports itself: for
``pods/{name}/exec``, ``attach`` and ``portforward`` it validates the request
(the Pod exists, the container is one of its containers, the Pod has a node),
finds the node's kubelet (the Node's ``InternalIP`` and
``daemonEndpoints.kubeletEndpoint.Port``) and relays the upgraded connection
to it byte for byte, whatever the protocol (SPDY/3.1 or WebSocket) — the
kubelet speaks them. kubesim does the same:

- :mod:`apiserver.proxy.location`: kube-apiserver's ``ExecLocation``,
  ``AttachLocation``, ``PortForwardLocation`` (``pkg/registry/core/pod/strategy.go``)
  and the kubelet's connection info, with their error messages;
- :mod:`apiserver.proxy.upgradeaware`: apimachinery's ``UpgradeAwareHandler``:
  dial the backend, send the rewritten request head, relay a ``101`` and then
  both directions until both end, or relay the backend's refusal as it is;
- :mod:`apiserver.proxy.connect`: the HTTP server's handoff for upgrade
  requests (ASGI cannot carry a SPDY upgrade): it claims the paths whose
  subresource handler is an upgrade connecter, takes their raw connection and
  sends the request through the whole application (every filter) with it;
- :mod:`apiserver.proxy.hijack`: that connection as the handler gets it, to
  relay once its checks pass (Go's hijacked ``ResponseWriter``);
- :mod:`apiserver.proxy.podproxy` and :mod:`apiserver.proxy.relay`: the HTTP
  ``proxy`` subresources, to a Pod's port through its kubelet or to a
  backend URL.

The subresource handler objects themselves (which request goes where) are in
:mod:`apiserver.registry.core.connect`.
"""
