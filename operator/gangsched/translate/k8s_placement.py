"""Raw pod JSON to :class:`gangsched.core.values.placement_terms.Placement`.

Read here and nowhere else: ``metadata.labels``, preferred node affinity, pod affinity
and anti-affinity (required and preferred), ``topologySpreadConstraints``, container
``hostPort``\\ s and ``schedulingGates``. Missing fields take the Kubernetes defaults;
wrong ones (types, unknown enum spellings, values the API server would refuse such as an
empty ``topologyKey``, ``maxSkew`` 0 or a weight outside 1..100) are recorded in the
``problems`` with their JSON path, and the part they belong to is left out (the pod is
then ``invalid`` and waits with that message).

``matchLabelKeys`` and ``mismatchLabelKeys`` are merged into the selector as the API
server and kube-scheduler do: a key the pod carries adds ``key In (value)`` (or
``NotIn`` for mismatch); a key it does not carry is ignored.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from gangsched.core.values import constraints, selectors
from gangsched.core.values import placement_terms as placement
from gangsched.translate import fields
from gangsched.translate.k8s_constraints import node_selector_term_from_k8s

_REQUIRED = "requiredDuringSchedulingIgnoredDuringExecution"
_PREFERRED = "preferredDuringSchedulingIgnoredDuringExecution"
_LABEL_OPERATORS = {op.value: op for op in selectors.LABEL_OPERATORS}


def _seq(problems: fields.Problems, raw: object, path: str) -> Sequence[Any]:
    empty: Sequence[Any] = ()
    return problems.read(lambda: fields.sequence(raw, path), empty)


def _map(problems: fields.Problems, raw: object, path: str) -> Mapping[str, Any]:
    empty: Mapping[str, Any] = {}
    return problems.read(lambda: fields.mapping(raw, path), empty)


def label_selector(raw: object, path: str) -> selectors.LabelSelector | None:
    """A ``LabelSelector``; ``None`` (absent) gives None, which selects nothing."""
    if raw is None:
        return None
    obj = fields.mapping(raw, path)
    match_labels = fields.string_map(obj.get("matchLabels"), f"{path}.matchLabels")
    expressions: list[constraints.SelectorRequirement] = []
    expr_path = f"{path}.matchExpressions"
    for index, item in enumerate(fields.sequence(obj.get("matchExpressions"), expr_path)):
        item_path = f"{expr_path}[{index}]"
        entry = fields.mapping(item, item_path)
        key = fields.string(entry.get("key"), f"{item_path}.key")
        op_text = fields.string(entry.get("operator"), f"{item_path}.operator")
        op = _LABEL_OPERATORS.get(op_text)
        if op is None:
            accepted = ", ".join(_LABEL_OPERATORS)
            raise constraints.ConstraintError(
                f'unknown operator "{op_text}" (accepted: {accepted})',
                field=f"{item_path}.operator")
        values = tuple(fields.string(v, f"{item_path}.values[{i}]") for i, v in
                       enumerate(fields.sequence(entry.get("values"), f"{item_path}.values")))
        try:
            expressions.append(constraints.SelectorRequirement(key, op, values))
        except constraints.ConstraintError as error:
            raise error.at(item_path) from None
    return selectors.LabelSelector.build(match_labels, expressions)


def _label_keys(raw: object, path: str) -> list[str]:
    return [fields.string(v, f"{path}[{i}]") for i, v in enumerate(fields.sequence(raw, path))]


def _merge_keys(selector: selectors.LabelSelector | None, labels: Mapping[str, str],
                match: Sequence[str], mismatch: Sequence[str],
                path: str) -> selectors.LabelSelector | None:
    if (match or mismatch) and selector is None:
        raise constraints.ConstraintError(
            "matchLabelKeys and mismatchLabelKeys need a labelSelector", field=path)
    both = set(match) & set(mismatch)
    if both:
        raise constraints.ConstraintError(
            f"key {sorted(both)[0]!r} is in both matchLabelKeys and mismatchLabelKeys",
            field=path)
    if selector is None:
        return None
    extra = [constraints.SelectorRequirement(k, constraints.SelectorOperator.IN, (labels[k],))
             for k in match if k in labels]
    extra += [constraints.SelectorRequirement(k, constraints.SelectorOperator.NOT_IN,
                                              (labels[k],))
              for k in mismatch if k in labels]
    return selector.with_requirements(extra)


def affinity_term(raw: object, path: str, labels: Mapping[str, str]) -> placement.AffinityTerm:
    """A ``PodAffinityTerm`` of a pod with ``labels``."""
    obj = fields.mapping(raw, path)
    key = fields.string(obj.get("topologyKey"), f"{path}.topologyKey")
    if not key:
        raise fields.TranslationError(f"{path}.topologyKey: required")
    selector = label_selector(obj.get("labelSelector"), f"{path}.labelSelector")
    selector = _merge_keys(
        selector, labels, _label_keys(obj.get("matchLabelKeys"), f"{path}.matchLabelKeys"),
        _label_keys(obj.get("mismatchLabelKeys"), f"{path}.mismatchLabelKeys"), path)
    namespaces = tuple(fields.string(v, f"{path}.namespaces[{i}]") for i, v in
                       enumerate(fields.sequence(obj.get("namespaces"), f"{path}.namespaces")))
    ns_selector = label_selector(obj.get("namespaceSelector"), f"{path}.namespaceSelector")
    return placement.AffinityTerm(key, selector, namespaces, ns_selector)


def _weight(obj: Mapping[str, Any], path: str) -> int:
    if obj.get("weight") is None:
        raise fields.TranslationError(f"{path}.weight: required")
    return fields.integer(obj.get("weight"), f"{path}.weight", default=1, minimum=1,
                          maximum=100)


def _pod_terms(raw: object, path: str, labels: Mapping[str, str],
               problems: fields.Problems) -> tuple[tuple[placement.AffinityTerm, ...],
                                                   tuple[placement.WeightedTerm, ...]]:
    obj = _map(problems, raw, path)
    required: list[placement.AffinityTerm] = []
    for i, item in enumerate(_seq(problems, obj.get(_REQUIRED), f"{path}.{_REQUIRED}")):
        item_path = f"{path}.{_REQUIRED}[{i}]"

        def read(p: str = item_path, it: object = item) -> placement.AffinityTerm | None:
            return affinity_term(it, p, labels)
        term = problems.read(read, None)
        if term is not None:
            required.append(term)
    preferred: list[placement.WeightedTerm] = []
    for i, item in enumerate(_seq(problems, obj.get(_PREFERRED), f"{path}.{_PREFERRED}")):
        item_path = f"{path}.{_PREFERRED}[{i}]"

        def weighted(p: str = item_path, it: object = item) -> placement.WeightedTerm | None:
            entry = fields.mapping(it, p)
            weight = _weight(entry, p)
            return placement.WeightedTerm(
                weight, affinity_term(entry.get("podAffinityTerm"), f"{p}.podAffinityTerm",
                                      labels))
        found = problems.read(weighted, None)
        if found is not None:
            preferred.append(found)
    return tuple(required), tuple(preferred)


def _node_preferred(raw: object, path: str,
                    problems: fields.Problems) -> tuple[placement.PreferredNodeTerm, ...]:
    found: list[placement.PreferredNodeTerm] = []
    for i, item in enumerate(_seq(problems, raw, path)):
        item_path = f"{path}[{i}]"

        def term(p: str = item_path, it: object = item) -> placement.PreferredNodeTerm | None:
            entry = fields.mapping(it, p)
            return placement.PreferredNodeTerm(
                _weight(entry, p), node_selector_term_from_k8s(entry.get("preference"),
                                                               f"{p}.preference"))
        value = problems.read(term, None)
        if value is not None:
            found.append(value)
    return tuple(found)


def spread_constraint(raw: object, path: str,
                      labels: Mapping[str, str]) -> placement.SpreadConstraint:
    """A ``TopologySpreadConstraint`` of a pod with ``labels``."""
    obj = fields.mapping(raw, path)
    if obj.get("maxSkew") is None:
        raise fields.TranslationError(f"{path}.maxSkew: required")
    skew = fields.integer(obj.get("maxSkew"), f"{path}.maxSkew", default=1, minimum=1)
    key = fields.string(obj.get("topologyKey"), f"{path}.topologyKey")
    if not key:
        raise fields.TranslationError(f"{path}.topologyKey: required")
    when_text = fields.string(obj.get("whenUnsatisfiable"), f"{path}.whenUnsatisfiable")
    try:
        when = placement.WhenUnsatisfiable.from_string(when_text)
    except constraints.ConstraintError as error:
        raise error.at(f"{path}.whenUnsatisfiable") from None
    min_domains = None
    if obj.get("minDomains") is not None:
        min_domains = fields.integer(obj.get("minDomains"), f"{path}.minDomains", default=1,
                                     minimum=1)
        if when is not placement.WhenUnsatisfiable.DO_NOT_SCHEDULE:
            raise fields.TranslationError(
                f"{path}.minDomains: only allowed with whenUnsatisfiable DoNotSchedule")
    policies = []
    for name, default in (("nodeAffinityPolicy", placement.InclusionPolicy.HONOR),
                          ("nodeTaintsPolicy", placement.InclusionPolicy.IGNORE)):
        text = fields.string(obj.get(name), f"{path}.{name}")
        try:
            policies.append(placement.InclusionPolicy.from_string(text) if text else default)
        except constraints.ConstraintError as error:
            raise error.at(f"{path}.{name}") from None
    selector = label_selector(obj.get("labelSelector"), f"{path}.labelSelector")
    keys = _label_keys(obj.get("matchLabelKeys"), f"{path}.matchLabelKeys")
    if selector is not None:
        selector = _merge_keys(selector, labels, keys, (), path)
    return placement.SpreadConstraint(skew, key, when, selector, min_domains, *policies)


def _ports(spec: Mapping[str, Any], problems: fields.Problems) -> tuple[placement.HostPort, ...]:
    found: list[placement.HostPort] = []
    containers = spec.get("containers")
    if not isinstance(containers, list):
        return ()  # reported with the requests
    for c, container in enumerate(containers):
        if not isinstance(container, Mapping):
            continue
        ports_path = f"spec.containers[{c}].ports"
        for p, raw in enumerate(_seq(problems, container.get("ports"), ports_path)):
            path = f"{ports_path}[{p}]"

            def port(pp: str = path, r: object = raw) -> placement.HostPort | None:
                obj = fields.mapping(r, pp)
                host = fields.integer(obj.get("hostPort"), f"{pp}.hostPort", default=0,
                                      minimum=0, maximum=65535)
                if host == 0:
                    return None
                text = fields.string(obj.get("protocol"), f"{pp}.protocol") or "TCP"
                try:
                    protocol = placement.Protocol.from_string(text)
                except constraints.ConstraintError as error:
                    raise error.at(f"{pp}.protocol") from None
                return placement.HostPort(host, protocol,
                                          fields.string(obj.get("hostIP"), f"{pp}.hostIP"))
            value = problems.read(port, None)
            if value is not None:
                found.append(value)
    return tuple(found)


SPREADING_CONTROLLERS = frozenset({("apps/v1", "ReplicaSet"), ("apps/v1", "StatefulSet"),
                                   ("v1", "ReplicationController")})
"""The controllers whose selectors kube-scheduler's default spread constraints use."""


def spread_by_default(meta: Mapping[str, Any]) -> bool:
    """Does a pod with this ``metadata`` get the cluster's default spread constraints?

    kube-scheduler builds them from the selectors of the Services selecting the pod and
    of its controller when that is a ReplicaSet, ReplicationController or StatefulSet; a
    pod with neither (a Job's, a bare pod, a Spark executor) gets none. gangsched does
    not watch Services: it looks at the controller only. Unreadable owners: none."""
    owners = meta.get("ownerReferences")
    if not isinstance(owners, list):
        return False
    for owner in owners:
        if isinstance(owner, Mapping) and owner.get("controller") is True:
            api_version, kind = owner.get("apiVersion"), owner.get("kind")
            return (isinstance(api_version, str) and isinstance(kind, str)
                    and (api_version, kind) in SPREADING_CONTROLLERS)
    return False


def normalized_image(name: str) -> str:
    """An image name as ImageLocality compares it: ``:latest`` added when it has no
    tag (imagelocality ``normalizedImageName``)."""
    if name.rfind(":") <= name.rfind("/"):
        return f"{name}:latest"
    return name


def _images(spec: Mapping[str, Any]) -> tuple[str, ...]:
    """The images of the init and regular containers, one per container, normalized;
    a container without an image is left out (the API server refuses such a pod), and
    so is a malformed list (the pod's requests say what is wrong with it)."""
    found: list[str] = []
    for key in ("initContainers", "containers"):
        items = spec.get(key)
        for item in items if isinstance(items, list) else ():
            image = item.get("image") if isinstance(item, Mapping) else None
            if isinstance(image, str) and image:
                found.append(normalized_image(image))
    return tuple(found)


def placement_from_k8s(spec: Mapping[str, Any], labels: Mapping[str, str],
                       problems: fields.Problems, *, path: str = "spec") -> placement.Placement:
    """The Placement of a pod ``spec`` with ``labels``; problems go to ``problems``."""
    a_path = f"{path}.affinity"
    affinity = _map(problems, spec.get("affinity"), a_path)
    node = _map(problems, affinity.get("nodeAffinity"), f"{a_path}.nodeAffinity")
    node_preferred = _node_preferred(node.get(_PREFERRED),
                                     f"{a_path}.nodeAffinity.{_PREFERRED}", problems)
    pod_aff, pod_aff_pref = _pod_terms(affinity.get("podAffinity"), f"{a_path}.podAffinity",
                                       labels, problems)
    anti, anti_pref = _pod_terms(affinity.get("podAntiAffinity"), f"{a_path}.podAntiAffinity",
                                 labels, problems)
    spread_path = f"{path}.topologySpreadConstraints"
    spread: list[placement.SpreadConstraint] = []
    for i, item in enumerate(_seq(problems, spec.get("topologySpreadConstraints"),
                                  spread_path)):
        def read(p: str = f"{spread_path}[{i}]",
                 it: object = item) -> placement.SpreadConstraint | None:
            return spread_constraint(it, p, labels)
        found = problems.read(read, None)
        if found is not None:
            spread.append(found)
    gates_path = f"{path}.schedulingGates"
    gates: list[str] = []
    for i, item in enumerate(_seq(problems, spec.get("schedulingGates"), gates_path)):
        def gate(p: str = f"{gates_path}[{i}]", it: object = item) -> str:
            return fields.string(fields.mapping(it, p).get("name"), f"{p}.name")
        name = problems.read(gate, "")
        if name:
            gates.append(name)
    return placement.Placement(
        labels=tuple(sorted(labels.items())),
        affinity=pod_aff,
        affinity_preferred=pod_aff_pref,
        anti_affinity=anti,
        anti_affinity_preferred=anti_pref,
        spread=tuple(spread),
        node_preferred=node_preferred,
        ports=_ports(spec, problems) if path == "spec" else (),
        gates=tuple(gates),
        images=_images(spec) if path == "spec" else (),
    )
