"""The allocation stage, in pipeline order: route rows built in the driver (routes), handed to
Python tasks as Arrow batches (batches, spark), the code that computes each client's queues chosen
per row and strategy (dispatch, sticky_memory, stale_views), and what comes out: client queues
with their metrics (client_queues, skew), written by the tasks themselves on a local output
(task_tables), and movement between phases (movement)."""
