"""The plan layer of langchain-om: each operation as a generator that yields effects.

A plan never does I/O itself: it yields an effect (call a model, run store ops, call a hook,
wait for a background job) and receives the result. One pair of drivers runs every plan, sync
or async, so there is exactly one implementation of each operation. Plans use the pure
``langchain_om._core`` and never import the front doors (engine, middleware, graph, history,
tools, cli).

Modules:
    effects: the effect types and the one pair of drivers (``run_sync``/``run_async``).
    background: the background job runner (worker threads or tasks, or manual for tests).
    types: what a turn works with: ``TurnEnv``, ``TurnInput``, ``TurnOutcome``, jobs.
    cycles: the cycle frame (events, hooks, failure, status) every cycle shares.
    observation: the observation cycle (the Observer's judged reply, its retry, parts).
    reflection: the reflection cycle (the Reflector's compression ladder).
    buffer: background buffering and reflection, and activation of buffered work.
    turn: one step before a model call, in six stages.
    turn_rules: what a step consults (cycle due, early activation, arrivals, buffer take).
    spend: spend control: the budget of memory's own model calls, and the turn cadence.
    resource: resource scope: parallel batches (``Gather``) and compare-and-set commits.
    resource_extract: resource scope: extracted values per resource.
    resource_turn: one thread's step in resource scope.
    resource_buffer: resource scope's background buffer and the activation of its chunks.
    damping: backoff of failed observation cycles across turns (kept in the record).
    read_only: the step of a read_only memory (show the thread's memory, change nothing).
    transforms: the transform hooks as plan steps (before and after each model call).
    extract: schema extractors, one structured-output call each after a cycle.
    working_memory: the working memory: read from a record, the application's updates.
    standalone: a thread's record and window kept in the store (no graph).
    titles: pinned thread titles (``rename_thread``) and their place in the record.
    recall: the recall tool's modes (messages, threads, search) and its input model.
    recall_archive: the recall modes over observations (the archive, a line's receipt).
    recall_code: recall code mode: a program's recall calls run as recall plans.
    archive: archive mode's cycle (retire the oldest groups, update the catalog).
    storage: the store layout: every namespace and the ops on it.
    graph_state: how OM lives in graph state (record key, window split, state update).
"""
