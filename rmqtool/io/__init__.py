"""The formats of the outside world: Arrow rows, JSONL, Parquet."""
