"""The snapshot: loading and layout checks (load), row checks that split each table into rows
simulated and rows rejected (checks, rejects, reconcile), and writing one without Spark (write,
synthetic)."""
