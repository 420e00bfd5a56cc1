"""rmqsim: simulate RocketMQ consumer-group queue allocation over a fleet."""

__version__ = "0.1.0"
