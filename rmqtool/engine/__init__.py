"""The store engine: a store opened once (kind and geometry), the writer MessageStore, the reader
StoreReader, the broker.conf settings, the refusal rules and bulk-load staging."""
