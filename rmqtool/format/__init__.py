"""Pure codecs for every RocketMQ store file: bytes in, records out, no I/O and no state.

This package is the only place a byte layout lives.
"""
