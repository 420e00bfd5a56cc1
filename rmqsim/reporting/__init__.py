"""What a run shows a person: terminal tables (text), PNG charts (charts), one HTML page (html),
and the run's tables read without Spark for them and for notebooks (results)."""
