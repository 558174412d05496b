"""The workload: client packets (when they are sent and arrive, what each costs to process),
the server socket that queues them, and the per-frame view a strategy plans from."""
