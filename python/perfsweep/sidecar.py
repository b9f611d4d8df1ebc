"""Whether a hardware sweep's .xmf sidecar belongs to the .h5 beside it. Imports neither h5py nor
an XML parser, so that ParaView's Python (where both clash with VTK's libraries) can load this
file by its path (scripts/paraview_hw_sweep.py does).

The sidecar records the SHA-256 of the .h5's bytes (Information "h5_sha256"); a pair that was not
published together (a run killed between its two renames) differs (docs/robustness.md)."""
import hashlib
import os
import re


def check_sidecar(path):
    """The .xmf sidecar of a hardware sweep's .h5 (`path`, either file), checked to belong to it.
    Returns the .xmf's path; ValueError on a mismatch, saying how to repair it."""
    stem = os.path.splitext(path)[0]
    h5path, xmf = stem + '.h5', stem + '.xmf'
    with open(xmf, encoding='utf-8') as f:
        found = re.search(r'<Information Name="h5_sha256" Value="([0-9a-f]{64})"', f.read())
    if not found:
        raise ValueError(f'{xmf}: records no h5_sha256; it is not a sidecar of this perfsweep version')
    digest = hashlib.sha256()
    with open(h5path, 'rb') as f:
        for block in iter(lambda: f.read(1 << 20), b''):
            digest.update(block)
    if digest.hexdigest() != found.group(1):
        raise ValueError(f'{xmf} does not belong to {h5path} (the .h5 hashes to {digest.hexdigest()}, the sidecar '
                         f'records {found.group(1)}): their publication was interrupted; rerun the sweep with '
                         f'--resume to publish both again')
    return xmf
