"""RocketMQ's admin tool, mqadmin: its saved outputs read back (one module per command) and
imported as a snapshot (importer). Pure Python: no Spark here."""
