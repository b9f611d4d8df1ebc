"""The journal's byte layout (lib/parallel/journal.cpp), for the tests that damage journals on
purpose: a header (magic, fingerprint length, fingerprint, its hash), then records of magic
(4 bytes), fingerprint hash, payload length (8 bytes each), payload and an FNV-1a checksum of the
fingerprint hash and payload (8 bytes)."""


def fnv1a(data):
    h = 14695981039346656037
    for b in data:
        h = ((h ^ b) * 1099511628211) & 0xFFFFFFFFFFFFFFFF
    return h


def record_spans(data):
    """(start, payload start, payload length) of each whole record after the header."""
    pos = 8 + 8 + int.from_bytes(data[8:16], 'little') + 8
    spans = []
    while pos + 20 <= len(data):
        length = int.from_bytes(data[pos + 12:pos + 20], 'little')
        if pos + 28 + length > len(data):
            break
        spans.append((pos, pos + 20, length))
        pos += 28 + length
    return spans


def recompute_checksum(data, start, length):
    """Writes into bytearray `data` the checksum of the record at `start` whose payload is `length`
    bytes, so that a changed payload passes the checksum."""
    payload = start + 20
    checksum = fnv1a(bytes(data[start + 4:start + 12]) + bytes(data[payload:payload + length]))
    data[payload + length:payload + length + 8] = checksum.to_bytes(8, 'little')
