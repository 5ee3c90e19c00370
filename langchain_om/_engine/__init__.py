"""The engine's parts behind the front doors: model calls, runs, and the graph door's wiring.

Modules:
    actor: what memory needs to know about the agent's own model
    call_modes: output mode, prompt variant and sampling of one Observer/Reflector call
    chat_model: AnsweringChatModel, LangChain's generate hooks written once for our models
    control: engine-side rules of the user-control options (read_only)
    default_model: the model memory runs on when none is named (library and CLI)
    graph_commands: Command(goto=<model node>) routed through memory's gate
    graph_edges: the user's edges into a node rerouted through one of memory's nodes
    graph_overflow: the graph's model node retried once after a context overflow
    io: engine arguments and results (StepOptions, EndTurnOptions, ThreadSnapshot) and runs
    logs: log lines for OM events (summaries at INFO, failures at WARNING, no message text)
    providers: model strings, provider names, install hints, API-key variables, settings
    role_models: the Observer's and Reflector's model calls with settings and retries
    standalone: the engine's standalone calls (thread lock, observe, status, reads)
"""
