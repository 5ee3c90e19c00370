"""The command line's parts behind :mod:`langchain_om.cli`.

Modules:
    backend: the models and the memory a session runs on (fail-fast --base-url)
    console: notices, the progress bar, the spinner, line editing
    inspection: langchain-om inspect: a thread and its checkpoints, as text or JSON
    receipts: inspect --receipts: each observation line with its source messages
    replay: replay files read as LangChain messages (stable ids)
    storage: --db, a SQLite file or a PostgreSQL URL, checked before it is opened
"""
