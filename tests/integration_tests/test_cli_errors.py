"""Every error of the command line, run as a user runs it (a subprocess): one line on stderr,
a non-zero exit code, no traceback, and nothing created or changed that should not be."""

from __future__ import annotations

import os
import socket
import sqlite3
import subprocess
import sys
import threading
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from langchain_om import ObservationalMemory
from langchain_om.testing import FunctionChatModel, memory_model
from tests.helpers import POSTGRES_URL, ROOT, build_agent, require_postgres, write_jsonl

DEMO = ROOT / "examples" / "data" / "demo.jsonl"
SCRIPTED = ["--scripted", "--message-tokens", "150"]


def cli(*argv: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    """``langchain-om ARGV`` in a fresh process, with no provider key set."""
    env = {**os.environ, "PYTHONPATH": str(ROOT), "OPENAI_API_KEY": "", "GOOGLE_API_KEY": ""}
    env.pop("LANGCHAIN_OM_TRACEBACK", None)
    return subprocess.run(
        [sys.executable, "-m", "langchain_om.cli", *argv],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def one_line_error(proc: subprocess.CompletedProcess[str], *says: str) -> str:
    """Check the error shape (one line, exit code 2, no traceback); return the line."""
    lines = [line for line in proc.stderr.splitlines() if line.strip()]
    assert proc.returncode == 2, (proc.returncode, proc.stdout[-2000:], proc.stderr[-2000:])
    assert len(lines) == 1, proc.stderr
    assert "Traceback" not in proc.stdout + proc.stderr
    assert lines[0].startswith("langchain-om")
    for text in says:
        assert text in lines[0], lines[0]
    return lines[0]


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@pytest.fixture
def closing_server() -> Iterator[int]:
    """A port that accepts connections and closes them at once (a broken server)."""
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    sock.listen(16)
    sock.settimeout(0.2)
    stop = threading.Event()

    def serve() -> None:
        while not stop.is_set():
            try:
                conn, _ = sock.accept()
            except TimeoutError:
                continue
            conn.close()

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    try:
        yield int(sock.getsockname()[1])
    finally:
        stop.set()
        thread.join()
        sock.close()


# --- models ---------------------------------------------------------------------------------


def test_base_url_with_nothing_listening_fails_at_once(tmp_path: Path) -> None:
    url = f"http://127.0.0.1:{free_port()}/v1"
    for command in (["replay", str(DEMO)], ["chat"]):
        proc = cli(*command, "--db", "m.db", "--base-url", url, cwd=tmp_path)
        one_line_error(proc, f"Cannot connect to --base-url {url}", "Start the server")
        assert "Replaying" not in proc.stdout  # nothing ran on it
    assert not (tmp_path / "m.db").exists() or sqlite_tables(tmp_path / "m.db") == set()


def test_base_url_with_a_server_that_drops_connections_fails_at_once(
    tmp_path: Path, closing_server: int
) -> None:
    url = f"http://127.0.0.1:{closing_server}/v1"
    proc = cli("replay", str(DEMO), "--base-url", url, "--message-tokens", "200", cwd=tmp_path)
    one_line_error(proc, f"Cannot connect to --base-url {url}")


def test_base_url_that_is_not_http(tmp_path: Path) -> None:
    proc = cli("replay", str(DEMO), "--base-url", "127.0.0.1:8080", cwd=tmp_path)
    one_line_error(proc, "is not an http(s) URL", "http://127.0.0.1:8080/v1")


# --- the database ---------------------------------------------------------------------------


def sqlite_tables(path: Path) -> set[str]:
    with sqlite3.connect(path) as conn:
        return {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type='table'")}


@pytest.mark.parametrize("command", ["inspect", "replay", "chat"])
def test_a_db_that_is_not_sqlite(tmp_path: Path, command: str) -> None:
    notes = tmp_path / "notes.txt"
    notes.write_text("my notes, not a database\n", encoding="utf-8")
    argv = [command, "--db", str(notes)] + (
        [str(DEMO), "--scripted"] if command == "replay" else []
    )
    if command == "chat":
        argv.append("--scripted")
    one_line_error(cli(*argv, cwd=tmp_path), "is not a SQLite database", "pass --db")
    assert notes.read_text(encoding="utf-8") == "my notes, not a database\n"  # untouched


def test_a_db_that_is_a_folder(tmp_path: Path) -> None:
    (tmp_path / "folder").mkdir()
    one_line_error(cli("inspect", "--db", "folder", cwd=tmp_path), "is a folder")


def test_inspect_of_a_missing_or_foreign_database_creates_nothing(tmp_path: Path) -> None:
    one_line_error(cli("inspect", "--db", "none.db", cwd=tmp_path), "No memory database at none")
    assert not (tmp_path / "none.db").exists()
    other = tmp_path / "other.db"
    with sqlite3.connect(other) as conn:
        conn.execute("CREATE TABLE invoices (id INTEGER)")
    conn.close()
    one_line_error(cli("inspect", "--db", str(other), cwd=tmp_path), "holds no langchain-om memory")
    assert sqlite_tables(other) == {"invoices"}  # inspect wrote nothing into it


def test_inspect_names_the_threads_when_the_thread_is_not_there(tmp_path: Path) -> None:
    assert cli("replay", str(DEMO), "--thread", "maya", *SCRIPTED, cwd=tmp_path).returncode == 0
    one_line_error(cli("inspect", cwd=tmp_path), "No thread 'default'", "Threads: 'maya'")


@pytest.mark.parametrize("command", ["inspect", "replay", "chat"])
def test_an_empty_thread_id(tmp_path: Path, command: str) -> None:
    argv = [command, "--thread", ""] + ([str(DEMO)] if command == "replay" else [])
    one_line_error(cli(*argv, cwd=tmp_path), "the thread id must not be empty", "--help")


def test_a_postgres_url_with_no_server_fails_in_seconds(tmp_path: Path) -> None:
    url = f"postgresql://app:secret@127.0.0.1:{free_port()}/app"
    line = one_line_error(cli("inspect", "--db", url, cwd=tmp_path), "Cannot connect to PostgreSQL")
    assert "secret" not in line and "app:***@" in line  # the password is masked


# --- replay files ---------------------------------------------------------------------------


def test_a_line_without_content_is_refused_with_its_line_number(tmp_path: Path) -> None:
    path = write_jsonl(tmp_path / "t.jsonl", [{"role": "user", "content": "hi"}, {"role": "user"}])
    proc = cli("replay", str(path), "--scripted", cwd=tmp_path)
    one_line_error(proc, f"{path}:2", 'no "content"')
    assert not (tmp_path / "langchain-om.db").exists()  # refused before anything opened


def test_a_missing_replay_file(tmp_path: Path) -> None:
    one_line_error(cli("replay", "nope.jsonl", "--scripted", cwd=tmp_path), "nope.jsonl")


# --- checkpoints ----------------------------------------------------------------------------


def agent_database(path: Path, turns: int = 3) -> list[str]:
    """An agent thread ``maya`` written through ``from_sqlite``; its checkpoint ids."""
    with ObservationalMemory.from_sqlite(str(path), model=memory_model()) as memory:
        agent = build_agent(memory, FunctionChatModel(function=lambda m, i: "Noted."), tools=())
        config: Any = {"configurable": {"thread_id": "maya"}}
        for turn in range(turns):
            agent.invoke({"messages": [("user", f"fact {turn}: I live in Porto")]}, config)
        return [s.config["configurable"]["checkpoint_id"] for s in agent.get_state_history(config)]


def test_checkpoints_are_listed_and_a_wrong_one_points_at_the_list(tmp_path: Path) -> None:
    ids = agent_database(tmp_path / "agent.db")
    listed = cli("inspect", "--db", "agent.db", "--thread", "maya", "--checkpoints", cwd=tmp_path)
    assert listed.returncode == 0, listed.stderr
    lines = listed.stdout.splitlines()
    assert lines[0] == "Checkpoints of thread 'maya' in agent.db, newest first:"
    assert lines[1].strip().startswith(ids[0]) and lines[1].endswith("(latest)")
    assert all(any(line.strip().startswith(i) for line in lines) for i in ids)
    assert "6 messages" in lines[1] and "generation 0" in lines[1]

    older = cli(
        "inspect", "--db", "agent.db", "--thread", "maya", "--checkpoint", ids[3], cwd=tmp_path
    )
    assert older.returncode == 0, older.stderr
    assert older.stdout.startswith("Thread 'maya'")

    wrong = cli(
        "inspect", "--db", "agent.db", "--thread", "maya", "--checkpoint", "1f0-nope", cwd=tmp_path
    )
    one_line_error(wrong, "No checkpoint '1f0-nope' in thread 'maya'", "--checkpoints` lists them")


def test_a_checkpoint_of_a_store_thread_is_explained(tmp_path: Path) -> None:
    assert cli("replay", str(DEMO), *SCRIPTED, cwd=tmp_path).returncode == 0
    proc = cli("inspect", "--checkpoint", "1f0c", cwd=tmp_path)
    one_line_error(proc, "kept in the store", "no checkpoints", "leave out --checkpoint")
    listed = cli("inspect", "--checkpoints", cwd=tmp_path)
    assert listed.returncode == 0 and "it has none to list" in listed.stdout


# --- PostgreSQL -----------------------------------------------------------------------------


@pytest.mark.postgres
def test_replay_and_inspect_on_a_postgres_url(tmp_path: Path) -> None:
    require_postgres()
    psycopg = pytest.importorskip("psycopg")
    thread = f"cli-{uuid.uuid4().hex[:8]}"
    replayed = cli(
        "replay", str(DEMO), "--db", POSTGRES_URL, "--thread", thread, *SCRIPTED, cwd=tmp_path
    )
    assert replayed.returncode == 0, replayed.stderr
    shown = cli("inspect", "--db", POSTGRES_URL, "--thread", thread, "--json", cwd=tmp_path)
    assert shown.returncode == 0, shown.stderr
    assert f'"thread_id": "{thread}"' in shown.stdout
    assert '"archived_messages": 0' not in shown.stdout  # it observed into PostgreSQL's store
    # A schema with no memory in it: inspect says so, and creates nothing there.
    schema = f"cli_empty_{uuid.uuid4().hex[:8]}"
    with psycopg.connect(POSTGRES_URL, autocommit=True) as conn:
        conn.execute(f"CREATE SCHEMA {schema}")
    try:
        sep = "&" if "?" in POSTGRES_URL else "?"
        empty = f"{POSTGRES_URL}{sep}options=-csearch_path%3D{schema}"
        one_line_error(cli("inspect", "--db", empty, cwd=tmp_path), "holds no langchain-om memory")
        with psycopg.connect(POSTGRES_URL) as conn:
            tables = conn.execute(
                "SELECT count(*) FROM information_schema.tables WHERE table_schema = %s", (schema,)
            ).fetchone()
        assert tables == (0,)
    finally:
        with psycopg.connect(POSTGRES_URL, autocommit=True) as conn:
            conn.execute(f"DROP SCHEMA {schema} CASCADE")


# --- eval -----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("argv", "says"),
    [
        (["--data", "nope.json", "--scripted"], "nope.json: No such file or directory"),
        (["--data", "bad.json", "--scripted"], "bad.json: not valid JSON"),
        (["--data", "good.json", "--systems", "om,bogus", "--scripted"], "unknown system(s) bogus"),
        (["--data", "good.json"], "pass --model provider/name"),
    ],
)
def test_eval_errors(tmp_path: Path, argv: list[str], says: str) -> None:
    (tmp_path / "bad.json").write_text("{", encoding="utf-8")
    fixture = ROOT / "examples" / "data" / "eval" / "locomo_synthetic.json"
    (tmp_path / "good.json").write_text(fixture.read_text(encoding="utf-8"), encoding="utf-8")
    one_line_error(cli("eval", "--format", "locomo", *argv, cwd=tmp_path), says)


# --- the same errors in this process (what coverage sees) -----------------------------------


def test_the_errors_in_process(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    closing_server: int,
) -> None:
    from langchain_om.cli import main  # noqa: PLC0415 - the subprocess tests need no import

    monkeypatch.chdir(tmp_path)
    for var in ("OPENAI_API_KEY", "GOOGLE_API_KEY"):
        monkeypatch.delenv(var, raising=False)
    ids = agent_database(tmp_path / "agent.db")
    (tmp_path / "notes.txt").write_text("not a database", encoding="utf-8")
    (tmp_path / "folder").mkdir()
    with sqlite3.connect(tmp_path / "other.db") as conn:
        conn.execute("CREATE TABLE invoices (id INTEGER)")
    conn.close()
    (tmp_path / "empty.db").write_bytes(b"")
    nowhere = f"http://127.0.0.1:{free_port()}/v1"
    cases: list[tuple[list[str], str]] = [
        (["inspect", "--db", "notes.txt"], "is not a SQLite database"),
        (["replay", str(DEMO), "--db", "notes.txt", "--scripted"], "is not a SQLite database"),
        (["inspect", "--db", "folder"], "is a folder"),
        (["inspect", "--db", "none.db"], "No memory database at none.db"),
        (["inspect", "--db", "other.db"], "holds no langchain-om memory"),
        (["inspect", "--db", "empty.db"], "holds no langchain-om memory"),
        (["inspect", "--db", "agent.db", "--thread", "nobody"], "Threads: 'maya'"),
        (["inspect", "--db", "agent.db", "--thread", "maya", "--checkpoint", "x"], "--checkpoints"),
        (["replay", str(DEMO), "--base-url", nowhere], "Cannot connect to --base-url"),
        (["replay", str(DEMO), "--base-url", f"http://127.0.0.1:{closing_server}/v1"], "Cannot"),
        (["replay", str(DEMO), "--base-url", "http://127.0.0.1:99999/v1"], "invalid port"),
        (["inspect", "--db", f"postgresql://u:pw@127.0.0.1:{free_port()}/x"], "u:***@"),
    ]
    for argv, says in cases:
        assert main(argv) == 2, argv
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and says in err, (argv, err)

    assert main(["inspect", "--db", "agent.db", "--thread", "maya", "--checkpoints"]) == 0
    listed = capsys.readouterr().out
    assert all(i in listed for i in ids) and "(latest)" in listed
    assert main(["inspect", "--db", "agent.db", "--thread", "maya", "--checkpoint", ids[-1]]) == 0
    assert capsys.readouterr().out.startswith("Thread 'maya'")
    assert main(["replay", str(DEMO), "--db", "store.db", *SCRIPTED]) == 0
    capsys.readouterr()
    assert main(["inspect", "--db", "store.db", "--checkpoint", "x"]) == 2
    assert "no checkpoints: leave out --checkpoint" in capsys.readouterr().err
    assert main(["inspect", "--db", "store.db", "--checkpoints"]) == 0
    assert "it has none to list" in capsys.readouterr().out
