"""The parts of configuration behind :mod:`langchain_om.config` and the constructors.

Modules:
    parts: the option groups (observation, reflection, retrieval, model settings, hooks), their base
    rules: value rules and error shaping behind the configs
    shortcuts: the constructors' typed keyword arguments (model, message_tokens, ...)
    spec_check: construction-time checks of the engine's arguments
    unbuilt: option values the engine refuses until they work (never accepted and ignored)
"""
