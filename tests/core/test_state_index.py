"""The index of records by predicate (``core/state/index.py``) against walks over every
record: the same records met, in the same order, while the walk changes records; the
same counts per tally; and the scheduler's indexes kept equal to their predicates over
a run of the core."""

from __future__ import annotations

import random
from dataclasses import dataclass

import pytest
from builders import make_app, make_group, make_node, make_pod, make_podgroup
from gangsched.core.state.index import Index
from gangsched.core.state.records import (
    APP_DEADLINES,
    APP_PREDICATES,
    APP_TALLIES,
    GROUP_PREDICATES,
    GROUP_TALLIES,
)
from gangsched.core.values.model import AppKey, GroupKey
from simworld import SimWorld


@dataclass
class Rec:
    key: str
    level: int
    index: Index[str, Rec] | None = None

    def set(self, level: int) -> None:
        self.level = level
        if self.index is not None:
            self.index.touch(self.key, self)


def _high(rec: Rec) -> bool:
    return rec.level >= 5


def _build(rng: random.Random, count: int) -> tuple[dict[str, Rec], Index[str, Rec]]:
    index: Index[str, Rec] = Index({"high": _high}, {"level": lambda r: r.level})
    records: dict[str, Rec] = {}
    for n in rng.sample(range(10 * count), count):
        rec = Rec(f"r{n:04d}", rng.randrange(10))
        rec.index = index
        records[rec.key] = rec
        index.add(rec.key, rec)
    return records, index


@pytest.mark.parametrize("seed", range(12))
def test_walk_meets_what_a_sorted_walk_over_every_record_acts_on(seed: int) -> None:
    """A visit lowers the record and raises or lowers others at random (the same draws
    in both walks): the walk over all records and the index's act on the same records,
    in the same order."""
    rng = random.Random(seed)
    records, index = _build(rng, 40)
    keys = list(records)
    plan = {key: [(rng.choice(keys), rng.randrange(10)) for _ in range(rng.randrange(3))]
            for key in keys}
    twin = {key: Rec(key, rec.level) for key, rec in records.items()}

    def visit(recs: dict[str, Rec], rec: Rec) -> None:
        rec.set(rec.level - 5)
        for other, level in plan[rec.key]:
            recs[other].set(level)

    expected = []
    for key in sorted(twin):
        if _high(twin[key]):
            expected.append(key)
            visit(twin, twin[key])
    met = []
    for rec in index.walk("high"):
        if _high(rec):
            met.append(rec.key)
            visit(records, rec)
    assert met == expected
    assert {k: r.level for k, r in records.items()} == {k: r.level for k, r in twin.items()}


@pytest.mark.parametrize("seed", range(6))
def test_members_and_tallies_follow_changes_additions_and_removals(seed: int) -> None:
    rng = random.Random(seed)
    records, index = _build(rng, 30)
    for step in range(200):
        action = rng.randrange(4)
        if action == 0 and records:
            key = rng.choice(list(records))
            del records[key]
            index.remove(key)
        elif action == 1:
            key = f"r{rng.randrange(400):04d}"
            replaced = key in records
            rec = Rec(key, rng.randrange(10), index)
            records[key] = rec  # a replaced key keeps its place, as in a dict
            index.add(key, rec)
            assert replaced or list(records)[-1] == key
        elif records:
            rng.choice(list(records.values())).set(rng.randrange(10))
        if step % 7 == 0:
            assert index.members("high") == [r for r in records.values() if _high(r)]
            levels: dict[object, int] = {}
            for rec in records.values():
                levels[rec.level] = levels.get(rec.level, 0) + 1
            assert index.tally("level") == levels


def test_a_removed_record_changed_afterwards_is_not_counted() -> None:
    index: Index[str, Rec] = Index({"high": _high})
    old = Rec("a", 7, None)
    index.add("a", old)
    old.index = index
    index.remove("a")
    old.set(9)
    assert index.members("high") == []


def test_the_schedulers_indexes_hold_exactly_what_their_predicates_say() -> None:
    """Applications and PodGroups come, wait, run, finish and go: at each cycle every
    predicate's set is the records it holds for, and every tally the counts."""
    w = SimWorld()
    w.add_node(make_node("n1", cpu=4))
    for i in range(4):
        w.add_app(make_app(f"app-{i}", make_group("g", 2, cpu=1)))
        for k in range(2):
            w.add_pod(make_pod(f"app-{i}-{k}", app=f"app-{i}", task_group="g", cpu=1))
    for name in ("pg", "pg-big"):
        w.add_group(make_podgroup(name, 2))
        for k in range(2):
            w.add_pod(make_pod(f"{name}-{k}", pod_group=name, cpu=1 if name == "pg" else 3))
    s = w.scheduler
    for step in range(8):
        w.step(float(step * 10))
        if step == 3:
            w.remove_app(AppKey("default/app-0"))
            w.remove_group(GroupKey("default/pg"))
        for index, records, predicates, tallies in (
                (s.app_index, s.apps, APP_PREDICATES, APP_TALLIES),
                (s.group_index, s.groups, GROUP_PREDICATES, GROUP_TALLIES)):
            for name, holds in predicates.items():
                assert [r.spec.key for r in index.members(name)] == [  # type: ignore[attr-defined]
                    k for k, r in records.items() if holds(r)], name  # type: ignore[operator]
            for name, deadline in APP_DEADLINES.items():
                due, ahead = s.app_index.due(name, lambda t: t <= s.now)
                at = {k: deadline(r) for k, r in s.apps.items() if deadline(r) is not None}
                assert sorted(due) == sorted(k for k, v in at.items() if v <= s.now)
                assert ahead == min((v for v in at.values() if v > s.now), default=None)
            for name, tally in tallies.items():
                counts: dict[object, int] = {}
                for r in records.values():
                    value = tally(r)  # type: ignore[operator]
                    counts[value] = counts.get(value, 0) + 1
                assert index.tally(name) == counts, name


@pytest.mark.parametrize("seed", range(6))
def test_due_gives_the_deadlines_come_and_the_earliest_ahead(seed: int) -> None:
    """Deadlines set, moved, dropped and records removed at random: ``due`` says which
    have come and the earliest still ahead, as a look at every record does."""
    rng = random.Random(seed)
    index: Index[str, Rec] = Index({}, deadlines={
        "at": lambda r: float(r.level) if r.level % 3 else None})
    records: dict[str, Rec] = {}
    for step in range(300):
        key = f"r{rng.randrange(30):02d}"
        if key in records and rng.random() < 0.2:
            del records[key]
            index.remove(key)
        elif key in records:
            records[key].set(rng.randrange(60))
        else:
            records[key] = Rec(key, rng.randrange(60), index)
            index.add(key, records[key])
        now = float(rng.randrange(60))
        came, ahead = index.due("at", lambda at, now=now: at <= now)
        deadlines = {k: float(r.level) for k, r in records.items() if r.level % 3}
        assert sorted(came) == sorted(k for k, at in deadlines.items() if at <= now), step
        assert ahead == min((at for at in deadlines.values() if at > now), default=None)
