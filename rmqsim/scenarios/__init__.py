"""Scenarios: what-if steps read from YAML (parse), checked against the snapshot's names (names),
and applied to it as DataFrame transformations, one phase per step (apply); sweeps expand into one
single-step scenario per broker, machine room or client of the snapshot (sweeps)."""
