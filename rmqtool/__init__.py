"""rmqtool: read, query, verify and write Apache RocketMQ 4.9.x message stores."""

__version__ = "0.1.0"
