"""Nodes, their usage, and placement: running the scheduling profile over the nodes.

The nodes and their usage are kept by :class:`~gangsched.core.placement.node_book.NodeBook`,
which :class:`Cluster` extends with placement. Usage counts every pod that holds capacity
on a node, ours or another scheduler's, placeholders included, and pods assumed by the
core but not yet confirmed bound. Every such pod is also in the
:class:`~gangsched.core.framework.podindex.PodIndex` (labels, affinity terms) and its host
ports on its node, so that the neighbour-dependent plugins count from indexes.

Placement runs the profile (:mod:`gangsched.core.framework`, plugins from
:mod:`gangsched.core.plugins.registry`) in stages:

1. PreEnqueue (a gated pod is never placed) and PreFilter (per-pod state, once);
2. *static* filters (those that depend only on the node and the pod's
   :class:`Constraints`: readiness, ``unschedulable``, node name, nodeSelector and
   required node affinity, NoSchedule/NoExecute taints). Their result is cached per
   ``Constraints`` value and dropped only when a node is added, removed, or changes
   labels, taints, readiness or schedulability;
3. *dynamic* filters (capacity, host ports, pod (anti-)affinity, topology spread) on
   the static candidates, a run at a time (:mod:`~gangsched.core.placement.scan`) and
   carried over from the last pod of the same shape
   (:mod:`~gangsched.core.placement.carried`): binpack scans from the front of the
   (name-sorted) candidates, skipping a prefix known to be too full for this request
   shape (the *watermark*, valid until some capacity is released; a watermark past
   every candidate fails the pod before its PreFilter runs, as the capacity check
   alone would); spread rotates its starting point. The scan stops once it has found
   as many feasible nodes as kube-scheduler's ``numFeasibleNodesToFind`` would
   (:func:`feasible_nodes_to_find`: every node of a cluster under 100 nodes, an
   adaptive share of a larger one unless ``percentageOfNodesToScore`` is set); every
   filter is exact, only the choice among feasible nodes is sampled;
4. Score plugins over the feasible nodes found, normalized and weighted; ties go to
   scan order, where kube-scheduler draws at random (see :func:`select_host`). Nodes
   that would score alike are scored once, by their first in scan order: of equal usage
   keys when only the resource scorers score, and of equal usage keys and values of one
   label when PodTopologySpread adds its scores (its hostnames holding matching pods
   scored one by one; ``Framework.score_classes``);
5. Reserve and PreBind plugins (none in the default registry) on the chosen node: a
   refusal fails the placement; PreBind's decisions are kept in ``pre_bound`` and the
   scheduler emits them just before the pod's Binding.

``Scoring`` maps to NodeResourcesFit's strategy (binpack: ``MostAllocated``, spread:
``LeastAllocated``) unless the profile sets a ``scoringStrategy`` itself; binpack with a
profile that configures no extension point also leaves out the
NodeResourcesBalancedAllocation score, which works against packing.

Nodes *reserved* for a starving gang (the ``reserve`` action, :mod:`~gangsched.core.actions.elect`)
take no new pod of anyone else: a placement names its ``owner`` (the key of its Application
or PodGroup), and the reserved nodes are skipped unless the owner is one they are held for.
A diagnosis counts the nodes that would fit but are reserved as ``Reserved``.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence

from gangsched.core.framework import interface as fw
from gangsched.core.framework.nodeinfo import NodeState
from gangsched.core.framework.podinfo import NO_CONSTRAINTS, Constraints, PodInfo
from gangsched.core.framework.runner import Factory, Framework
from gangsched.core.placement.carried import Carried
from gangsched.core.placement.diagnosis import (
    FIT_PLUGIN,
    FITS,
    RESERVED,
    Diagnosis,
    reserved_reason,
)
from gangsched.core.placement.domains import DomainIndex
from gangsched.core.placement.node_book import NodeBook
from gangsched.core.placement.sample import feasible_nodes_to_find, named_nodes
from gangsched.core.placement.scan import Found, RunJudge, scan
from gangsched.core.placement.tally import Judge, Room, Tally, copies
from gangsched.core.plugins import balancedallocation, noderesources, podtopologyspread
from gangsched.core.plugins.registry import DEFAULT_PLUGINS, REGISTRY
from gangsched.core.values.model import Node, Scoring
from gangsched.core.values.profile import DEFAULT_PROFILE, PluginSet, ProfileConfig
from gangsched.core.values.resources import PODS, Resources
from gangsched.core.volumes import claims as resource_claims

__all__ = ["NO_CONSTRAINTS", "ONE_POD", "Cluster", "Constraints", "Diagnosis", "NodeState",
           "PodInfo", "feasible_nodes_to_find", "static_failure"]

ONE_POD = Resources({PODS: 1})

_STATIC = Framework(REGISTRY, DEFAULT_PLUGINS)


def static_failure(node: Node, constraints: Constraints) -> str | None:
    """The name of the first default static filter ``node`` fails, or None."""
    status = _STATIC.static_filter(PodInfo(Resources.ZERO, constraints), NodeState(node))
    return None if status.ok else status.plugin


class Cluster(NodeBook):
    """All nodes with their usage (:class:`NodeBook`), and placement over them."""

    def __init__(self, percentage_of_nodes_to_score: int = 0,
                 profile: ProfileConfig = DEFAULT_PROFILE, *,
                 registry: Mapping[str, Factory] = REGISTRY,
                 default_plugins: tuple[tuple[str, int], ...] = DEFAULT_PLUGINS) -> None:
        """``profile`` is validated here: an invalid one raises ``ConstraintError``.
        ``percentage_of_nodes_to_score`` is kube-scheduler's setting of that name (0:
        its adaptive default; see :func:`feasible_nodes_to_find`).

        ``registry`` (plugin name -> factory) and ``default_plugins`` (names and weights of
        the default ``multiPoint`` set) are kube-scheduler's defaults unless given: the
        plugins are registered from outside the framework, and a test passes its own."""
        self.registry = registry
        self.default_plugins = default_plugins
        self.profile = profile
        self._frameworks: dict[Scoring, Framework] = {}
        for scoring in Scoring:
            self.framework(scoring)
        spread = self.framework(Scoring.BINPACK).plugin(podtopologyspread.NAME)
        self._defaults_filter = (isinstance(spread, podtopologyspread.PodTopologySpread)
                                 and spread.defaults_filter)
        """Does the profile's default spread filter the pods it applies to?"""
        self.percentage_of_nodes_to_score = min(100, max(
            0, profile.percentage_of_nodes_to_score or percentage_of_nodes_to_score))
        """kube-scheduler's ``percentageOfNodesToScore``: the profile's, else the one
        given; 0 for the adaptive default."""
        NodeBook.__init__(self)
        self.domains = DomainIndex()
        """Topology domains per label key and their free room (gang placement)."""
        self._carried = Carried(FIT_PLUGIN)
        """The last bin-packing scan of each pod shape (see :meth:`_binpack_scan`)."""

    @property
    def sample_size(self) -> int:
        """How many feasible nodes a placement finds before it scores them (see
        :func:`feasible_nodes_to_find`), at least 1."""
        return max(1, feasible_nodes_to_find(self.percentage_of_nodes_to_score,
                                             len(self.nodes)))

    def _sample_for(self, fwk: Framework, constraints: Constraints) -> int:
        """:attr:`sample_size` as kube-scheduler takes it for one pod: of the nodes
        NodeAffinity's PreFilter names, if it names some; one without a score plugin
        (see :mod:`~gangsched.core.placement.sample`)."""
        if not fwk.scorers:
            return 1
        named = named_nodes(constraints.affinity, self.nodes)
        if named is None:
            return self.sample_size
        return max(1, feasible_nodes_to_find(self.percentage_of_nodes_to_score, named))

    def retry_epoch(self, pod: PodInfo) -> int:
        """Changes when what may let ``pod`` fit changes: capacity freed, and for a pod
        whose fit depends on its neighbours, any pod placed or gone."""
        epoch = self.free_epoch
        if self.neighbour_bound(pod):
            epoch += self.pod_index.epoch
        if pod.volumes.any:
            epoch += self.volumes.epoch
        return epoch

    def neighbour_bound(self, pod: PodInfo) -> bool:
        """Can where other pods are change where ``pod`` fits? Its own affinity,
        anti-affinity, spread constraints or host ports; or the profile's default spread
        constraints, when they filter and the pod gets them (a ReplicaSet's pod with no
        constraints of its own)."""
        placement = pod.placement
        return placement.neighbour_bound or (
            self._defaults_filter and placement.default_spread and not placement.spread)

    def room_for(self, request: Resources, constraints: Constraints) -> int:
        """How many pods of ``request`` the nodes passing the static filters for
        ``constraints`` have free room for, each node counted on its own (no filters but
        capacity). Kept per shape as usage changes: O(nodes touched) per question."""
        asked = [(name, amount) for name, amount in request.items() if amount > 0]
        nodes = self.candidates(constraints)
        if not asked:
            return len(nodes) * len(nodes) + 1  # asks for nothing: never short
        key = (request, constraints)
        room = self._rooms.get(key)
        if room is not None and room.current(self._node_epoch, self._touches):
            room.update(self._touches, self.nodes.get, asked)
        else:
            if len(self._rooms) >= MAX_TALLIES:
                del self._rooms[next(iter(self._rooms))]  # the oldest
            room = self._rooms[key] = Room.full(self._node_epoch, self._touches, nodes, asked)
        return room.total

    def room_with(self, request: Resources, constraints: Constraints,
                  extra: Mapping[str, Resources], barred: Collection[str]) -> int:
        """:meth:`room_for` with ``extra`` more free on some nodes and the ``barred``
        nodes left out: the kept count, corrected on those nodes only."""
        total = self.room_for(request, constraints)
        room = self._rooms.get((request, constraints))
        if room is None:  # asks for nothing: never short
            return total
        asked = [(name, amount) for name, amount in request.items() if amount > 0]
        per_node = room.per_node
        for name in {*extra, *barred}:
            here = per_node.get(name)
            if here is None:
                continue  # not a node its constraints allow
            total -= here
            if name not in barred:
                total += copies(self.nodes[name].free, asked, extra[name])
        return total


    # --- placement -----------------------------------------------------------------------

    def framework(self, scoring: Scoring) -> Framework:
        """The profile's framework, NodeResourcesFit scoring by ``scoring`` unless the
        profile sets its own strategy."""
        found = self._frameworks.get(scoring)
        if found is None:
            config = self.profile
            if config.args_of(noderesources.NAME) is None:
                binpack = scoring is Scoring.BINPACK
                strategy = (noderesources.Strategy.MOST_ALLOCATED if binpack
                            else noderesources.Strategy.LEAST_ALLOCATED)
                fit = (noderesources.NAME, noderesources.FitArgs(strategy))
                points = config.points
                if binpack and not points:
                    # Balancing works against packing: binpack without a profile of its
                    # own scores as kube-scheduler's bin-packing setups do.
                    points = (("score", PluginSet(disabled=(balancedallocation.NAME,))),)
                config = ProfileConfig(config.multi_point, points, (*config.args, fit))
            found = self._frameworks[scoring] = Framework(self.registry, self.default_plugins,
                                                          config)
        return found

    def candidates(self, constraints: Constraints) -> list[NodeState]:
        """Nodes passing the static filters for ``constraints`` (cached)."""
        found = self._static.get(constraints)
        if found is None:
            fwk = self.framework(Scoring.BINPACK)
            probe = PodInfo(Resources.ZERO, constraints)
            found = [s for s in self.sorted_nodes() if fwk.static_filter(probe, s).ok]
            self._static[constraints] = found
        return found

    def _watermark(self, constraints: Constraints, request: Resources) -> int:
        """The first position among the candidates that may have room for ``request``:
        the last scan's first fit, lowered to any node that has had room given back
        since (the nodes before it had none then, and only a release adds room)."""
        mark = self._watermarks.get((constraints, request))
        if mark is None:
            return 0
        start, seen = mark
        if seen < len(self._released):
            positions = self.positions_of(constraints)
            for name in self._released[seen:]:
                at = positions.get(name)
                if at is not None and at < start:
                    start = at
        return start

    def fits(
        self,
        node_name: str,
        request: Resources,
        constraints: Constraints,
        *,
        extra: Resources = Resources.ZERO,
        pod: PodInfo | None = None,
        replacing: str | None = None,
    ) -> bool:
        """Does the pod fit on the node now, with ``extra`` more free? False if unknown.

        ``pod`` (else a pod of ``request`` and ``constraints`` with no labels) is checked
        against every filter. ``replacing`` is the uid of a pod it would replace there (a
        placeholder): that pod is left out of affinity and spread counts, and the
        devices it holds for its task group count as free.
        """
        state = self.nodes.get(node_name)
        if state is None:
            return False
        info = pod or PodInfo(request, constraints)
        fwk = self.framework(Scoring.BINPACK)
        if not fwk.pre_enqueue(info).ok or not fwk.static_filter(info, state).ok:
            return False
        if not info.request.fits_in(state.free + extra if extra else state.free):
            return False
        hidden = self.pod_index.pods.get(replacing) if replacing else None
        ports = state.ports.pop(hidden.uid, None) if hidden is not None else None
        if hidden is not None:
            self.pod_index.remove(hidden.uid)
        try:
            cycle, status = fwk.pre_filter(info, self)
            if not status.ok:
                return False
            if replacing and info.volumes.dynamic:
                freed = resource_claims.held_devices(self.volumes, replacing)
                if freed:  # the devices the placeholder holds are the pod's to take
                    cycle.write(resource_claims.FREED, freed)
            return all(f.filter(cycle, info, state).ok for f in cycle.filters
                       if f.name != FIT_PLUGIN)
        finally:
            if hidden is not None:
                self.pod_index.add(hidden)
                if ports:
                    state.ports[hidden.uid] = ports

    def place(
        self,
        request: Resources,
        constraints: Constraints,
        scoring: Scoring,
        owner: str | None = None,
        *,
        pod: PodInfo | None = None,
    ) -> str | None:
        """The best node for the pod (``pod``, else a pod of ``request`` -- pods slot
        included -- and ``constraints``), or None if none fits or it is gated.

        ``owner`` (an Application or PodGroup key) may use nodes reserved for it; no other
        placement does."""
        info = pod or PodInfo(request, constraints, owner=owner)
        request, constraints = info.request, info.constraints
        nodes = self.candidates(constraints)
        count = len(nodes)
        if count == 0:
            return None
        if scoring is Scoring.BINPACK:
            start = self._watermark(constraints, request)
            if start >= count:  # no candidate has room for the shape: nothing to filter
                self._watermarks[(constraints, request)] = (count, len(self._released))
                return None
        fwk = self.framework(scoring)
        if not fwk.pre_enqueue(info).ok:
            return None
        cycle, status = fwk.pre_filter(info, self)
        if not status.ok:
            return None
        blocked = self._blocked(owner if pod is None else info.owner)
        judge = RunJudge(cycle, info, fwk.scan_but(cycle, FIT_PLUGIN),
                         request, blocked, fwk.scan_costs,
                         fwk.refused(cycle, info) if scoring is Scoring.BINPACK else None)
        sample = self._sample_for(fwk, constraints)
        by_usage = fwk.usage_scored(info, self)
        if scoring is Scoring.BINPACK:
            found = self._binpack_scan(fwk, cycle, info, nodes, start, sample, judge,
                                       distinct=by_usage)
            self._watermarks[(constraints, request)] = (
                found.first_fit if found.first_fit >= 0 else count, len(self._released))
        else:
            start = self._cursor.get(constraints, 0) % count
            found = scan(nodes, start, start + count, sample, judge)
            first_fit = found.first_fit
            self._cursor[constraints] = (first_fit + 1) % count if first_fit >= 0 else start
        feasible = found.nodes
        represented = 0
        if len(feasible) > 1 and not by_usage and found.orders:
            # Scores follow from usage keys and one label's values but for a few nodes
            # scored one by one: the first feasible node of each class stands for it.
            classes = fwk.score_classes(cycle, info, self)
            if classes is not None:
                represented = len(feasible)
                feasible = found.classes(*classes)
        elif len(feasible) > 1 and by_usage:
            # Scores follow from usage keys alone: a later feasible node of a key would
            # score the same as the first and lose the tie; only the first is scored.
            if found.orders:  # kept with the scan (bin-packing)
                feasible = found.distinct()
            else:
                firsts = {state.usage_key: state for state in reversed(feasible)}
                if len(firsts) < len(feasible):
                    feasible = [s for s in feasible if firsts[s.usage_key] is s]
        if not feasible:
            return None
        if len(feasible) == 1:
            chosen = feasible[0].node.name
        else:
            if feasible is found.nodes and found.orders:  # known to scoring (ascending)
                cycle.orders, cycle.usage_keys = found.orders, found.keys
            elif represented:
                cycle.orders = [state.order for state in feasible]
                cycle.usage_keys = [state.usage_key for state in feasible]
                cycle.represented = represented
            fwk.pre_score(cycle, info, self, feasible, usage_scored=by_usage)
            chosen = select_host(feasible, fwk.score(cycle, info, feasible))
        return chosen if self._reserve(fwk, cycle, info, chosen) else None

    def _binpack_scan(self, fwk: Framework, cycle: fw.CycleState, info: PodInfo,
                      nodes: list[NodeState], start: int, sample: int, judge: RunJudge, *,
                      distinct: bool = False) -> Found:
        """The bin-packing scan from ``start``: carried over from the last pod of the same
        shape when it can be (see :mod:`~gangsched.core.placement.carried`), else afresh."""
        return self._carried.binpack_scan(self, fwk, cycle, info, nodes, start, sample, judge,
                                          distinct=distinct)

    def positions_of(self, constraints: Constraints) -> dict[str, int]:
        """Each candidate's position among the candidates for ``constraints``, by name."""
        positions = self._positions.get(constraints)
        if positions is None:
            positions = self._positions[constraints] = {
                state.node.name: i for i, state in enumerate(self.candidates(constraints))}
        return positions

    def fit(self, info: PodInfo, scoring: Scoring, *, judged: bool = True) -> str | Diagnosis:
        """The node for the pod, as :meth:`place` chooses it, or why it fits none, as
        :meth:`diagnose` says. ``judged``: the pod was tried before, so the verdicts kept
        node by node may tell that it still fits nowhere (:meth:`unplaceable`).

        A pod whose fit depends on its node alone, of the same shape as the last one
        that fit nowhere, with no node touched, freed or changed since, fits nowhere
        either, for the same reasons: that diagnosis is the answer, without a scan nor a
        tally. (Most of a deep backlog fails so, one pod after another, in the cycle
        after each wave of binds.) The scan it spares would have left the bin-packing
        watermark as it was, and is spared under spread scoring only when it would not
        have moved the cursor."""
        key = self._refusal_key(info, scoring)
        if key is not None:
            kept = self._refusals.get(key)
            if kept is not None and kept[0] == self._refusal_stamp():
                return kept[1]
        known = self.unplaceable(info, scoring) if judged else None
        node = None if known is not None else self.place(info.request, info.constraints,
                                                         scoring, pod=info)
        if node is not None:
            return node
        diagnosis = known or self.diagnose(info.request, info.constraints, pod=info)
        if key is not None and (scoring is Scoring.BINPACK or _still(diagnosis)):
            if len(self._refusals) >= MAX_TALLIES:
                self._refusals.clear()
            self._refusals[key] = (self._refusal_stamp(), diagnosis)
        return diagnosis

    def _refusal_key(self, info: PodInfo, scoring: Scoring) -> object | None:
        """What a refusal is kept under (see :meth:`fit`); None for a pod whose fit
        depends on more than its node: other pods, volumes, scheduling gates."""
        if (self.neighbour_bound(info) or self.pod_index.required_anti > 0
                or info.volumes.any or info.placement.gates):
            return None
        return (info.request, info.constraints, scoring, self._blocked(info.owner))

    def _refusal_stamp(self) -> tuple[object, ...]:
        """Changes whenever a node is touched (a pod charged or released, a node
        updated), added or removed, room is freed, or nodes are reserved."""
        log = self._touches
        return (log.generation, len(log.names), self._node_epoch, self._release_epoch,
                self.free_epoch, self.reserved, self.reserved_for)

    def _reserve(self, fwk: Framework, cycle: fw.CycleState, info: PodInfo, node: str) -> bool:
        """Reserve and PreBind on the chosen node. A refusal unreserves and fails the
        placement; PreBind's decisions wait in :attr:`pre_bound` for the pod's bind."""
        if not fwk.reservers and not fwk.pre_binders:
            return True
        if not fwk.reserve(cycle, info, node).ok:
            return False
        if not fwk.pre_bind(cycle, info, node).ok:
            fwk.unreserve(cycle, info, node)
            return False
        if cycle.decisions and info.uid:
            self.pre_bound[info.uid] = list(cycle.decisions)
        return True

    def unplaceable(self, info: PodInfo, scoring: Scoring) -> Diagnosis | None:
        """The diagnosis of a pod that :meth:`place` would find no node for, told from
        the verdicts kept node by node (O(nodes changed since) instead of a pass over
        the nodes); None when :meth:`place` must be asked: some node may take it, or its
        fit depends on more than its node (other pods, volumes), or the pass would move
        the spread scoring's cursor (a node with room that a filter or a reservation
        turns down). None as well under bin-packing: its scan starts past the nodes that
        had no room for the shape (:meth:`_watermark`), so a pod that fits nowhere costs
        it little, and a pod that fits would pay for the tally's catching up and then
        for the scan (in a wave of binds, that doubled the cost of each)."""
        if (scoring is Scoring.BINPACK or self.neighbour_bound(info)
                or self.pod_index.required_anti > 0 or info.volumes.any):
            return None
        diagnosis = self.diagnose(info.request, info.constraints, pod=info)
        return diagnosis if _still(diagnosis) else None

    def diagnose(
        self,
        request: Resources,
        constraints: Constraints,
        owner: str | None = None,
        *,
        pod: PodInfo | None = None,
    ) -> Diagnosis:
        """Why the pod fits no node. For a pod whose fit depends on its node alone, from
        the verdicts kept node by node (O(nodes touched since the last question));
        otherwise O(nodes), cached per pod shape until nodes, freed capacity or the
        placed pods change.

        Nodes reserved for a gang other than ``owner`` that would fit count as ``Reserved``.
        """
        info = pod or PodInfo(request, constraints, owner=owner)
        blocked = self._blocked(owner if pod is None else info.owner)
        neighbours = self.neighbour_bound(info) or self.pod_index.required_anti > 0
        volumes = info.volumes.any
        key = (info.constraints, info.request, blocked is not None,
               (info.placement, info.namespace) if neighbours else None,
               (info.volumes, info.namespace, info.uid) if volumes else None)
        if not (neighbours or volumes):
            # The tally is kept node by node, placements included: not cached here, where
            # a placement since (which changes no epoch) would leave a stale shortfall.
            return self._tallied(key, info, blocked)
        epoch = (self._node_epoch, self._release_epoch,
                 self.pod_index.epoch if neighbours else -1, len(self.namespace_labels),
                 self.volumes.epoch if volumes else -1)
        cached = self._diagnoses.get(key)
        if cached is not None and cached[0] == epoch:
            return cached[1]
        if len(self._diagnoses) > 4096:
            self._diagnoses.clear()
        diagnosis = self._diagnose(info, blocked)
        self._diagnoses[key] = (epoch, diagnosis)
        return diagnosis

    def _judge(self, info: PodInfo, blocked: frozenset[str] | None) -> Judge | fw.Status:
        """The filters of one node for ``info`` (see :mod:`~gangsched.core.placement.tally`), or
        the status of a pod that PreEnqueue or PreFilter rejects as a whole."""
        fwk = self.framework(Scoring.BINPACK)
        gated = fwk.pre_enqueue(info)
        cycle, status = fwk.pre_filter(info, self) if gated.ok else (None, gated)
        if cycle is None or not status.ok:
            return status
        reserved = fw.Status(fw.Code.UNSCHEDULABLE, (reserved_reason(self.reserved_for),),
                             RESERVED)

        def judge(state: NodeState) -> tuple[fw.Status, Resources | None]:
            verdict = fwk.static_filter(info, state)
            if verdict.ok:
                verdict = fwk.filter(cycle, info, state)
            if verdict.ok:
                return (reserved if blocked and state.node.name in blocked else verdict), None
            if verdict.plugin == FIT_PLUGIN:
                return verdict, info.request.shortfall(state.free.clamp_non_negative())
            return verdict, None

        return judge

    def _diagnose(self, info: PodInfo, blocked: frozenset[str] | None) -> Diagnosis:
        """A full pass over the nodes."""
        judge = self._judge(info, blocked)
        if isinstance(judge, fw.Status):
            return _rejected(len(self.nodes), judge)
        return Tally.full(None, self._touches, self.sorted_nodes(), judge).diagnosis(
            self.reserved_for if blocked else "")

    def _tallied(self, key: object, info: PodInfo, blocked: frozenset[str] | None) -> Diagnosis:
        """The diagnosis of a pod whose fit depends on its node alone: the nodes touched
        since the last one are judged again, the others keep their verdict. With no node
        touched since, the kept diagnosis stands as it is: PreEnqueue and PreFilter
        passed for this shape then and, for such a pod, depend only on the shape and the
        nodes, but for scheduling gates (asked again whenever the pod has some)."""
        epoch = (self._node_epoch, len(self.namespace_labels))
        tally = self._tallies.get(key)
        if (tally is not None and not info.placement.gates
                and tally.settled(epoch, self._touches)):
            return tally.diagnosis(self.reserved_for if blocked else "")
        judge = self._judge(info, blocked)
        if isinstance(judge, fw.Status):
            self._tallies.pop(key, None)
            return _rejected(len(self.nodes), judge)
        if tally is not None and tally.current(epoch, self._touches):
            tally.update(self._touches, self.nodes.get, judge)
        else:
            if len(self._tallies) >= MAX_TALLIES:
                del self._tallies[next(iter(self._tallies))]  # the oldest
            tally = self._tallies[key] = Tally.full(epoch, self._touches,
                                                    self.sorted_nodes(), judge)
        return tally.diagnosis(self.reserved_for if blocked else "")


def select_host(nodes: Sequence[NodeState], totals: Sequence[int]) -> str:
    """The node with the highest total; among equals, the first in scan order.

    A deliberate difference: kube-scheduler's ``selectHost`` (schedule_one.go) draws one
    of the best at random. Here the same observations give the same decisions (the
    simulator, the tests and a restart replay them), and equals still share the load:
    spread scoring scans from a point that moves on after each placement, as
    kube-scheduler's ``nextStartNodeIndex`` does, and bin-packing fills the first of
    equal nodes before it opens the next, which is what packing asks."""
    return nodes[totals.index(max(totals))].node.name


def _still(diagnosis: Diagnosis) -> bool:
    """Does this diagnosis tell that no node had room for the pod, so that a spread-
    scoring pass that found it would leave the cursor where it was? Not when a node
    that fits is reserved or turned down by a filter other than capacity (the pass
    would move the cursor past it)."""
    counts = diagnosis.by_filter
    if counts.get(FITS, 0) or counts.get(RESERVED, 0):
        return False
    return bool(diagnosis.pre_filter) or not any(plugin != FIT_PLUGIN for plugin in counts)



MAX_TALLIES = 64
"""Pod shapes whose diagnosis is kept node by node (memory: one entry per node each)."""


def _rejected(nodes: int, status: fw.Status) -> Diagnosis:
    """A pod that PreEnqueue or PreFilter rejects: every node counts for that plugin."""
    return Diagnosis(nodes, {status.plugin: nodes}, Resources.ZERO, "", {},
                     "; ".join(status.reasons))
