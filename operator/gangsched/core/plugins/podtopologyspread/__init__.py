"""PodTopologySpread: DoNotSchedule constraints filter, ScheduleAnyway constraints score.

PreFilter, per DoNotSchedule constraint: the *eligible* nodes carry every constraint's
topology key and pass the constraint's inclusion policies (``nodeAffinityPolicy: Honor``,
the default: the pod's nodeSelector and required affinity; ``nodeTaintsPolicy: Honor``:
its tolerations of NoSchedule/NoExecute taints; ``Ignore``: any node). Their values are
the domains; matching pods (the constraint's selector, in the pod's namespace, with
``matchLabelKeys`` merged at the edge) are counted per domain from the placed-pod index,
and those counts kept and brought up to date from its change log.
The minimum over domains is 0 when there are fewer domains than ``minDomains``. Eligible
nodes are cached per (keys, policies, constraints) until a node changes.

Filter: a node without every key fails ``node(s) didn't match pod topology spread
constraints (missing required label)`` (unresolvable); one where
``count(domain) + self-match - min > maxSkew`` for some constraint fails
``node(s) didn't match pod topology spread constraints``.

Score (ScheduleAnyway): for each node to score, ``count * log(domains + 2) + (maxSkew - 1)``
summed over constraints (``scoreForCount``), then reversed min-max to 0..100 (fewer
matching pods is better); nodes lacking a key score 0. ``domains`` is, as
``initPreScoreState`` counts it, the number of nodes scored for the hostname, and for
another key its values among them, a node without the key counting as the value ``""``
(only the system defaults score such nodes). PreScore skips when no pod matches and
every node to score has every key: all would score alike. When the cycle knows the
nodes' orders (a bin-packing scan's), their label values are read from columns kept per
key, and with a hostname and one other constraint each node's score is worked out once
per value of the other key (the nodes whose hostname holds matching pods one by one);
the strict filter reads the same columns.

Cluster default constraints apply to a pod with none of its own (``defaultingType``
``System``: hostname maxSkew 3 and zone maxSkew 5, ScheduleAnyway; ``List``: the
profile's ``defaultConstraints``) whose controller is a ReplicaSet, ReplicationController
or StatefulSet (:attr:`~gangsched.core.values.placement_terms.Placement.default_spread`), as in
kube-scheduler, which selects with the selectors of that controller and of the Services
selecting the pod: a Job's pods, bare pods and gang members get none. gangsched does not
watch those objects and selects with the pod's own labels (without the per-pod keys a
StatefulSet adds, such as ``statefulset.kubernetes.io/pod-name``) instead; Services
alone give no default constraints. A pod without labels gets none.

The plugin is one class whose methods live, as kube-scheduler's ``podtopologyspread``
folder lays them out, in three modules: :mod:`.common` (the arguments, the default
constraints, each node's label values kept in columns, the eligible nodes and the domain
counts that PreFilter and PreScore share), :mod:`.filtering` (PreFilter, Filter and the
batch filter over the columns) and :mod:`.scoring` (PreScore, Score and NormalizeScore:
the plain per-node sums, and beside them the column and per-value paths that must give
the same scores).
"""

from __future__ import annotations

from gangsched.core.plugins.podtopologyspread.common import HOSTNAME as HOSTNAME
from gangsched.core.plugins.podtopologyspread.common import LABEL_REASON as LABEL_REASON
from gangsched.core.plugins.podtopologyspread.common import NAME as NAME
from gangsched.core.plugins.podtopologyspread.common import PER_POD_KEYS as PER_POD_KEYS
from gangsched.core.plugins.podtopologyspread.common import REASON as REASON
from gangsched.core.plugins.podtopologyspread.common import SYSTEM_DEFAULTS as SYSTEM_DEFAULTS
from gangsched.core.plugins.podtopologyspread.common import ZONE as ZONE
from gangsched.core.plugins.podtopologyspread.common import Defaulting as Defaulting
from gangsched.core.plugins.podtopologyspread.common import SpreadArgs as SpreadArgs
from gangsched.core.plugins.podtopologyspread.filtering import SpreadFiltering
from gangsched.core.plugins.podtopologyspread.scoring import SpreadScoring
from gangsched.core.plugins.podtopologyspread.scoring import go_round as go_round


class PodTopologySpread(SpreadFiltering, SpreadScoring):
    name = NAME
    static = False
    scan_cost = 10


def factory(args: object | None) -> PodTopologySpread:
    if args is None:
        return PodTopologySpread(SpreadArgs())
    if not isinstance(args, SpreadArgs):
        raise TypeError("PodTopologySpread takes SpreadArgs")
    return PodTopologySpread(args)
