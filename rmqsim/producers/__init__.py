"""The producer side: which queue each message is sent to. Pure numpy/pyarrow, no Spark.

- publish_list: the list (messageQueueList) Java and Go producers build from a topic route, CSR
  over many topics; order_conf parses an orderTopicConf.
- shares: the steady-state share of sends per list entry (round robin, latency avoidance before
  and after 5.1.4, hash); hashing: the hash selectors' hashes and indices.
- latency: the latency -> notAvailableDuration tables; versions: which table and algorithm a
  producer's version runs.
- Step-by-step simulators of the real code, which the conformance tests replay: topic_publish_info
  (TopicPublishInfo, ThreadLocalIndex), fault_items (LatencyFaultToleranceImpl), selection_java
  (5.1.4+), selection_java4x (4.9.8, 4.9.7), selection_go.

The rules are those of tests/data/conformance/README.md, "The producer side" and "Before 5.1.4".
"""
