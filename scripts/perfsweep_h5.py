#!/usr/bin/env python3
"""The perfsweep package's HDF5 reader (python/perfsweep/h5.py) under its script name, for a
checkout without `pip install .`: `import perfsweep_h5` with scripts/ on sys.path gives that
module itself, and running this file runs its command line (to-npy, summary)."""
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), os.pardir, 'python'))
import perfsweep.h5 as _reader  # noqa: E402

if __name__ == '__main__':
    sys.exit(_reader.main())
sys.modules[__name__] = _reader
