"""Authorization: may this user do this? (``--authorization-mode=Node,RBAC``, as kube-apiserver).

- :mod:`.authorizer`: attributes, decisions, and the authorizers that compose;
- :mod:`.rules`: RBAC rule matching and the escalation check's ``Covers``;
- :mod:`.rbac`: the RBAC authorizer over the watch caches;
- :mod:`.node`: the Node authorizer;
- :mod:`.filter`: the ASGI filter that refuses with 403.

:func:`build` makes the APIServer's authorizer from ``--authorization-mode``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Final

from apiserver.authorization.authorizer import (
    ALLOW,
    DENY,
    NO_OPINION,
    AlwaysAllow,
    AlwaysDeny,
    Attributes,
    Authorizer,
    Decision,
    PrivilegedGroups,
    Rules,
    Union,
)
from apiserver.authorization.node import NodeAuthorizer
from apiserver.authorization.rbac import RBAC

if TYPE_CHECKING:
    from apiserver.watchcache import WatchCache
    from machinery.api.kinds import ResourceInfo

MODES: Final = ("Node", "RBAC", "AlwaysAllow", "AlwaysDeny")

__all__ = ["ALLOW", "DENY", "MODES", "NO_OPINION", "Attributes", "Authorizer", "Decision", "Rules", "Union",
           "build"]


def build(modes: tuple[str, ...], cache_of: Callable[[ResourceInfo[Any]], WatchCache | None], *,
          rbac: RBAC | None = None) -> Union:
    """``system:masters`` first, then each mode in order; unknown modes are refused.

    ``rbac`` is the RBAC authorizer to use (the APIServer shares its rule resolver with the escalation checks).
    """
    authorizers: list[Authorizer] = [PrivilegedGroups()]
    for mode in modes:
        if mode == "Node":
            authorizers.append(NodeAuthorizer(cache_of))
        elif mode == "RBAC":
            authorizers.append(rbac or RBAC(cache_of))
        elif mode == "AlwaysAllow":
            authorizers.append(AlwaysAllow())
        elif mode == "AlwaysDeny":
            authorizers.append(AlwaysDeny())
        else:
            raise ValueError(f'authorization-mode "{mode}" is not a valid mode (valid: {", ".join(MODES)})')
    return Union(authorizers)
