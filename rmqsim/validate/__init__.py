"""`rmqsim validate`: the simulated assignment beside the observed one (run), and the causes of
a mismatch (diagnose)."""
