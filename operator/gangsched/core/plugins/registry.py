"""The plugins gangsched knows, by kube-scheduler name, and the default profile.

This is the only module that imports the plugins; the framework receives ``REGISTRY``
and ``DEFAULT_PLUGINS`` from whoever builds it. To add a plugin, see
:mod:`gangsched.core.framework`.

``DEFAULT_PLUGINS`` is kube-scheduler v1.32's default ``multiPoint`` set, in its order
and with its score weights, restricted to the plugins implemented here; ``NodeReady``
is gangsched's own (see its module). DynamicResources is in the set, as in clusters that
enable the DynamicResourceAllocation feature: a pod with resource claims is never bound
blindly (see its module).
"""

from __future__ import annotations

from collections.abc import Mapping

from gangsched.core.framework.runner import Factory
from gangsched.core.plugins import (
    balancedallocation,
    dynamicresources,
    imagelocality,
    interpodaffinity,
    nodeaffinity,
    nodename,
    nodeports,
    nodeready,
    noderesources,
    nodeunschedulable,
    nodevolumelimits,
    podtopologyspread,
    schedulinggates,
    tainttoleration,
    volumebinding,
    volumerestrictions,
    volumezone,
)

REGISTRY: Mapping[str, Factory] = {
    schedulinggates.NAME: schedulinggates.factory,
    nodeready.NAME: nodeready.factory,
    nodeunschedulable.NAME: nodeunschedulable.factory,
    nodename.NAME: nodename.factory,
    tainttoleration.NAME: tainttoleration.factory,
    nodeaffinity.NAME: nodeaffinity.factory,
    nodeports.NAME: nodeports.factory,
    noderesources.NAME: noderesources.factory,
    volumerestrictions.NAME: volumerestrictions.factory,
    nodevolumelimits.NAME: nodevolumelimits.factory,
    volumebinding.NAME: volumebinding.factory,
    volumezone.NAME: volumezone.factory,
    dynamicresources.NAME: dynamicresources.factory,
    podtopologyspread.NAME: podtopologyspread.factory,
    interpodaffinity.NAME: interpodaffinity.factory,
    balancedallocation.NAME: balancedallocation.factory,
    imagelocality.NAME: imagelocality.factory,
}

DEFAULT_PLUGINS: tuple[tuple[str, int], ...] = (
    (schedulinggates.NAME, 0),
    (nodeready.NAME, 0),
    (nodeunschedulable.NAME, 0),
    (nodename.NAME, 0),
    (tainttoleration.NAME, 3),
    (nodeaffinity.NAME, 2),
    (nodeports.NAME, 0),
    (noderesources.NAME, 1),
    (volumerestrictions.NAME, 0),
    (nodevolumelimits.NAME, 0),
    (volumebinding.NAME, 0),
    (volumezone.NAME, 0),
    (dynamicresources.NAME, 0),
    (podtopologyspread.NAME, 2),
    (interpodaffinity.NAME, 2),
    (balancedallocation.NAME, 1),
    (imagelocality.NAME, 1),
)
