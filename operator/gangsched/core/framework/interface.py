"""The extension points of the scheduling framework, as in kube-scheduler.

A plugin is an object with a ``name`` that implements one or more of the protocols below;
the :class:`~gangsched.core.framework.runner.Framework` asks ``isinstance`` once, when a
profile is built, which points each enabled plugin serves.

* :class:`PreEnqueuePlugin` -- may the pod enter a scheduling cycle at all (gates)?
* :class:`PreFilterPlugin` -- computed once per pod and cycle, written into the
  :class:`CycleState`; may reject the pod outright, or return :data:`SKIP` so that its
  Filter is not run for this pod.
* :class:`FilterPlugin` -- a cheap per-node check. A plugin whose ``static`` is True
  depends only on the node and the pod's :class:`Constraints`: its verdicts are cached
  per constraint set until a node changes. Filters must be exact: a node a filter
  rejects is never returned, whatever sampling the scoring does. A filter that is also
  a :class:`BatchFilterPlugin` judges a run of nodes in one call (the same verdicts),
  and says what a node costs it, so that a scan runs the cheap filters first.
* :class:`ScorePlugin` -- ``pre_score`` (may :data:`SKIP`), ``score`` per feasible node
  (0..100 after ``normalize``), weighted by the profile. A scorer that is also a
  :class:`BatchScorePlugin` scores every node in one call (the same values, without a
  call per node: the hot path of placement).
* :class:`ReservePlugin` and :class:`PreBindPlugin` -- run once a node is chosen:
  ``reserve`` may still refuse (then every reserved plugin is ``unreserve``\\ d), and
  ``pre_bind`` may add decisions to the cycle state's ``decisions`` (they are emitted
  before the pod's Binding).

Plugins read the cluster through :class:`Snapshot` and nodes through
:class:`~gangsched.core.framework.nodeinfo.NodeState`; they never change them.
"""

from __future__ import annotations

import enum
from collections.abc import Callable, Mapping, Sequence
from collections.abc import Set as AbstractSet
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Protocol, runtime_checkable

from gangsched.core.framework.nodeinfo import NodeState
from gangsched.core.framework.podinfo import PodInfo

if TYPE_CHECKING:
    from gangsched.core.framework.podindex import PodIndex
    from gangsched.core.volumes.catalog import VolumeCatalog

MAX_NODE_SCORE = 100


class Code(enum.Enum):
    SUCCESS = "Success"
    UNSCHEDULABLE = "Unschedulable"
    UNRESOLVABLE = "UnschedulableAndUnresolvable"
    """No change to other pods can make the node fit (preemption would not help)."""
    SKIP = "Skip"
    ERROR = "Error"


@dataclass(frozen=True, slots=True)
class Status:
    """A plugin's verdict; ``reasons`` are the words users see, as kube-scheduler's."""

    code: Code = Code.SUCCESS
    reasons: tuple[str, ...] = ()
    plugin: str = ""
    ok: bool = field(init=False, repr=False, compare=False)
    """``code`` is SUCCESS (a plain attribute: it is read once per node and filter)."""

    def __post_init__(self) -> None:
        object.__setattr__(self, "ok", self.code is Code.SUCCESS)

    @property
    def rejected(self) -> bool:
        return self.code in (Code.UNSCHEDULABLE, Code.UNRESOLVABLE, Code.ERROR)


SUCCESS = Status()
SKIP = Status(Code.SKIP)


def unschedulable(*reasons: str) -> Status:
    return Status(Code.UNSCHEDULABLE, reasons)


def unresolvable(*reasons: str) -> Status:
    return Status(Code.UNRESOLVABLE, reasons)


class Rejections:
    """Unschedulable statuses by reason, made once each: a filter that rejects many nodes
    with one of a few reasons returns the same frozen value every time."""

    __slots__ = ("_made",)

    def __init__(self) -> None:
        self._made: dict[str, Status] = {}

    def __call__(self, reason: str) -> Status:
        found = self._made.get(reason)
        if found is None:
            if len(self._made) >= 256:
                self._made.clear()
            found = self._made[reason] = Status(Code.UNSCHEDULABLE, (reason,))
        return found


class CycleState:
    """What one pod's cycle carries between extension points (``CycleState``).

    ``data`` is keyed by plugin name; ``decisions`` collects what PreBind plugins ask for.
    """

    __slots__ = ("data", "decisions", "filters", "orders", "represented", "scan", "scorers",
                 "usage_keys", "usage_scorers")

    def __init__(self) -> None:
        self.data: dict[str, object] = {}
        self.decisions: list[object] = []
        self.filters: list[FilterPlugin] = []
        """The dynamic filters not skipped by their PreFilter, in profile order."""
        self.scan: list[ScanItem] = []
        """The same filters in the order a scan runs them (cheapest a node first), each
        with its batch form when it has one. Every filter must pass, so the nodes that
        pass them all are the same in any order; a diagnosis, which names the first
        filter a node fails, keeps the profile's order (:attr:`filters`)."""
        self.usage_scorers: frozenset[str] = frozenset()
        """The scorers not skipped whose scores follow from the nodes' usage keys alone
        for this pod (see :class:`UsageScorePlugin`): scored once per usage key."""
        self.scorers: list[tuple[ScorePlugin, int]] = []
        """The scorers not skipped by their PreScore, with their weights."""
        self.orders: Sequence[int] | None = None
        self.usage_keys: Sequence[str] | None = None
        """When the caller of PreScore and Score knows them (a bin-packing scan keeps
        them): the :attr:`~NodeState.order` and the usage key of each node to score, in
        the nodes' order, which is then ascending by order (plugins may look a node up
        by bisection); plugins may read per-node data from them instead of from each
        node. None: not known."""
        self.represented: int | None = None
        """When the nodes to score stand for a larger set of feasible nodes (one of each
        class, see :class:`ClassScorePlugin`): how many feasible nodes there are. None:
        the nodes to score are all of them."""

    def write(self, key: str, value: object) -> None:
        self.data[key] = value

    def read(self, key: str) -> object | None:
        return self.data.get(key)


class Snapshot(Protocol):
    """The cluster as plugins read it during a cycle."""

    @property
    def namespace_labels(self) -> Mapping[str, Mapping[str, str]]:
        """Labels of the namespaces observed, by name."""
        ...

    @property
    def pod_index(self) -> PodIndex: ...

    def sorted_nodes(self) -> Sequence[NodeState]:
        """Every node, by name."""
        ...

    def node_state(self, name: str) -> NodeState | None: ...

    @property
    def namespace_epoch(self) -> int:
        """Changes whenever a namespace's labels change, or a namespace comes or goes."""
        ...

    @property
    def node_epoch(self) -> int:
        """Changes whenever a node is added, removed, relabelled, tainted or cordoned."""
        ...

    @property
    def image_nodes(self) -> Mapping[str, int]:
        """How many nodes have each image, by name (see ``Node.images``)."""
        ...

    @property
    def volumes(self) -> VolumeCatalog:
        """PersistentVolumes, claims, classes, CSINodes, ResourceClaims, and the volume
        bindings assumed for placed pods."""
        ...


@runtime_checkable
class Plugin(Protocol):
    name: str


@runtime_checkable
class PreEnqueuePlugin(Plugin, Protocol):
    def pre_enqueue(self, pod: PodInfo) -> Status: ...


@runtime_checkable
class PreFilterPlugin(Plugin, Protocol):
    def pre_filter(self, state: CycleState, pod: PodInfo, snapshot: Snapshot) -> Status: ...


@runtime_checkable
class FilterPlugin(Plugin, Protocol):
    static: bool

    def filter(self, state: CycleState, pod: PodInfo, node: NodeState) -> Status: ...


BatchFilter = Callable[["CycleState", PodInfo, list[NodeState]], list[NodeState]]
ScanItem = tuple["FilterPlugin", BatchFilter | None]
"""A dynamic filter in a scan, with its batch form if it has one."""


@runtime_checkable
class BatchFilterPlugin(FilterPlugin, Protocol):
    scan_cost: int
    """What judging a node costs, relative to other filters (a label look-up 10, a
    look-up of the node's own usage 20, volume matching 90; a filter that is not a
    batch filter counts 50). A scan runs the filters cheapest first."""

    def filter_nodes(self, state: CycleState, pod: PodInfo,
                     nodes: list[NodeState]) -> list[NodeState]:
        """The nodes of ``nodes`` that :meth:`filter` passes, in their order: exactly
        those (``nodes`` itself when all pass). The list given is not changed."""
        ...


SCAN_COST = 50
"""The scan cost of a filter that is not a :class:`BatchFilterPlugin`."""


@runtime_checkable
class NodeLocalFilterPlugin(FilterPlugin, Protocol):
    node_local: bool
    """True: the verdict reads only the pod and the node's own usage and host ports,
    which change only as pods are charged or released there."""


NO_DIGEST: object = object()
"""A filter's verdict digest when its verdicts cannot be told by one: no scan is carried
over (see :class:`DomainFilterPlugin`)."""


@runtime_checkable
class DomainFilterPlugin(FilterPlugin, Protocol):
    """A filter whose verdicts follow from what PreFilter counted and each node's labels:
    a placement carried over from the last of the same shape judges again only the
    domains where the verdicts may differ."""

    def verdict_digest(self, state: CycleState, pod: PodInfo) -> object:
        """What this cycle's verdicts follow from, beside the node's labels (equal
        digests: equal verdicts on every node); :data:`NO_DIGEST` when they follow from
        more than a digest tells (then nothing is carried over)."""
        ...

    def changed_domains(self, old: object,
                        new: object) -> Mapping[str, AbstractSet[str]] | None:
        """The topology domains (label key -> values) whose nodes may be judged
        differently under digest ``new`` than under ``old``; None: any node."""
        ...

    def refused(self, state: CycleState, pod: PodInfo) -> tuple[str, AbstractSet[str]] | None:
        """A label key and values of it for which this filter refuses every node, as it
        refuses every node without the key; None: no such key to tell."""
        ...

    def label_verdict(self, state: CycleState,
                      pod: PodInfo) -> tuple[str, AbstractSet[str]] | None:
        """A label key and values of it such that this filter passes exactly the nodes
        that have the key with another value (whatever else a node holds); None: its
        verdicts follow from more."""
        ...


@runtime_checkable
class ScorePlugin(Plugin, Protocol):
    def pre_score(self, state: CycleState, pod: PodInfo, snapshot: Snapshot,
                  nodes: Sequence[NodeState]) -> Status: ...

    def score(self, state: CycleState, pod: PodInfo, node: NodeState) -> int: ...

    def normalize(self, state: CycleState, pod: PodInfo, scores: list[int]) -> None:
        """Bring ``scores`` (one per node scored, in order) into 0..100, in place."""
        ...


@runtime_checkable
class UsageScorePlugin(ScorePlugin, Protocol):
    def usage_only(self, pod: PodInfo, snapshot: Snapshot) -> bool:
        """Before the feasible nodes are known: will this plugin either skip ``pod`` at
        PreScore, or score every node from what :attr:`NodeState.usage_key` holds
        (allocatable and what is requested there) alone, with a normalization that
        gives equal scores to equal raw scores? Then nodes of equal usage keys score
        alike, and placement scores one of each. False is always safe."""
        ...


@runtime_checkable
class ClassScorePlugin(ScorePlugin, Protocol):
    def score_classes(self, state: CycleState, pod: PodInfo,
                      snapshot: Snapshot) -> tuple[str | None, list[int]] | None:
        """Before PreScore: when this plugin scores alike every two feasible nodes of
        equal usage keys and equal values of one label key (None: no label), but for
        a few nodes known by their orders (ascending), that key and those orders;
        None when it cannot tell. Its PreScore and Score must then give the same scores
        to one node of each class and those few nodes, told by
        :attr:`CycleState.represented` how many feasible nodes they stand for, as to
        every feasible node; the minimum and maximum of its raw scores are those of
        such a subset. None is always safe."""
        ...


@runtime_checkable
class BatchScorePlugin(ScorePlugin, Protocol):
    def score_nodes(self, state: CycleState, pod: PodInfo,
                    nodes: Sequence[NodeState]) -> list[int]:
        """``score`` of each of ``nodes``, in order: exactly the values ``score`` gives."""
        ...


@runtime_checkable
class NormalizedScorePlugin(ScorePlugin, Protocol):
    def score_normalized(self, state: CycleState, pod: PodInfo,
                         nodes: Sequence[NodeState], weight: int = 1) -> list[int]:
        """``score`` of each of ``nodes``, then normalized, then times ``weight``, in one
        call: exactly the values the three give."""
        ...


@runtime_checkable
class ReservePlugin(Plugin, Protocol):
    def reserve(self, state: CycleState, pod: PodInfo, node: str) -> Status: ...

    def unreserve(self, state: CycleState, pod: PodInfo, node: str) -> None: ...


@runtime_checkable
class PreBindPlugin(Plugin, Protocol):
    def pre_bind(self, state: CycleState, pod: PodInfo, node: str) -> Status: ...


def default_normalize(scores: list[int], *, reverse: bool = False) -> None:
    """kube-scheduler's ``DefaultNormalizeScore``: scale to 0..100 by the maximum;
    ``reverse`` gives 100 minus that. All zeros stay zeros (or all 100 reversed)."""
    top = max(scores, default=0)
    if top == 0:
        if reverse:
            scores[:] = [MAX_NODE_SCORE] * len(scores)
        return
    for i, value in enumerate(scores):
        scaled = MAX_NODE_SCORE * value // top
        scores[i] = MAX_NODE_SCORE - scaled if reverse else scaled
