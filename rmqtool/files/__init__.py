"""Files under a store root: mapped files, segment lists, paths and names, the lock and abort
marker, lost/, whole-file checksums and scratch arrays."""
