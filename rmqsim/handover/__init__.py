"""Rebalance in time (docs/CONTRACT.md, section 2e): each client's clocks (clocks), when a change
reaches it and it applies the new assignment (notice), and what each queue handed over costs in
seconds unread or read twice and in messages (queues). Pure numpy: no Spark."""
