"""The commitlog: records (message.py), segments and their size (geometry.py), the compiled walker
(kernels.py), the columnar scanner (scan.py) and the bulk encoders."""
