"""The fake's pure parts: selectors, patches, schemas, names, the event log."""

from __future__ import annotations

from typing import Any

import pytest
from fakeapi import errors, patching, schema, selectors, validation, watch


@pytest.mark.parametrize("text, labels, matches", [
    pytest.param("", {}, True, id="empty-selects-all"),
    pytest.param("a=1", {"a": "1"}, True, id="eq"),
    pytest.param("a==1", {"a": "2"}, False, id="eqeq-miss"),
    pytest.param("a!=1", {}, True, id="neq-absent"),
    pytest.param("a in (1, 2)", {"a": "2"}, True, id="in-spaces"),
    pytest.param("a notin (1,2)", {}, True, id="notin-absent"),
    pytest.param("a notin (1,2)", {"a": "1"}, False, id="notin-hit"),
    pytest.param("a,!b", {"a": "x"}, True, id="exists-and-not"),
    pytest.param("a,!b", {"a": "x", "b": "y"}, False, id="not-exists-hit"),
    pytest.param("a>5", {"a": "7"}, True, id="gt"),
    pytest.param("a<5", {"a": "x"}, False, id="lt-non-numeric"),
    pytest.param("x.io/a=", {"x.io/a": ""}, True, id="prefixed-empty-value"),
    pytest.param(" a = 1 , b in (x) ", {"a": "1", "b": "x"}, True, id="whitespace"),
])
def test_label_selectors(text: str, labels: dict[str, str], matches: bool) -> None:
    assert selectors.parse_labels(text).matches(labels) is matches


@pytest.mark.parametrize("text", ["a in (1", "a=1,", "=1", "a in 1", "a>x", "bad key=1"])
def test_bad_label_selectors_are_400(text: str) -> None:
    with pytest.raises(errors.ApiError) as excinfo:
        selectors.parse_labels(text)
    assert excinfo.value.code == 400


@pytest.mark.parametrize("selector, labels, matches", [
    pytest.param(None, {"a": "1"}, False, id="nil-selects-nothing"),
    pytest.param({}, {"a": "1"}, True, id="empty-selects-all"),
    pytest.param({"matchLabels": {"a": "1"},
                  "matchExpressions": [{"key": "b", "operator": "DoesNotExist"}]},
                 {"a": "1"}, True, id="labels-and-expressions"),
    pytest.param({"matchExpressions": [{"key": "a", "operator": "In", "values": ["2"]}]},
                 {"a": "1"}, False, id="in-miss"),
])
def test_label_selector_objects(selector: dict[str, Any] | None, labels: dict[str, str],
                                matches: bool) -> None:
    assert selectors.from_object(selector).matches(labels) is matches


def test_field_selector_escapes_and_missing_fields() -> None:
    obj = {"metadata": {"name": "a,b"}, "spec": {}}
    assert selectors.parse_fields(r"metadata.name=a\,b", "Pod").matches(obj)
    assert selectors.parse_fields("spec.nodeName=", "Pod").matches(obj)
    assert not selectors.parse_fields("spec.nodeName!=", "Pod").matches(obj)


@pytest.mark.parametrize("target, patch, expected", [
    pytest.param({"a": 1, "b": {"c": 2}}, {"b": {"c": None, "d": 3}}, {"a": 1, "b": {"d": 3}},
                 id="merge-nested-delete"),
    pytest.param({"l": [1, 2]}, {"l": [3]}, {"l": [3]}, id="merge-list-replaced"),
    pytest.param({}, {"x": {"y": None}}, {"x": {}}, id="merge-new-with-null"),
])
def test_merge_patch(target: dict[str, Any], patch: dict[str, Any],
                     expected: dict[str, Any]) -> None:
    before = repr(target)
    assert patching.merge_patch(target, patch) == expected
    assert repr(target) == before  # the target is never mutated


@pytest.mark.parametrize("target, patch, expected", [
    pytest.param({"containers": [{"name": "a", "image": "1"}, {"name": "b", "image": "1"}]},
                 {"containers": [{"name": "b", "image": "2"}, {"name": "c", "image": "3"}]},
                 {"containers": [{"name": "a", "image": "1"}, {"name": "b", "image": "2"},
                                 {"name": "c", "image": "3"}]}, id="merge-by-name"),
    pytest.param({"containers": [{"name": "a"}, {"name": "b"}]},
                 {"containers": [{"name": "a", "$patch": "delete"}]},
                 {"containers": [{"name": "b"}]}, id="delete-directive"),
    pytest.param({"containers": [{"name": "a"}]},
                 {"containers": [{"name": "z"}, {"$patch": "replace"}]},
                 {"containers": [{"name": "z"}]}, id="replace-list"),
    pytest.param({"finalizers": ["a", "b"]}, {"$deleteFromPrimitiveList/finalizers": ["a"]},
                 {"finalizers": ["b"]}, id="delete-from-primitive-list"),
    pytest.param({"x": {"a": 1, "b": 2}}, {"x": {"$patch": "replace", "c": 3}}, {"x": {"c": 3}},
                 id="replace-map"),
    pytest.param({"args": ["a"]}, {"args": ["b"], "$setElementOrder/args": ["b"]},
                 {"args": ["b"]}, id="unknown-list-replaced"),
])
def test_strategic_merge_patch(target: dict[str, Any], patch: dict[str, Any],
                               expected: dict[str, Any]) -> None:
    assert patching.strategic_merge_patch(target, patch) == expected


SCHEMA = {
    "type": "object",
    "properties": {
        "spec": {
            "type": "object",
            "properties": {
                "replicas": {"type": "integer", "default": 1},
                "template": {"type": "object", "x-kubernetes-embedded-resource": True,
                             "properties": {"spec": {"type": "object"}}},
                "items": {"type": "array", "items": {
                    "type": "object", "properties": {"n": {"type": "string", "default": "x"}}}},
                "map": {"type": "object", "additionalProperties": {
                    "type": "object", "properties": {"v": {"type": "integer", "default": 0}}}},
                "empty": {"type": "object"},
            },
        },
    },
}


def test_schema_prunes_and_defaults_structurally() -> None:
    compiled = schema.CompiledSchema(SCHEMA)
    obj = {"apiVersion": "x/v1", "kind": "X", "metadata": {"name": "n"}, "junk": 1,
           "spec": {"template": {"apiVersion": "v1", "kind": "Pod", "metadata": {"a": 1},
                                 "spec": {"dropped": True}, "junk": 2},
                    "items": [{"other": 1}], "map": {"k": {"junk": 1}},
                    "empty": {"dropped": 1}}}
    result, causes = compiled.process(obj)
    assert causes == []
    assert result == {
        "apiVersion": "x/v1", "kind": "X", "metadata": {"name": "n"},
        "spec": {"replicas": 1,
                 "template": {"apiVersion": "v1", "kind": "Pod", "metadata": {"a": 1},
                              "spec": {}},
                 "items": [{"n": "x"}], "map": {"k": {"v": 0}}, "empty": {}},
    }
    assert obj["junk"] == 1  # the input is untouched


@pytest.mark.parametrize("key, valid", [
    pytest.param("app", True, id="plain"),
    pytest.param("example.com/app", True, id="prefixed"),
    pytest.param("Example.com/app", False, id="uppercase-prefix"),
    pytest.param("/app", False, id="empty-prefix"),
    pytest.param("a/", False, id="empty-name"),
    pytest.param("a" * 63, True, id="name-63"),
    pytest.param("a" * 64, False, id="name-64"),
    pytest.param("_a", False, id="leading-underscore"),
])
def test_qualified_names(key: str, valid: bool) -> None:
    assert (validation.qualified_name_problem(key) is None) is valid


async def test_event_log_trims_and_reports_gone() -> None:
    log = watch.EventLog(limit=4)
    for rv in range(1, 21):
        log.append(watch.WatchEvent(rv, "ADDED", {"metadata": {"name": str(rv)}}, None))
    assert len(log.events) < 8 and log.end == 20
    assert [e.rv for e in log.since(log.index_after(18))] == [19, 20]
    with pytest.raises(errors.ApiError) as excinfo:
        log.index_after(1)
    assert excinfo.value.code == 410 and excinfo.value.reason == "Expired"
    with pytest.raises(errors.ApiError):
        log.since(0)  # a watcher that fell behind the window
