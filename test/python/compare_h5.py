#!/usr/bin/python3
"""Exits 0 if every dataset of the given perfsweep HDF5 files is bit-identical to the first
file's, and so are all attributes except those that describe the run itself.

    compare_h5.py FIRST OTHER...            the same objects, datasets and attributes
    compare_h5.py --subset FIRST OTHER...   every object of FIRST is in each OTHER with identical
                                            data; OTHER may add objects and attributes, and the
                                            attributes of FIRST that differ are listed (an older
                                            file against a newer, more self-describing one)
 Object references
(the dimension-scale attributes DIMENSION_LIST, REFERENCE_LIST) compare by the names of the
objects they point to, not by their addresses in the file."""
import sys

import h5py
import numpy as np

RUN_ATTRS = {'created', 'command_line', 'n_ranks', 'host', 'git_commit'}


def resolve(f, v):
    """An attribute value with every object reference replaced by its target's name."""
    if isinstance(v, h5py.Reference):
        return ('ref', f[v].name if v else None)
    if isinstance(v, (np.ndarray, list, tuple, np.void)):
        if isinstance(v, np.ndarray) and v.dtype.kind not in 'OV':
            return (v.dtype.str, v.shape, v.tobytes())
        return tuple(resolve(f, x) for x in (v.tolist() if isinstance(v, np.ndarray) else v))
    return v


def items(path):
    out = {}
    with h5py.File(path, 'r') as f:
        def visit(name, obj):
            attrs = {k: resolve(f, v) for k, v in obj.attrs.items() if not (obj.name == '/' and k in RUN_ATTRS)}
            data = obj[()] if isinstance(obj, h5py.Dataset) else None
            if isinstance(data, np.ndarray):
                data = (data.dtype.str, data.shape, data.tobytes())
            out[name] = (type(obj).__name__, attrs, data)
        visit('/', f)
        f.visititems(visit)
    return out


def main(paths):
    subset = paths[:1] == ['--subset']
    if subset:
        paths = paths[1:]
    ref = items(paths[0])
    ok = True
    for p in paths[1:]:
        other = items(p)
        if subset:
            missing = sorted(set(ref) - set(other))
            if missing:
                print(f'{p}: lacks {missing[:10]}')
                ok = False
                continue
            changed = set()
            for name, (kind, attrs, data) in ref.items():
                okind, oattrs, odata = other[name]
                if kind != okind or data != odata:
                    print(f'{p}: {name} differs from {paths[0]}')
                    ok = False
                changed |= {k for k, v in attrs.items() if oattrs.get(k, object()) != v}
            print(f'{p}: {len(set(other) - set(ref))} objects added; attributes changed: {sorted(changed) or "none"}')
            continue
        if set(other) != set(ref):
            print(f'{p}: objects differ: {sorted(set(other) ^ set(ref))[:10]}')
            ok = False
            continue
        for name in ref:
            if ref[name] != other[name]:
                print(f'{p}: {name} differs from {paths[0]}')
                ok = False
    n_datasets = sum(1 for v in ref.values() if v[0] == 'Dataset')
    print(f'compared {len(paths)} files: {len(ref)} objects, {n_datasets} datasets each: '
          f'{"identical" if ok else "DIFFERENT"}')
    return 0 if ok else 1


if __name__ == '__main__':
    sys.exit(main(sys.argv[1:]))
