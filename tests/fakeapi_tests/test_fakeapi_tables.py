"""Server-side printing: the Table kubectl asks for, and the columns users see.

The columns a user sees come from the CRDs' ``additionalPrinterColumns``: priority 0 in
plain ``kubectl get``, all of them with ``-o wide``. These tests check the Table the fake
serves (as apiextensions-apiserver builds it), then run the real ``kubectl`` against the
fake, when it is installed, and compare its headers with what the README, the examples'
READMEs and the end-to-end tests expect.
"""

from __future__ import annotations

import asyncio
import pathlib
import re
import shutil
import subprocess
from typing import Any

import aiohttp
import pytest
from fakeapi import FakeApiServer
from fakeapi.tables import human_duration

ROOT = pathlib.Path(__file__).resolve().parents[2]
TABLE = "application/json;as=Table;v=v1;g=meta.k8s.io,application/json"
APP = "gangsched.io/v1alpha1"


def podgroup(name: str, **spec: Any) -> dict[str, Any]:
    return {"apiVersion": APP, "kind": "PodGroup",
            "metadata": {"name": name, "namespace": "default"},
            "spec": {"minMember": 3, **spec}}


async def fetch(api: FakeApiServer, path: str, accept: str = TABLE) -> dict[str, Any]:
    async with aiohttp.ClientSession() as session, session.get(
            f"{api.url}{path}", headers={"Accept": accept}) as response:
        assert response.status == 200, await response.text()
        body: dict[str, Any] = await response.json()
        return body


async def cluster(fake_api_factory: Any) -> FakeApiServer:
    api: FakeApiServer = await fake_api_factory()
    api.install_crds_from_dir(ROOT / "crds")
    api.create(podgroup("strict-gang", mode="Strict"))
    return api


async def test_a_custom_resource_list_is_a_table_with_the_crd_columns(
        fake_api_factory: Any) -> None:
    api = await cluster(fake_api_factory)
    table = await fetch(api, "/apis/gangsched.io/v1alpha1/namespaces/default/podgroups")
    assert (table["kind"], table["apiVersion"]) == ("Table", "meta.k8s.io/v1")
    columns = [(c["name"], c["type"], c["priority"]) for c in table["columnDefinitions"]]
    assert columns == [("Name", "string", 0), ("Phase", "string", 0), ("Min", "integer", 0),
                       ("Scheduled", "integer", 0), ("Running", "integer", 0),
                       ("Topology", "string", 0), ("Mode", "string", 1), ("Age", "date", 0)]
    assert table["columnDefinitions"][0]["format"] == "name"
    (row,) = table["rows"]
    assert row["cells"][:3] == ["strict-gang", None, 3]  # no status yet: no phase
    assert row["cells"][5] is None  # no topology asked for
    assert row["cells"][6] == "Strict"
    assert re.fullmatch(r"\d+s", row["cells"][7])
    assert row["object"]["kind"] == "PartialObjectMetadata"
    assert row["object"]["metadata"]["name"] == "strict-gang"
    assert table["metadata"]["resourceVersion"]


async def test_a_get_is_a_table_of_one_row_and_include_object_is_honoured(
        fake_api_factory: Any) -> None:
    api = await cluster(fake_api_factory)
    path = "/apis/gangsched.io/v1alpha1/namespaces/default/podgroups/strict-gang"
    one = await fetch(api, path + "?includeObject=Object")
    assert [row["object"]["kind"] for row in one["rows"]] == ["PodGroup"]
    bare = await fetch(api, path + "?includeObject=None")
    assert "object" not in bare["rows"][0]
    plain = await fetch(api, path, accept="application/json")
    assert plain["kind"] == "PodGroup"  # without the Table media type: the object


async def test_built_ins_are_served_as_objects(fake_api_factory: Any) -> None:
    api = await cluster(fake_api_factory)
    listed = await fetch(api, "/api/v1/namespaces/default/pods")
    assert listed["kind"] == "PodList"


@pytest.mark.parametrize(
    ("seconds", "text"),
    [(5, "5s"), (119, "119s"), (125, "2m5s"), (180, "3m"), (42 * 60, "42m"),
     (3 * 3600 + 600, "3h10m"), (20 * 3600, "20h"), (3 * 86400 + 4 * 3600, "3d4h"),
     (90 * 86400, "90d"), (800 * 86400, "2y70d"), (-5, "<invalid>")],
)
def test_ages_read_as_kubectl_prints_them(seconds: int, text: str) -> None:
    assert human_duration(seconds) == text


# --- what users see, with the real kubectl -----------------------------------------------

KUBECTL = shutil.which("kubectl")


def headers(kubeconfig: pathlib.Path, *args: str) -> list[str]:
    done = subprocess.run([KUBECTL or "kubectl", "--kubeconfig", str(kubeconfig), "get", *args],
                          capture_output=True, text=True, timeout=60, check=True)
    return done.stdout.splitlines()[0].split()


def documented() -> list[tuple[str, list[str], list[str]]]:
    """(file, kubectl get arguments, header line) of every ``$ kubectl get`` of a gangsched
    resource followed by its output in the READMEs."""
    found = []
    for path in [ROOT / "README.md", *sorted((ROOT / "examples").glob("*/README.md"))]:
        lines = path.read_text().splitlines()
        for index, line in enumerate(lines[:-1]):
            match = re.match(r"\$ kubectl get (\S+)(.*)$", line.strip())
            if not match or not re.match(r"(gs|applications|podgroups|queues)",
                                         match.group(1)):
                continue
            rest = match.group(2).split()
            output = rest[rest.index("-o") + 1] if "-o" in rest else ""
            if output not in ("", "wide"):
                continue  # jsonpath, yaml...: no columns
            args = [match.group(1), *(["-o", "wide"] if output else [])]
            found.append((str(path.relative_to(ROOT)), args, lines[index + 1].split()))
    return found


def test_the_readmes_show_kubectl_gets() -> None:
    assert len(documented()) >= 5  # the check below checks something


@pytest.mark.skipif(KUBECTL is None, reason="needs kubectl")
async def test_users_see_the_columns_the_docs_and_e2e_tests_expect(
        fake_api_factory: Any, tmp_path: pathlib.Path) -> None:
    api = await cluster(fake_api_factory)
    kubeconfig = api.write_kubeconfig(tmp_path / "kubeconfig")
    plain = await asyncio.to_thread(headers, kubeconfig, "podgroups.gangsched.io",
                                    "strict-gang")
    wide = await asyncio.to_thread(headers, kubeconfig, "gspg", "strict-gang", "-o", "wide")
    assert plain == ["NAME", "PHASE", "MIN", "SCHEDULED", "RUNNING", "TOPOLOGY", "AGE"]
    assert wide == ["NAME", "PHASE", "MIN", "SCHEDULED", "RUNNING", "TOPOLOGY", "MODE", "AGE"]
    e2e = (ROOT / "tests" / "e2e" / "test_e2e_examples.py").read_text()
    strict = e2e[e2e.index("def test_strict_podgroup_binds_all_members"):]
    strict = strict[:strict.index("\ndef ")]
    assert '"-o", "wide"' in strict and '"Strict" in table' in strict  # Mode needs -o wide
    api.create({"apiVersion": APP, "kind": "Application",
                "metadata": {"name": "x", "namespace": "default"},
                "spec": {"taskGroups": [{"name": "w", "minMember": 1}]}})
    api.create({"apiVersion": APP, "kind": "Queue", "metadata": {"name": "q"}, "spec": {}})
    checked = 0
    for file, args, header in documented():
        shown = await asyncio.to_thread(headers, kubeconfig, *args)
        assert shown == header, f"{file}: kubectl get {' '.join(args)}"
        checked += 1
    assert checked >= 5
