"""Offline checks of the CRDs in ``crds/`` for what a real API server would reject.

The API server refuses a CRD whose schema is not *structural* (every node typed, no
``x-kubernetes-preserve-unknown-fields`` where it would switch pruning off for spec or
status, list-map keys required and scalar, ...), and refuses custom objects that do not
validate against it. These tests re-check the structural rules by walking the schema, and
validate sample objects with ``jsonschema`` after translating the Kubernetes dialect:

* ``x-kubernetes-int-or-string`` becomes ``oneOf: [integer, string]``;
* objects with ``properties`` reject unknown fields, like ``kubectl``'s default strict
  field validation;
* ``x-kubernetes-list-type: set`` becomes ``uniqueItems``; list-map key uniqueness and the
  CEL rules (``x-kubernetes-validations``) are emulated in Python, one function per rule.

Defaults are applied the way the API server does (a missing field with a default gets it,
then defaulting continues inside it), so the defaulted objects are what the operator reads.
"""

from __future__ import annotations

import copy
import datetime
import pathlib
import re
from collections.abc import Callable, Iterator
from typing import Any

import jsonschema
import pytest
import yaml
from manifests_tests.crd_samples import INVALID_CASES, VALID_SAMPLES, sample

CRD_DIR = pathlib.Path(__file__).resolve().parents[2] / "crds"
GROUP = "gangsched.io"
QUANTITY_PATTERN = (
    r"^(\+|-)?(([0-9]+(\.[0-9]*)?)|(\.[0-9]+))(([KMGTPE]i)|[numkMGTPE]|([eE](\+|-)?"
    r"(([0-9]+(\.[0-9]*)?)|(\.[0-9]+))))?$"
)
# shortNames owned by popular CRDs: Argo CD, Volcano, scheduler-plugins, Kueue.
FOREIGN_SHORT_NAMES = {
    "app", "apps", "pg", "pgs", "podgroup-v1beta1", "q", "queue-v1beta1", "cq", "lq", "wl",
}
EXPECTED = {
    # file: (kind, scope, shortNames)
    "applications": ("Application", "Namespaced", ["gsapp", "gsapps"]),
    "podgroups": ("PodGroup", "Namespaced", ["gspg", "gspgs"]),
    "queues": ("Queue", "Cluster", ["gsq", "gsqs"]),
}
SCHEMA_TYPES = {"object", "array", "string", "integer", "number", "boolean"}
COLUMN_TYPES = {"integer": "integer", "number": "number", "string": "string", "boolean": "boolean"}
# One Python twin per CEL rule: a rule without a twin fails test_every_cel_rule_is_emulated.
CEL_RULES: dict[str, Callable[[dict[str, Any]], bool]] = {
    "!has(self.totalNumber) || self.totalNumber >= self.minMember": (
        lambda s: "totalNumber" not in s or s["totalNumber"] >= s.get("minMember", 0)
    ),
    "has(self.sliceKey) == has(self.sliceSize)": lambda s: ("sliceKey" in s) == ("sliceSize" in s),
    "!has(self.required) || !has(self.preferred) || !(self.required in self.preferred)": (
        lambda s: s.get("required") not in s.get("preferred", [])
    ),
    "has(self.resourceClaimName) != has(self.resourceClaimTemplateName)": (
        lambda s: ("resourceClaimName" in s) != ("resourceClaimTemplateName" in s)
    ),
}


RFC3339 = re.compile(r"^\d{4}-\d{2}-\d{2}[Tt]\d{2}:\d{2}:\d{2}(\.\d+)?([Zz]|[+-]\d{2}:\d{2})$")
FORMATS = jsonschema.FormatChecker(formats=())  # only date-time, with no optional dependency


@FORMATS.checks("date-time", raises=ValueError)
def is_date_time(value: object) -> bool:
    if not isinstance(value, str):
        return True
    if not RFC3339.match(value):
        return False
    datetime.datetime.fromisoformat(value.upper().replace("Z", "+00:00"))
    return True


def load_crd(name: str) -> dict[str, Any]:
    docs = [d for d in yaml.safe_load_all((CRD_DIR / f"{name}.yaml").read_text()) if d]
    assert len(docs) == 1, f"{name}.yaml must hold exactly one document"
    crd: dict[str, Any] = docs[0]
    return crd


CRDS = {name: load_crd(name) for name in EXPECTED}
BY_KIND = {crd["spec"]["names"]["kind"]: crd for crd in CRDS.values()}
crd_params = pytest.mark.parametrize("name", sorted(CRDS))


def root_schema(crd: dict[str, Any]) -> dict[str, Any]:
    schema: dict[str, Any] = crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]
    return schema


def walk(node: dict[str, Any], path: str = "") -> Iterator[tuple[str, dict[str, Any]]]:
    """Every schema node with its path: properties by name, then ``[]`` and ``{}`` for values."""
    yield path, node
    for name, child in node.get("properties", {}).items():
        yield from walk(child, f"{path}.{name}")
    if "items" in node:
        yield from walk(node["items"], f"{path}[]")
    if isinstance(node.get("additionalProperties"), dict):
        yield from walk(node["additionalProperties"], f"{path}{{}}")


def all_nodes() -> Iterator[tuple[str, str, dict[str, Any]]]:
    for name, crd in CRDS.items():
        for path, node in walk(root_schema(crd)):
            yield name, path, node


def to_jsonschema(node: dict[str, Any]) -> dict[str, Any]:
    """Translate a CRD schema node to plain JSON Schema, as described in the module docstring."""
    out: dict[str, Any] = {}
    for key, value in node.items():
        if key == "properties":
            out[key] = {name: to_jsonschema(child) for name, child in value.items()}
        elif key in ("items", "additionalProperties") and isinstance(value, dict):
            out[key] = to_jsonschema(value)
        elif not key.startswith("x-kubernetes-") and key not in ("description", "default"):
            out[key] = value
    if node.get("x-kubernetes-int-or-string"):
        out["oneOf"] = [{"type": "integer"}, {"type": "string"}]
    if "properties" in node and not node.get("x-kubernetes-preserve-unknown-fields"):
        out["additionalProperties"] = False
    if node.get("x-kubernetes-list-type") == "set":
        out["uniqueItems"] = True
    return out


def apply_defaults(node: dict[str, Any], value: Any) -> None:
    """Default ``value`` in place like the API server: set missing defaults, then descend."""
    if isinstance(value, dict):
        props = node.get("properties", {})
        for name, child in props.items():
            if name not in value and "default" in child:
                value[name] = copy.deepcopy(child["default"])
        extra = node.get("additionalProperties")
        for name, item in value.items():
            child = props.get(name, extra if isinstance(extra, dict) else None)
            if child is not None:
                apply_defaults(child, item)
    elif isinstance(value, list) and "items" in node:
        for item in value:
            apply_defaults(node["items"], item)


def k8s_only_errors(node: dict[str, Any], value: Any, path: str = "") -> list[str]:
    """The checks JSON Schema cannot express: list-map key uniqueness and the CEL rules."""
    errors = []
    if isinstance(value, dict):
        for rule in node.get("x-kubernetes-validations", []):
            if not CEL_RULES[rule["rule"]](value):
                errors.append(f"{path}: {rule['message']}")
        for name, child in node.get("properties", {}).items():
            if name in value:
                errors += k8s_only_errors(child, value[name], f"{path}.{name}")
    if isinstance(value, list) and "items" in node:
        if node.get("x-kubernetes-list-type") == "map":
            keys = [
                tuple(item.get(k) for k in node["x-kubernetes-list-map-keys"])
                for item in value
                if isinstance(item, dict)
            ]
            errors += [f"{path}: duplicate key {k}" for k in set(keys) if keys.count(k) > 1]
        for i, item in enumerate(value):
            errors += k8s_only_errors(node["items"], item, f"{path}[{i}]")
    return errors


def validation_errors(obj: dict[str, Any]) -> list[str]:
    """Default ``obj`` (a copy) and return every reason the API server would refuse it."""
    schema = root_schema(BY_KIND[obj["kind"]])
    defaulted = copy.deepcopy(obj)
    apply_defaults(schema, defaulted)
    validator = jsonschema.Draft7Validator(to_jsonschema(schema), format_checker=FORMATS)
    errors = [
        "." + ".".join(str(p) for p in error.absolute_path) + ": " + error.message
        for error in validator.iter_errors(defaulted)
    ]
    return errors + k8s_only_errors(schema, defaulted)


# --- the CRD objects themselves -----------------------------------------------------------


@crd_params
def test_identity_and_names_are_consistent(name: str) -> None:
    crd = CRDS[name]
    kind, scope, _ = EXPECTED[name]
    names = crd["spec"]["names"]
    assert crd["apiVersion"] == "apiextensions.k8s.io/v1"
    assert crd["kind"] == "CustomResourceDefinition"
    assert crd["spec"]["group"] == GROUP
    assert crd["metadata"]["name"] == f"{names['plural']}.{GROUP}"
    assert names["plural"] == name
    assert names["kind"] == kind
    assert names["singular"] == kind.lower()
    assert names["listKind"] == f"{kind}List"
    assert names["categories"] == ["gangsched"]
    assert crd["spec"]["scope"] == scope


@crd_params
def test_single_served_stored_version_with_status_subresource(name: str) -> None:
    (version,) = CRDS[name]["spec"]["versions"]
    assert version["name"] == "v1alpha1"
    assert version["served"] is True
    assert version["storage"] is True
    assert version["subresources"] == {"status": {}}


def test_short_names_are_ours_and_collide_with_nothing() -> None:
    seen: list[str] = []
    for name, crd in CRDS.items():
        short = crd["spec"]["names"]["shortNames"]
        assert short == EXPECTED[name][2]
        assert not set(short) & FOREIGN_SHORT_NAMES
        seen += short
    plurals = {crd["spec"]["names"]["plural"] for crd in CRDS.values()}
    assert len(seen) == len(set(seen))
    assert not set(seen) & plurals


# --- structural schema rules ----------------------------------------------------------------


def test_every_node_is_typed_and_described() -> None:
    for name, path, node in all_nodes():
        where = f"{name}:{path or '<root>'}"
        if path == ".metadata":
            # Anything but {type: object} is refused ("metadata is implicitly specified").
            assert node == {"type": "object"}, where
            continue
        assert len(node.get("description", "")) >= 10, f"{where}: no useful description"
        if node.get("x-kubernetes-int-or-string"):
            assert "type" not in node, where
        else:
            assert node.get("type") in SCHEMA_TYPES, f"{where}: missing or bad type"


def test_schemas_are_structural() -> None:
    for name, path, node in all_nodes():
        where = f"{name}:{path or '<root>'}"
        for junctor in ("allOf", "anyOf", "oneOf", "not"):
            assert junctor not in node, f"{where}: {junctor} would need structural care"
        assert not ("properties" in node and "additionalProperties" in node), where
        if node.get("type") == "array":
            assert "items" in node, where
        opaque = path == ".metadata" or node.get("x-kubernetes-preserve-unknown-fields")
        if node.get("type") == "object" and not opaque:
            assert "properties" in node or "additionalProperties" in node, f"{where}: prunes all"
        assert not (
            node.get("x-kubernetes-int-or-string")
            and node.get("x-kubernetes-preserve-unknown-fields")
        ), where
        for key in node.get("required", []):
            assert key in node.get("properties", {}), f"{where}: required {key} undeclared"


@crd_params
def test_spec_and_status_are_pruned(name: str) -> None:
    schema = root_schema(CRDS[name])
    assert set(schema["properties"]) == {"apiVersion", "kind", "metadata", "spec", "status"}
    for part in ("<root>", "spec", "status"):
        node = schema if part == "<root>" else schema["properties"][part]
        assert not node.get("x-kubernetes-preserve-unknown-fields"), part
    assert schema["properties"]["apiVersion"]["type"] == "string"
    assert schema["properties"]["kind"]["type"] == "string"


def test_list_types_are_valid() -> None:
    for name, path, node in all_nodes():
        where = f"{name}:{path}"
        list_type = node.get("x-kubernetes-list-type")
        if list_type == "map":
            items = node["items"]
            assert items["type"] == "object", where
            for key in node["x-kubernetes-list-map-keys"]:
                assert key in items.get("required", []) or "default" in items["properties"][key]
                assert items["properties"][key]["type"] in ("string", "integer"), where
        elif list_type == "set":
            assert node["items"]["type"] in ("string", "integer", "number", "boolean"), where
        else:
            assert list_type in (None, "atomic"), where
            assert "x-kubernetes-list-map-keys" not in node, where


def test_conditions_have_the_metav1_condition_shape() -> None:
    found = 0
    for name, path, node in all_nodes():
        if not path.endswith(".conditions"):
            continue
        found += 1
        assert node["x-kubernetes-list-map-keys"] == ["type"], name
        items = node["items"]
        assert sorted(items["required"]) == [
            "lastTransitionTime", "message", "reason", "status", "type",
        ]
        props = items["properties"]
        assert props["status"]["enum"] == ["True", "False", "Unknown"]
        assert props["lastTransitionTime"]["format"] == "date-time"
        assert props["observedGeneration"]["format"] == "int64"
        assert props["message"]["maxLength"] == 32768
        assert props["reason"]["pattern"] == r"^[A-Za-z]([A-Za-z0-9_,:]*[A-Za-z0-9_])?$"
        assert (props["reason"]["minLength"], props["reason"]["maxLength"]) == (1, 1024)
        assert props["type"]["maxLength"] == 316
    assert found == 3


def test_every_int_or_string_is_a_quantity() -> None:
    quantities = [n for _, _, n in all_nodes() if n.get("x-kubernetes-int-or-string")]
    assert quantities
    for node in quantities:
        assert node["pattern"] == QUANTITY_PATTERN


def test_time_fields_are_date_time_strings() -> None:
    for name, path, node in all_nodes():
        leaf = path.rsplit(".", 1)[-1]
        if leaf.endswith(("Time", "Since", "Expiry", "TimerStart")):
            assert (node["type"], node.get("format")) == ("string", "date-time"), f"{name}:{path}"


def test_enums_and_defaults_are_valid_for_their_own_node() -> None:
    for name, path, node in all_nodes():
        where = f"{name}:{path}"
        plain = to_jsonschema(node)
        if "enum" in node:
            assert node["enum"] and len(set(node["enum"])) == len(node["enum"]), where
            for value in node["enum"]:
                jsonschema.validate(value, plain)
        if "default" in node:
            assert ".status" not in path, f"{where}: status is written by the operator only"
            value = copy.deepcopy(node["default"])
            apply_defaults(node, value)
            jsonschema.validate(value, plain)


def test_every_cel_rule_is_emulated_and_explained() -> None:
    for name, path, node in all_nodes():
        for rule in node.get("x-kubernetes-validations", []):
            assert rule["rule"] in CEL_RULES, f"{name}:{path}: add a Python twin for the rule"
            assert rule.get("message"), f"{name}:{path}"


@crd_params
def test_printer_columns_point_at_declared_fields(name: str) -> None:
    (version,) = CRDS[name]["spec"]["versions"]
    columns = version["additionalPrinterColumns"]
    assert len({c["name"] for c in columns}) == len(columns)
    assert columns[-1]["jsonPath"] == ".metadata.creationTimestamp"
    assert columns[-1]["type"] == "date"
    nodes = dict(walk(root_schema(CRDS[name])))
    for column in columns[:-1]:
        node = nodes.get(column["jsonPath"])
        assert node is not None, f"{column['name']}: {column['jsonPath']} is not in the schema"
        assert COLUMN_TYPES[column["type"]] == node["type"], column["name"]
        assert column.get("priority", 0) in (0, 1)
        assert column.get("description")


# --- objects: accepted and refused --------------------------------------------------------


@pytest.mark.parametrize("obj", [pytest.param(o, id=i) for i, o in VALID_SAMPLES.items()])
def test_valid_objects_are_accepted(obj: dict[str, Any]) -> None:
    assert validation_errors(obj) == []


@pytest.mark.parametrize(
    ("obj", "where"), [pytest.param(o, w, id=i) for i, (o, w) in INVALID_CASES.items()]
)
def test_invalid_objects_are_refused_at_the_right_field(obj: dict[str, Any], where: str) -> None:
    errors = validation_errors(obj)
    assert errors, "accepted, but the API server would refuse it"
    assert all(where in error for error in errors), errors


@pytest.mark.parametrize(
    ("kind", "given", "expected_spec"),
    [
        pytest.param(
            "Application",
            None,
            {
                "queue": "default",
                "schedulingPolicy": {
                    "style": "Soft", "placeholderTimeoutSeconds": 900, "waitingTimeoutSeconds": 30,
                },
            },
            id="application-without-spec",
        ),
        pytest.param(
            "PodGroup",
            {"minMember": 3},
            {"minMember": 3, "scheduleTimeoutSeconds": 600, "onTimeout": "Fail",
             "waitForMinMember": False, "mode": "Strict", "queue": "default"},
            id="podgroup-minimal",
        ),
        pytest.param(
            "Queue",
            None,
            {
                "sortPolicy": "fifo", "stateAwareTimeoutSeconds": 300, "weight": 1,
                "reclaimable": True,
            },
            id="queue-without-spec",
        ),
    ],
)
def test_defaults_fill_in_what_the_operator_reads(
    kind: str, given: dict[str, Any] | None, expected_spec: dict[str, Any]
) -> None:
    obj = sample(kind, spec=given)
    apply_defaults(root_schema(BY_KIND[kind]), obj)
    assert obj["spec"] == expected_spec
    assert validation_errors(obj) == []
