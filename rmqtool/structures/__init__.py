"""The on-disk structures of a store, one folder each.

A structure's folder is the only place its layout, its files' objects, its checks and its repairs
live; it exports one `Structure` object (`structures/<name>/structure.py`), and
`structures/registry.py` lists them. This package runs nothing: importing a folder's module does
not load the registry, so a folder may import its own package without a circle.
"""
