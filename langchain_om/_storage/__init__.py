"""Where memory's state lives: the storage openers, the checkpointer view and store helpers.

Modules:
    backends: the storage from_sqlite / afrom_sqlite / from_postgres / afrom_postgres open
    checkpoint_view: agent and graph threads read through the checkpointer
    jsonl: JSON-lines files whose every line is an object (replay and eval files)
    run_store: the store and checkpointer a graph run brings (runtime.store)
    store_index: embeddings= as a store vector index; the check for one
    threaded: async methods for sync-only checkpointers (worker threads)
"""
