"""The kubelet's streaming server: exec, attach and port-forward after an HTTP upgrade.

:mod:`kubelet_sim.streaming.remotecommand` (exec, attach) and
:mod:`kubelet_sim.streaming.portforward` speak the protocols of
:mod:`machinery.httpstream` and hand the runtime plain streams
(:mod:`kubelet_sim.streaming.session`), as ``pkg/kubelet/cri/streaming`` does.
"""
