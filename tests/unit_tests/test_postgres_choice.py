"""Which PostgreSQL the test run uses: the one named, a system server, or an embedded one."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from tests import postgres_server as pg

EMBEDDED = "postgresql://postgres:@/test?host=/tmp/langchain-om-pg-x"


def _probe(probed: list[str], answer: bool) -> Callable[[str], bool]:
    def probe(url: str) -> bool:
        probed.append(url)
        return answer

    return probe


def _started(calls: list[str]) -> pg.Postgres:
    calls.append("start")
    return pg.Postgres("embedded", EMBEDDED)


def test_a_named_database_is_used_as_given() -> None:
    env = {pg.URL_ENV: "postgresql://app@db:5432/app"}
    calls: list[str] = []
    chosen = pg.choose(env, start=lambda: _started(calls), probe=lambda url: False)
    assert (chosen.kind, chosen.url, calls) == ("given", "postgresql://app@db:5432/app", [])
    assert env[pg.URL_ENV] == "postgresql://app@db:5432/app"


def test_a_system_server_that_answers_is_used() -> None:
    env: dict[str, str] = {}
    probed: list[str] = []
    chosen = pg.choose(env, start=lambda: pytest.fail("no start"), probe=_probe(probed, True))
    assert probed == [pg.SYSTEM_URL] and chosen.kind == "system"
    assert env[pg.URL_ENV] == pg.SYSTEM_URL and "system server" in chosen.header


def test_no_server_answering_starts_the_embedded_one_and_names_it_for_subprocesses() -> None:
    env = {pg.SYSTEM_URL_ENV: "postgresql://postgres@127.0.0.1:1/test"}
    calls: list[str] = []
    probed: list[str] = []
    chosen = pg.choose(env, start=lambda: _started(calls), probe=_probe(probed, False))
    assert probed == ["postgresql://postgres@127.0.0.1:1/test"]
    assert calls == ["start"] and chosen.kind == "embedded"
    assert env[pg.URL_ENV] == EMBEDDED
    assert "embedded server (pgserver)" in chosen.header


def test_without_pgserver_the_postgres_tests_are_skipped_as_before() -> None:
    def missing() -> pg.Postgres:
        raise ImportError("No module named 'pgserver'")

    env: dict[str, str] = {}
    chosen = pg.choose(env, start=missing, probe=lambda url: False)
    assert chosen.kind == "none" and pg.URL_ENV not in env
    assert "the PostgreSQL tests skip" in chosen.header


def test_an_embedded_server_that_fails_to_start_is_reported() -> None:
    def broken() -> pg.Postgres:
        raise RuntimeError("initdb failed")

    chosen = pg.choose({}, start=broken, probe=lambda url: False)
    assert chosen.kind == "none"
    assert "the embedded server did not start: initdb failed" in chosen.header
