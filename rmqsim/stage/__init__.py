"""The allocation stage, in pipeline order: route rows built in the driver (routes), handed to
Python tasks as Arrow batches (tasks, batches), the code that computes each client's queues chosen
per row and strategy (dispatch, allocated, sticky_memory, kept_answers, stale_views), and what
comes out of a batch (outputs): each client's queues and load and each group's metrics
(metric_rows, skew, alternatives), and movement between phases (movement). Sinks (rmqsim.sink)
write what comes out."""
