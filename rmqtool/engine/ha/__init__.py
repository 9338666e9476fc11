"""The store's replication role: a master serving its commitlog to slaves (`master`), a slave
following a master (`slave`), and what a SYNC_MASTER's put waits for (`acks`). The frames
they exchange are the `structures.ha` codec."""
