"""benchmarks/recall/cases.toml is well formed (no download, no lint run)."""

import re
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
RECALL = ROOT / "benchmarks" / "recall"
sys.path.insert(0, str(RECALL))

import fetch  # noqa: E402
import score  # noqa: E402

CASE_FIELDS = {"id", "project", "pr", "title", "package", "before", "after", "path", "split", "source", "place"}
PLACE_FIELDS = {"line", "kind", "what"}
KINDS = {"copy", "d2h", "condition", "shape", "sync"}


@pytest.fixture(scope="module")
def cases():
    return fetch.load_cases()


def test_every_case_has_its_fields(cases):
    ids = [c["id"] for c in cases]
    assert len(ids) == len(set(ids))
    for case in cases:
        assert CASE_FIELDS <= case.keys(), case["id"]
        assert set(case) <= CASE_FIELDS | {"after_path", "note"}, case["id"]
        assert re.fullmatch(r"https://github\.com/[\w.-]+/[\w.-]+/(pull|issues)/\d+", case["pr"]), case["id"]
        assert case["split"] in {"tuning", "held-out"}, case["id"]
        assert case["before"] != case["after"], case["id"]
        for key in ("path", "after_path"):
            if key in case:
                assert case[key].endswith(".py") and not case[key].startswith("/") and ".." not in case[key], case["id"]
        assert case["place"], case["id"]


def test_every_place_has_positive_lines_and_a_known_kind(cases):
    for case in cases:
        for place in case["place"]:
            assert PLACE_FIELDS <= place.keys(), case["id"]
            assert set(place) <= PLACE_FIELDS | {"end", "after_line", "after_end"}, case["id"]
            assert place["kind"] in KINDS, case["id"]
            assert isinstance(place["line"], int) and place["line"] > 0, case["id"]
            assert place.get("end", place["line"]) >= place["line"], case["id"]
            if "after_line" in place:
                assert isinstance(place["after_line"], int) and place["after_line"] > 0, case["id"]
                assert place.get("after_end", place["after_line"]) >= place["after_line"], case["id"]
            else:
                assert "after_end" not in place, case["id"]
            # A short description of the change, never a copy of third-party code.
            assert 0 < len(place["what"]) < 120 and "\n" not in place["what"], case["id"]


def test_enough_places_and_projects(cases):
    places = [p for c in cases for p in c["place"]]
    assert len(places) >= 40
    assert len({c["project"] for c in cases}) >= 4
    assert {p["kind"] for p in places} == KINDS
    assert any(c["split"] == "held-out" for c in cases)


def test_places_of_one_case_do_not_repeat(cases):
    for case in cases:
        lines = [p["line"] for p in case["place"]]
        assert len(lines) == len(set(lines)), case["id"]


def test_line_mapping_follows_inserted_and_replaced_lines():
    before = ["a", "b", "x = t.item()", "c"]
    after = ["a", "new", "b", "x = t", "c"]
    assert score.map_lines(before, after, 1, 1) == (1, 1)
    assert score.map_lines(before, after, 3, 3) == (4, 4)
    assert score.map_lines(before, after, 4, 4) == (5, 5)


def test_a_finding_counts_within_three_lines():
    finding = {"location": {"row": 10}, "end_location": {"row": 11}}
    assert score.near([finding], 14, 14) == [finding]
    assert score.near([finding], 15, 20) == []
    assert score.near([finding], 4, 7) == [finding]
    assert score.near([finding], 2, 6) == []
