"""Recall code mode: one program calls ``recall(...)`` as often as it needs, in memory's own
interpreter of a side-effect-free Python subset; the tool keeps recall's identity rules."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage
from langchain_core.runnables import RunnableConfig

from langchain_om import ObservationalMemory
from langchain_om._core.recall_code import CodeError, Limits, ProgramResult, run_program
from langchain_om.testing import FunctionChatModel, RecordedCall, memory_model
from langchain_om.tools import create_recall_code_tool
from tests.helpers import FIXED, build_agent


def _run(code: str, answer: Any = None, limits: Limits | None = None) -> ProgramResult:
    """Run ``code``; each recall call gets ``answer(arguments)`` (or echoes its arguments)."""
    program = run_program(code, limits or Limits())
    try:
        request = next(program)
        while True:
            reply = answer(request.arguments) if answer else {"args": request.arguments}
            request = program.send(reply)
    except StopIteration as done:
        result: ProgramResult = done.value
        return result


@pytest.mark.parametrize(
    ("code", "value"),
    [
        ("return 1 + 2 * 3", 7),
        ("x = [1, 2, 3]\nx.append(4)\nreturn x[-2:]", [3, 4]),
        ("d = {'a': 1}\nd['b'] = 2\nreturn sorted(d.items())", [("a", 1), ("b", 2)]),
        ("return [i * i for i in range(5) if i % 2]", [1, 9]),
        ("return {k: len(k) for k in ['ab', 'c']}", {"ab": 2, "c": 1}),
        ("n = 0\nwhile n < 10:\n    n += 3\nreturn n", 12),
        ("t = 0\nfor i in range(10):\n    if i == 5:\n        break\n    t += i\nreturn t", 10),
        ("a, b = 'x y'.split()\nreturn f'{b}-{a}!r {3.14159:.2f}'", "y-x!r 3.14"),
        ("return max(['aa', 'b', 'cccc'], key=lambda s: len(s))", "cccc"),
        ("return sorted([3, 1, 2], key=lambda v: -v)", [3, 2, 1]),
        ("return 'Yes' if 2 in (1, 2) and not None else 'no'", "Yes"),
        ("x = await recall(mode='threads')\nreturn x['args']['mode']", "threads"),
        ("return recall({'mode': 'search'}, query='q')['args']", {"mode": "search", "query": "q"}),
        ("return ' '.join(reversed(['a', 'b']))", "b a"),
        (
            "return list(zip([1, 2], 'ab')), list(enumerate('xy'))",
            ([(1, "a"), (2, "b")], [(0, "x"), (1, "y")]),
        ),
        ("x = 1", None),
    ],
)
def test_the_interpreter_runs_plain_python(code: str, value: Any) -> None:
    assert _run(code).value == value


def test_print_goes_to_the_logs_and_calls_are_counted() -> None:
    result = _run("for i in range(3):\n    print('call', i, recall(mode='threads')['args'])")
    assert result.calls == 3 and result.logs[0] == "call 0 {'mode': 'threads'}"


@pytest.mark.parametrize(
    ("code", "message"),
    [
        ("import os", "Import is not available"),
        ("from os import path", "ImportFrom is not available"),
        ("def f():\n    return 1", "FunctionDef is not available"),
        ("class A:\n    pass", "ClassDef is not available"),
        ("return ().__class__", "attributes can only be called"),
        ("return [].__class__.__mro__", "attributes can only be called"),
        ("return 'x'.__len__()", "names starting with '_'"),
        ("__builtins__", "names starting with '_'"),
        ("return '{0.__class__}'.format(1)", "str.format() is not available"),
        ("return open('/etc/passwd')", "name 'open' is not defined"),
        ("return eval('1')", "name 'eval' is not defined"),
        ("return getattr(1, 'real')", "name 'getattr' is not defined"),
        ("with x:\n    pass", "With is not available"),
        ("try:\n    pass\nexcept Exception:\n    pass", "Try is not available"),
        ("x = []\nwhile True:\n    x.append(1)", "more than"),
        ("s = 'a' * 100000\nreturn ''.join([s] * 100000)", "grew past"),
        ("s = 'a' * 100000\nreturn str([s] * 100000)", "grew past"),
        ("s = 'a' * 100000\nreturn s.replace('a', s)", "grew past"),
        ("x = [1]\nfor i in range(40):\n    x.extend(x)", "grew past"),
        ("return 2 ** 1000", "exponent of at most 64"),
        ("return sum([[1]] * 3, [])", "adds numbers only"),
        ("return recall", "not plain data"),
        ("return len(1)", "len()"),
        ("return [1][5]", "no item 5"),
        ("return 1 +", "syntax error"),
        ("break", "outside a loop"),
    ],
)
def test_the_interpreter_refuses_what_it_does_not_allow(code: str, message: str) -> None:
    with pytest.raises(CodeError, match=message.replace("(", r"\(").replace(")", r"\)")) as caught:
        _run(code)
    assert caught.value.line is not None or "syntax" not in message


def test_limits_stop_a_program() -> None:
    with pytest.raises(CodeError, match="more than 2 recall calls"):
        _run("for i in range(5):\n    recall(mode='threads')", limits=Limits(max_calls=2))
    with pytest.raises(CodeError, match="more than 1000 steps"):
        _run("n = 0\nfor i in range(5000):\n    n += 1", limits=Limits(max_steps=1_000))
    with pytest.raises(CodeError, match="ran out of time"):
        _run("n = 0\nfor i in range(5000):\n    n += 1", limits=Limits(expired=lambda: True))


# -- the tool ------------------------------------------------------------------------------------


def _memory(**retrieval: Any) -> ObservationalMemory:
    memory = ObservationalMemory(
        model=memory_model(),
        observation={"message_tokens": 300, "buffer_tokens": False},
        retrieval={"code_mode": True, **retrieval},
        clock=lambda: FIXED,
        sleep=lambda s: None,
    )
    for user in ("alice", "bob"):
        for i in range(8):
            memory.add_messages(
                f"{user}-t",
                [
                    HumanMessage(f"{user} fact {i}: my code is {user[0]}{i}{i} " + "w " * 40),
                    AIMessage(f"noted {user} {i}"),
                ],
                resource_id=user,
            )
    return memory


PROGRAM = """
codes = []
page = recall(mode="messages", anchor="start", limit=100, detail="high")
for message in page["messages"]:
    for part in message["parts"]:
        if "my code is" in part["text"]:
            codes.append(part["text"].split("my code is ")[1].split()[0])
return {"codes": codes, "messages": page["total_messages"]}
"""


def test_a_program_reads_many_messages_and_returns_only_what_it_computed() -> None:
    memory = _memory()
    tool = memory.tools[0]
    assert tool.name == "execute_memory_recall" and "recall(" in tool.description
    cfg: RunnableConfig = {"configurable": {"thread_id": "alice-t", "resource_id": "alice"}}
    result = json.loads(tool.invoke({"code": PROGRAM}, cfg))
    assert result == {
        "success": True,
        "result": {"codes": [f"a{i}{i}" for i in range(8)], "messages": 16},
        "calls": 1,
    }
    assert json.loads(asyncio.run(tool.ainvoke({"code": PROGRAM}, cfg))) == result
    context = memory.render(memory.status(thread_id="alice-t").record).text
    assert "execute_memory_recall" in context


def test_a_program_keeps_recalls_identity_rules() -> None:
    memory = _memory(scope="thread")
    tool = create_recall_code_tool(memory)
    cfg: RunnableConfig = {"configurable": {"thread_id": "alice-t", "resource_id": "alice"}}
    spoof = tool.invoke(
        {"code": "return recall(mode='messages', thread_id='bob-t', anchor='start')"}, cfg
    )
    assert "bob" not in json.loads(spoof)["result"].get("messages", "")
    assert "not available" in json.loads(spoof)["result"]["error"]
    state = tool.invoke({"code": "return recall(mode='messages', state={'om_record': {}})"}, cfg)
    assert "state" in json.loads(state)["result"]["error"]
    bad = json.loads(tool.invoke({"code": "return recall(mode='nope')"}, cfg))
    assert "Invalid recall arguments" in bad["result"]["error"]
    broken = json.loads(tool.invoke({"code": "import os"}, cfg))
    assert broken == {
        "success": False,
        "error": {"message": "Import is not available in a recall program", "line": 1},
    }


def test_a_large_result_is_cut_to_the_budget() -> None:
    memory = _memory()
    tool = create_recall_code_tool(memory, token_budget=200)
    cfg: RunnableConfig = {"configurable": {"thread_id": "alice-t", "resource_id": "alice"}}
    result = json.loads(tool.invoke({"code": "return ['word ' * 50] * 20"}, cfg))
    assert result["success"] and result["result_truncated"]
    assert memory.counter.count_text(json.dumps(result)) <= 260


def test_an_agent_runs_a_program_through_its_tool() -> None:
    memory = _memory()

    def reply(messages: list[BaseMessage], info: RecordedCall) -> AIMessage:
        last = messages[-1]
        if isinstance(last, HumanMessage):
            call = {"name": "execute_memory_recall", "args": {"code": PROGRAM}, "id": "c1"}
            return AIMessage("", tool_calls=[call])
        return AIMessage("done")

    model = FunctionChatModel(function=reply)
    agent = build_agent(memory, model, tools=[])
    cfg: RunnableConfig = {"configurable": {"thread_id": "agent-t", "resource_id": "alice"}}
    for i in range(6):
        agent.invoke(
            {"messages": [HumanMessage(f"alice agent {i}: my code is q{i} " + "w " * 40)]}, cfg
        )
    answers = [m for m in agent.get_state(cfg).values["messages"] if isinstance(m, ToolMessage)]
    assert model.calls[-1].tool_names == ["execute_memory_recall"]
    last = json.loads(str(answers[-1].content))
    assert last["success"] and "q5" in last["result"]["codes"]


@pytest.mark.parametrize(
    ("code", "value"),
    [
        ("x: int = 4\nreturn x", 4),
        ("n = 0\nwhile True:\n    n += 1\n    if n > 3:\n        break\nreturn n", 4),
        (
            "n = 0\nt = 0\nwhile n < 5:\n    n += 1\n    if n % 2:\n        continue\n"
            "    t += n\nreturn t",
            6,
        ),
        (
            "t = 0\nfor i in range(6):\n    if i % 2:\n        continue\n    t += i\n"
            "else:\n    t += 100\nreturn t",
            106,
        ),
        ("return (0 or '') or 'last', 1 and 2 and 0", ("last", 0)),
        ("return {i % 3 for i in range(9)}", {0, 1, 2}),
        (
            "return [1, 2] != [1], 2 <= 2, 3 > 1, 3 >= 4, 1 not in [2], None is not 1",
            (True, True, True, False, True, True),
        ),
        ("d = {'a': [1]}\nd['a'] += [2]\nreturn d", {"a": [1, 2]}),
        ("return min([3, 1], key=lambda v: v), -(2), +3", (1, -2, 3)),
        ("return 'abc'[::-1], (1, 2, 3)[1:]", ("cba", (2, 3))),
        ("return 7 // 2, 7 % 2, 2 ** 3, 7 / 2, 1 - 3", (3, 1, 8, 3.5, -2)),
    ],
)
def test_the_interpreter_covers_its_statements(code: str, value: Any) -> None:
    assert _run(code).value == value


@pytest.mark.parametrize(
    ("code", "message"),
    [
        ("return 2 ** 60 * 2 ** 60 * 2 ** 60 * 2 ** 60 * 2 ** 60", "number grew too large"),
        ("return '1'.zfill(10 ** 7)", "grew past"),
        ("for x in 5:\n    pass", "a for loop goes over"),
        ("a, b = [1, 2, 3]", "cannot unpack"),
        ("s = 'ab'\ns[0] = 'x'", "only list items and dict keys"),
        ("x.y = 1", r"only names, x\[key\]"),
        ("return {**{}}", "spread in a dict"),
        ("return lambda v: v", "Lambda expressions are not available"),
        ("return ['a'] * 300000", "grew past"),
        ("return 'a' - 1", "unsupported operand"),
        ("return 1 / 0", "division by zero"),
        ("return 'x %s' % 1", "Mod operator is not available"),
        ("return 1 << 2", "LShift operator is not available"),
        ("return 5[0]", "can be indexed"),
        ("return {'a': 1}[0:1]", "cannot be sliced"),
        ("return [i for i in 7]", "comprehension goes over"),
        ("return len(*[1])", r"\*args and \*\*kwargs"),
        ("return [1].index(5)", "index()"),
        ("x = 1\nreturn x()", r"only recall\(\), print\(\)"),
        ("return len([1], key=lambda v: v)", "key= takes a lambda"),
        ("return sorted([1], key=lambda a, b: a)", "one argument"),
        ("return max([], key=lambda v: v)", "empty sequence"),
        ("return sorted([1, 'a'], key=lambda v: v)", "sorted()"),
        ("return recall('threads')", "keyword arguments"),
        ("(a, b) += 1", "augmented assignment"),
        ("x = 3\nreturn f'{x:{x}}'", "cannot hold an expression"),
        ("return f'{1:" + "x" * 30 + "}'", "format specification is not available"),
        ("return f'{1:zz}'", "Unknown format code"),
        ("return ~1", "Invert operator is not available"),
        ("return 1 < 'a'", "not supported"),
        ("return 'a' @ 'b'", "MatMult"),
        ("return [" * 400 + "]" * 400, "nested too deeply|syntax error|too many"),
    ],
)
def test_the_interpreter_names_what_it_refuses(code: str, message: str) -> None:
    with pytest.raises(CodeError, match=message):
        _run(code)


def test_time_runs_out_before_a_recall_call() -> None:
    ticks = iter([False, True])
    with pytest.raises(CodeError, match="ran out of time"):
        _run(
            "recall(mode='threads')\nrecall(mode='threads')",
            limits=Limits(expired=lambda: next(ticks)),
        )
