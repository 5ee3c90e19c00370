"""Pure core of langchain-om: plain data in, plain data out, no I/O and no model calls.

Modules:
    types: the JSON-native OM record and its parts.
    tokens: token counting (tiktoken offline or heuristic) with a per-message cache.
    dates: date formatting and relative-time helpers.
    observer: what the Observer is shown and how its output is parsed.
    reflector: what the Reflector is shown, compression levels, and its output checks.
    truncation: budgeted view of previous observations for the Observer.
    degenerate: detection of repetition loops in model output.
    render: the memory context the agent's model sees.
    thresholds: threshold and activation arithmetic.
"""
