"""What a Service is given from finite pools: ClusterIPs and NodePorts, allocated in etcd.

As in kube-apiserver (``pkg/registry/core/service``), each pool is a bitmap
kept in one etcd key (a ``RangeAllocation``: ``/registry/ranges/serviceips``,
``/registry/ranges/servicenodeports``) and changed by guarded writes, so that
every APIServer sharing the etcd cluster agrees and a restart keeps what was
given out:

- :mod:`.allocator`: the bitmap (random choice, preferring the upper band of
  the range and keeping the lower one for addresses users ask for) and its
  compare-and-swap storage;
- :mod:`.ipallocator` and :mod:`.portallocator`: a CIDR or a port range over it;
- :mod:`.alloc`: what a Service create, update or delete allocates and
  releases, with IP families and policies inferred as Kubernetes infers them;
- :mod:`.repair`: the periodic pass that re-marks what Services hold and
  frees what no Service holds any more (kube-apiserver's repair controllers).
"""
