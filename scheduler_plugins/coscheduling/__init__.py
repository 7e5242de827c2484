"""Coscheduling: gang scheduling with the PodGroup custom resource (``--plugin-module scheduler_plugins.coscheduling``).

See :mod:`.plugin` for the extension points and the profile, :mod:`.manager`
for the rules, :mod:`.podgroup` for the custom resource (``crd.yaml``).
"""

from scheduler_plugins.coscheduling.plugin import NAME, Coscheduling, new
from scheduler_plugins.coscheduling.podgroup import POD_GROUP_LABEL, PODGROUPS, PodGroup, crd_manifest

PLUGINS = {NAME: new}

__all__ = ["NAME", "PLUGINS", "PODGROUPS", "POD_GROUP_LABEL", "Coscheduling", "PodGroup", "crd_manifest", "new"]
