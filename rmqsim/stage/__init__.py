"""The allocation stage, in pipeline order: route rows built by Spark (routes), handed to Python
as Arrow batches (batches, spark), the code that computes each client's queues chosen per row and
strategy (dispatch, sticky_memory, stale_views), and the rows that come back: client queues with
their metrics (client_queues, skew) and movement between phases (movement)."""
