"""The store engine: files, configuration and readers over a store root."""
