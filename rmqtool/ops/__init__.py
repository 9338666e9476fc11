"""What the commands do, over the structures of a store: decode, export, verify, recover, salvage."""
