"""Throughput measurements behind `rmqtool bench`."""
