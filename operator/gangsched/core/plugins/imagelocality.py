"""ImageLocality (Score): prefer nodes that already have the pod's images.

As kube-scheduler's plugin (pkg/scheduler/framework/plugins/imagelocality): for each
init and regular container whose image (normalized: ``:latest`` added to a name without
a tag) the node has, the image's size scaled by the share of nodes that have it (so an
image every node has does not pull the pod anywhere); the sum is clamped between 23 MiB
and 1000 MiB per container and mapped onto 0..100. No normalization. A pod none of
whose images any node has scores 0 everywhere, and is skipped.
"""

from __future__ import annotations

from collections.abc import Sequence

from gangsched.core.framework import interface as fw
from gangsched.core.framework.nodeinfo import NodeState
from gangsched.core.framework.podinfo import PodInfo

NAME = "ImageLocality"
MB = 1024 * 1024
MIN_THRESHOLD = 23 * MB
MAX_CONTAINER_THRESHOLD = 1000 * MB


def priority(total: int, containers: int) -> int:
    """``calculatePriority``: ``total`` clamped to [23 MiB, 1000 MiB x containers], onto
    0..100 (integer division, as Go's)."""
    top = MAX_CONTAINER_THRESHOLD * containers
    total = min(max(total, MIN_THRESHOLD), top)
    return fw.MAX_NODE_SCORE * (total - MIN_THRESHOLD) // (top - MIN_THRESHOLD)


class ImageLocality:
    name = NAME

    def usage_only(self, pod: PodInfo, snapshot: fw.Snapshot) -> bool:
        """Skips a pod none of whose images any node has."""
        spread = snapshot.image_nodes
        return not any(image in spread for image in pod.placement.images)

    def pre_score(self, state: fw.CycleState, pod: PodInfo, snapshot: fw.Snapshot,
                  nodes: Sequence[NodeState]) -> fw.Status:
        if self.usage_only(pod, snapshot):
            return fw.SKIP
        state.write(NAME, (snapshot.image_nodes, len(snapshot.sorted_nodes())))
        return fw.SUCCESS

    def score(self, state: fw.CycleState, pod: PodInfo, node: NodeState) -> int:
        found = state.read(NAME)
        if not isinstance(found, tuple):
            return 0
        spread, total_nodes = found
        images = pod.placement.images
        have = node.node.images
        total = 0
        for image in images:
            size = have.get(image)
            if size is not None and total_nodes:
                # scaledImageScore: int64(float64(size) * numNodes / totalNodes)
                total += int(size * (spread.get(image, 0) / total_nodes))
        return priority(total, len(images))

    def normalize(self, state: fw.CycleState, pod: PodInfo, scores: list[int]) -> None:
        return None


def factory(args: object | None) -> ImageLocality:
    return ImageLocality()
